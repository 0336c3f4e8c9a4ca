// Serves the Worker with `wrangler dev` (miniflare, local D1, local Durable
// Objects) on a free loopback port for end-to-end tests and the benchmark.
// Each server gets its own persistence directory and its own env file, so
// runs never share state and a developer's .dev.vars never leaks in.
import { spawn, type ChildProcess } from "node:child_process";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const PROJECT_ROOT = resolve(import.meta.dirname, "../..");
/**
 * Wrangler's bin script refuses Node < 22, but its CLI runs on Node 20 (checked
 * here: dev, D1 migrations, Durable Objects, SSE), so it is started directly.
 */
export const WRANGLER_CLI = join(PROJECT_ROOT, "node_modules/wrangler/wrangler-dist/cli.js");
/** wrangler dev normally starts in 2-5 s here; a cold first bundle can take longer. */
const STARTUP_TIMEOUT_MS = 60_000;

export interface WorkerServer {
  url: string;
  token: string;
  /** The wrangler process; its workerd child serves the requests. */
  process: ChildProcess;
  /** Output so far, for failure messages. */
  logs(): string;
  /** Authorised fetch against the server. */
  api(path: string, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

function envFileLine(name: string, value: string): string {
  // JSON values go in single quotes, as wrangler's env-file parser expects.
  return value.startsWith("{") || value.startsWith("[") ? `${name}='${value}'` : `${name}=${value}`;
}

export async function startWorkerServer(vars: Record<string, string> = {}): Promise<WorkerServer> {
  const dir = await mkdtemp(join(tmpdir(), "aee-e2e-"));
  const persistTo = join(dir, "state");
  const envFile = join(dir, "test.env");
  const token = `e2e-${Math.random().toString(36).slice(2)}`;
  const allVars = { API_TOKEN: token, ...vars };
  await writeFile(envFile, Object.entries(allVars).map(([k, v]) => envFileLine(k, v)).join("\n") + "\n");
  const childEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" };

  await run(process.execPath, [WRANGLER_CLI, "d1", "migrations", "apply", "DB", "--local", "--persist-to", persistTo], {
    cwd: PROJECT_ROOT,
    env: childEnv,
  });

  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      WRANGLER_CLI, "dev",
      "--ip", "127.0.0.1",
      "--port", String(port),
      "--inspector-port", String(await freePort()),
      "--persist-to", persistTo,
      "--env-file", envFile,
      "--show-interactive-dev-session=false",
      "--log-level", "warn",
    ],
    { cwd: PROJECT_ROOT, env: childEnv, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let output = "";
  child.stdout?.on("data", (d) => (output += String(d)));
  child.stderr?.on("data", (d) => (output += String(d)));

  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > STARTUP_TIMEOUT_MS) {
      killGroup(child);
      throw new Error(`wrangler dev did not answer /healthz within ${STARTUP_TIMEOUT_MS} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    url,
    token,
    process: child,
    logs: () => output,
    api: (path, init = {}) => {
      const headers = new Headers(init.headers);
      if (!headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
      if (init.body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json");
      return fetch(`${url}${path}`, { ...init, headers });
    },
    stop: async () => {
      killGroup(child);
      await new Promise<void>((r) => (child.exitCode !== null ? r() : child.once("exit", () => r())));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function killGroup(child: ChildProcess): void {
  // wrangler starts workerd as its child; signal the whole process group.
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    child.kill("SIGTERM");
  }
}
