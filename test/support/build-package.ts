// Global setup of the node test project: builds the package's client entry
// point (dist/client) and its command-line tool (dist/cli) from the working
// tree, so the tests that import the built client or run the `approved-exec`
// bin always exercise the current sources and the real build.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { PROJECT_ROOT } from "./worker-server";

const run = promisify(execFile);
const TSC = join(PROJECT_ROOT, "node_modules/typescript/bin/tsc");

/** The same two steps as `npm run build`, in the same order (the CLI compiles against dist/client). */
export async function buildPackage(): Promise<void> {
  for (const config of ["tsconfig.client.json", "tsconfig.cli.json"]) {
    try {
      await run(process.execPath, [TSC, "-p", config], { cwd: PROJECT_ROOT });
    } catch (err) {
      const output = err as { stdout?: string; stderr?: string };
      throw new Error(`building ${config} failed:\n${output.stdout ?? ""}${output.stderr ?? ""}`, { cause: err });
    }
  }
}

export async function setup(): Promise<void> {
  await buildPackage();
}
