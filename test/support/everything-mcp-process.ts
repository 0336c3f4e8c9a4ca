// Starts and stops `@modelcontextprotocol/server-everything` (the MCP
// maintainers' reference server, pinned in package.json) as a real local
// process speaking Streamable HTTP, for the end-to-end tests (contract
// section 21: a server the engine did not write). It is an older-revision
// server with sessions (the 1.x SDK's transport): it answers the engine's
// server/discover probe with an error, so the engine falls back to initialize.
// Spawned detached, in its own process group, and stopped as a group.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./worker-server";

const ENTRY = join(dirname(fileURLToPath(import.meta.resolve("@modelcontextprotocol/server-everything/package.json"))), "dist/index.js");
/** The line it writes to stderr once it listens. */
const LISTENING = /listening on port (\d+)/;
const STARTUP_TIMEOUT_MS = 30_000;
const EXIT_TIMEOUT_MS = 5_000;

export interface EverythingMcpProcess {
  /** The MCP endpoint, http://127.0.0.1:<port>/mcp. */
  url: string;
  stop(): Promise<void>;
}

export async function startEverythingMcpProcess(): Promise<EverythingMcpProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [ENTRY, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`server-everything did not listen within ${STARTUP_TIMEOUT_MS} ms: ${stderr}`)),
        STARTUP_TIMEOUT_MS,
      );
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (LISTENING.test(stderr)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`server-everything exited early (${code}): ${stderr}`));
      });
    });
  } catch (error) {
    await stop(child);
    throw error;
  }
  // Its per-request log lines go nowhere from here on.
  child.stderr?.removeAllListeners("data");
  child.stderr?.resume();
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => stop(child) };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = once(child, "exit");
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // The group is already gone.
    }
  };
  signal("SIGTERM");
  const timer = setTimeout(() => signal("SIGKILL"), EXIT_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
