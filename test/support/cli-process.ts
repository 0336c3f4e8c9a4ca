// The built `approved-exec` CLI (dist/cli/main.js, made by the node project's
// global setup) run as a real process against a Worker, for the e2e suites that
// check what a person at a terminal sees. The Worker's URL and token go in the
// environment the CLI reads; a developer's own API_TOKEN never reaches it.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { PROJECT_ROOT } from "./worker-server";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `approved-exec <args>` against the Worker at `target`, to its exit. */
export function runCli(target: { url: string; token: string }, args: string[]): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, ENGINE_URL: target.url, ENGINE_TOKEN: target.token, NO_COLOR: "1" };
  delete env.API_TOKEN;
  const child = spawn(process.execPath, [join(PROJECT_ROOT, "dist/cli/main.js"), ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += String(d)));
  child.stderr.on("data", (d) => (stderr += String(d)));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })));
}
