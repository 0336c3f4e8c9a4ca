// Starts and stops the demo MCP server (demo/mcp-server.ts) as a separate
// process, for the global setups of both test projects and the benchmark.
// The suites' demo server is the older kind (DEMO_MCP_ERA=2025-11-25:
// initialize and sessions, contract section 21's "older server"); pass
// `{ DEMO_MCP_ERA: "2026-07-28" }` for the stateless one `npm start` runs.
// Spawned detached, in its own process group, so stopping it reaches tsx's
// child too; its URL is parsed from the one line the server prints.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const TSX_CLI = "node_modules/tsx/dist/cli.mjs";
const LISTENING_LINE = /^demo-mcp-server listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/;
/** tsx compiles the server on start; a cold start on a slow machine takes a few seconds. */
const STARTUP_TIMEOUT_MS = 30_000;
/** The server exits within its own 5 s shutdown grace; after this it is killed. */
const EXIT_TIMEOUT_MS = 8_000;

export interface DemoMcpProcess {
  child: ChildProcess;
  /** The MCP endpoint, http://127.0.0.1:<port>/mcp. */
  url: string;
  /** Where the control API lives, http://127.0.0.1:<port>. */
  baseUrl: string;
  /** What the server wrote to stderr so far. */
  stderr(): string;
  /** Signals the process group (SIGTERM, then SIGKILL after a grace) and waits for the exit. */
  stop(): Promise<void>;
}

export async function startDemoMcpProcess(extraEnv: Record<string, string> = {}): Promise<DemoMcpProcess> {
  const child = spawn(process.execPath, [TSX_CLI, "demo/mcp-server.ts"], {
    cwd: REPO_ROOT,
    env: { ...process.env, DEMO_MCP_PORT: "0", DEMO_MCP_ERA: "2025-11-25", ...extraEnv },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout! });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`demo MCP server printed nothing within ${STARTUP_TIMEOUT_MS} ms: ${stderr}`)),
        STARTUP_TIMEOUT_MS,
      );
      lines.once("line", (line) => {
        clearTimeout(timer);
        const match = LISTENING_LINE.exec(line);
        if (match?.[1]) resolve(match[1]);
        else reject(new Error(`unexpected first line from the demo MCP server: ${line}`));
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`demo MCP server exited early (${code}): ${stderr}`));
      });
    });
    return { child, url, baseUrl: new URL(url).origin, stderr: () => stderr, stop: () => stopDemoMcpProcess(child) };
  } catch (error) {
    await stopDemoMcpProcess(child);
    throw error;
  }
}

async function stopDemoMcpProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = once(child, "exit");
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // The group is already gone.
    }
  };
  signalGroup("SIGTERM");
  const timer = setTimeout(() => signalGroup("SIGKILL"), EXIT_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
