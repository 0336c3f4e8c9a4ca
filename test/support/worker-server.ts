// Serves a Worker with `wrangler dev` (miniflare, local D1, local Durable
// Objects) on a free loopback port, for end-to-end tests and the benchmark.
// Each server gets its own persistence directory and its own env file, so
// runs never share state and a developer's .dev.vars never leaks in.
//
// Options, for callers that need more than the project's own Worker:
//  - `configPath`: another wrangler config (the benchmark's Worker);
//  - `bundle`: a snapshot made once by buildWorkerBundle() and served with
//    `--no-bundle`. `wrangler dev` otherwise watches its sources and reloads
//    when a file is saved; a reload mid-measurement orphans every open stream,
//    and a later server could run other code than an earlier one.
// Every server is started in its own process group (wrangler, workerd,
// esbuild) and stopped as a group, with SIGKILL after a grace period, and
// killed if Node exits without stopping it.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import { createHash, randomBytes } from "node:crypto";
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
/** wrangler dev normally starts in 2-10 s here; a cold first bundle can take longer. */
const STARTUP_TIMEOUT_MS = 60_000;
const STARTUP_POLL_MS = 100;
/** One /healthz probe while waiting for the server. */
const PROBE_TIMEOUT_MS = 1_000;
/** After SIGTERM, how long wrangler and workerd get before SIGKILL. */
const STOP_GRACE_MS = 5_000;

/**
 * Each server reads its own env file only (`--env-file`: wrangler then skips
 * `.dev.vars`), never the test process's environment, whatever the shell says.
 */
const CHILD_ENV = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_INCLUDE_PROCESS_ENV: "false",
  WRANGLER_HIDE_BANNER: "true",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  CI: "true",
  NO_COLOR: "1",
};

export interface WorkerServer {
  url: string;
  token: string;
  /** The wrangler process; its workerd children serve the requests. */
  process: ChildProcess;
  /** Output so far, for failure messages. */
  logs(): string;
  /** wrangler dev's --inspector-port: the Worker's V8 inspector (DevTools protocol), for CPU profiles (bench/profile-append.ts). */
  inspectorPort: number;
  /** The server's --persist-to directory (local D1 and Durable Object storage); removed by stop(). */
  stateDir: string;
  /** Authorised fetch against the server. */
  api(path: string, init?: RequestInit): Promise<Response>;
  /** Stops the whole process group (bounded) and removes the server's state. Idempotent. */
  stop(): Promise<void>;
  /**
   * A crash: SIGKILLs the whole process group (wrangler and workerd, mid-request or not), then
   * serves the same state, settings and token again on a new port. Use the server it answers;
   * this one is gone.
   */
  crashAndRestart(): Promise<WorkerServer>;
}

/** A Worker bundled once (`wrangler deploy --dry-run --outdir`), to serve with `--no-bundle`. */
export interface WorkerBundle {
  /** The wrangler config it was built from, as given to buildWorkerBundle. */
  configPath: string;
  /** The bundled entry module, an absolute path. */
  entry: string;
  dispose(): Promise<void>;
}

export interface WorkerServerOptions {
  /** wrangler config, relative to the project root or absolute; default the project's wrangler.toml. */
  configPath?: string;
  /** Serve this snapshot instead of bundling (and watching) the sources; its config is used. */
  bundle?: WorkerBundle;
  /** wrangler dev's --log-level; default "warn". "log" keeps the Worker's console.log lines (its libraries' too) in logs(). */
  logLevel?: "warn" | "log";
  /** The loopback port to serve on (from freePort()), when a var must name the server's own origin (PUBLIC_URL); default a free one. */
  port?: number;
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

/** Runs a wrangler subcommand to completion; its output goes into the error when it fails. */
async function wrangler(args: string[], what: string): Promise<void> {
  try {
    await run(process.execPath, [WRANGLER_CLI, ...args], { cwd: PROJECT_ROOT, env: CHILD_ENV });
  } catch (err) {
    const output = err as { stdout?: string; stderr?: string };
    throw new Error(`${what} failed:\n${output.stdout ?? ""}${output.stderr ?? ""}`, { cause: err });
  }
}

/** Bundles the Worker of `configPath` as the working tree has it now. */
export async function buildWorkerBundle(configPath = "wrangler.toml"): Promise<WorkerBundle> {
  const dir = await mkdtemp(join(tmpdir(), "aee-bundle-"));
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    await wrangler(["deploy", "--dry-run", "--outdir", dir, "--config", configPath], `bundling ${configPath}`);
    // wrangler names the bundle after the entry module (src/index.ts → index.js) beside a README and a source map.
    const modules = (await readdir(dir)).filter((f) => f.endsWith(".js"));
    if (modules.length !== 1) throw new Error(`expected one .js module in the bundle of ${configPath}, found ${JSON.stringify(modules)}`);
    return { configPath, entry: join(dir, modules[0]!), dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/**
 * Local D1 state with every migration applied, made once per migrations, config
 * and wrangler version and copied into each server's --persist-to. Applying the
 * 36 migrations is a wrangler process of its own (about 20 s on a busy two-core
 * machine), which every end-to-end file used to pay once per server; a copy of
 * the finished state is the same database in milliseconds. The cache lives
 * under node_modules/.cache (a fresh clone makes it again) and is written
 * under a temporary name and renamed, so two test processes never see half of
 * one.
 */
const MIGRATED_CACHE = join(PROJECT_ROOT, "node_modules/.cache/aee-migrated-d1");
const migrated = new Map<string, Promise<string>>();

async function migrationsKey(configPath: string | undefined): Promise<string> {
  const hash = createHash("sha256");
  const migrationsDir = join(PROJECT_ROOT, "migrations");
  for (const name of (await readdir(migrationsDir)).sort())
    hash
      .update(name)
      .update("\0")
      .update(await readFile(join(migrationsDir, name)));
  hash.update(await readFile(resolve(PROJECT_ROOT, configPath ?? "wrangler.toml")));
  hash.update(JSON.parse(await readFile(join(PROJECT_ROOT, "node_modules/wrangler/package.json"), "utf8")).version);
  return hash.digest("hex").slice(0, 24);
}

/** The migrated state for this config: made on first use (in this process or another), then reused. */
function migratedState(configPath: string | undefined): Promise<string> {
  const key = configPath ?? "";
  let made = migrated.get(key);
  if (!made) {
    made = (async () => {
      const dir = join(MIGRATED_CACHE, await migrationsKey(configPath));
      if ((await readdir(dir).catch(() => [])).length > 0) return dir;
      await mkdir(MIGRATED_CACHE, { recursive: true });
      const scratch = await mkdtemp(join(MIGRATED_CACHE, "making-"));
      try {
        const configArgs = configPath === undefined ? [] : ["--config", configPath];
        await wrangler(["d1", "migrations", "apply", "DB", "--local", ...configArgs, "--persist-to", scratch], "applying D1 migrations");
        await rename(scratch, dir).catch((err: NodeJS.ErrnoException) => {
          // Another process finished first: its copy is the same database.
          if (err.code !== "ENOTEMPTY" && err.code !== "EEXIST") throw err;
        });
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
      return dir;
    })();
    made.catch(() => migrated.delete(key));
    migrated.set(key, made);
  }
  return made;
}

/** Servers not stopped yet, with their temp dirs: killed and removed if Node exits first. */
const live = new Map<ChildProcess, string>();
process.once("exit", () => {
  for (const [child, dir] of live) {
    signalGroup(child, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

export async function startWorkerServer(
  vars: Record<string, string> = {},
  options: WorkerServerOptions = {},
  /** A crashed server's directory and token, served again as they are (crashAndRestart). */
  resumed?: { dir: string; token: string },
): Promise<WorkerServer> {
  const configPath = options.bundle?.configPath ?? options.configPath;
  const configArgs = configPath === undefined ? [] : ["--config", configPath];
  const dir = resumed?.dir ?? (await mkdtemp(join(tmpdir(), "aee-e2e-")));
  const persistTo = join(dir, "state");
  const envFile = join(dir, "test.env");
  const token = resumed?.token ?? `e2e-${randomBytes(24).toString("base64url")}`;
  const allVars = { API_TOKEN: token, ...vars };
  if (!resumed)
    try {
      await writeFile(
        envFile,
        `${Object.entries(allVars)
          .map(([k, v]) => envFileLine(k, v))
          .join("\n")}\n`,
      );
      await cp(await migratedState(configPath), persistTo, { recursive: true });
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }

  const port = options.port ?? (await freePort());
  const inspectorPort = await freePort();
  const child = spawn(
    process.execPath,
    [
      WRANGLER_CLI,
      "dev",
      ...(options.bundle ? [options.bundle.entry, "--no-bundle"] : []),
      ...configArgs,
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspectorPort),
      "--persist-to",
      persistTo,
      "--env-file",
      envFile,
      "--show-interactive-dev-session=false",
      "--log-level",
      options.logLevel ?? "warn",
    ],
    // Own process group, so stop() reaches workerd too.
    { cwd: PROJECT_ROOT, env: CHILD_ENV, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  live.set(child, dir);
  let output = "";
  child.stdout?.on("data", (d) => (output += String(d)));
  child.stderr?.on("data", (d) => (output += String(d)));

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await stopGroup(child);
      live.delete(child);
      await rm(dir, { recursive: true, force: true });
    })());

  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`wrangler dev exited with ${child.exitCode ?? child.signalCode}:\n${output}`);
    }
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > STARTUP_TIMEOUT_MS) {
      await stop();
      throw new Error(`wrangler dev did not answer /healthz within ${STARTUP_TIMEOUT_MS} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, STARTUP_POLL_MS));
  }

  return {
    url,
    token,
    process: child,
    logs: () => output,
    inspectorPort,
    stateDir: persistTo,
    api: (path, init = {}) => {
      const headers = new Headers(init.headers);
      if (!headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
      if (init.body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json");
      return fetch(`${url}${path}`, { ...init, headers });
    },
    stop,
    crashAndRestart: async () => {
      const exited = new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once("exit", () => r())));
      signalGroup(child, "SIGKILL");
      await exited;
      live.delete(child);
      stopping = Promise.resolve();
      return startWorkerServer(vars, options, { dir, token });
    },
  };
}

/** Signals wrangler's whole process group: wrangler, workerd, esbuild. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

/** SIGTERM to the group, SIGKILL after STOP_GRACE_MS; resolves once wrangler has exited. */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  signalGroup(child, "SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), STOP_GRACE_MS)));
  const first = await Promise.race([exited, grace]);
  clearTimeout(timer);
  if (first === "timeout") {
    signalGroup(child, "SIGKILL");
    await exited;
  }
}
