// The package as a consumer gets it (contract section 15): `npm ci` / `npm install`
// (also from a git URL, where npm runs `prepare` before packing) must leave the
// built client entry point and a working `approved-exec` bin. The node project's
// global setup has just run the same build `prepare` runs; these tests check
// that `prepare` is that build, that a pack carries its output, and that a
// sibling project depending on this one by path can import the client and run
// the bin.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../support/worker-server";

const run = promisify(execFile);
const PACKAGE_NAME = "approved-execution-engine";

interface PackageJson {
  name: string;
  scripts: Record<string, string>;
  bin: Record<string, string>;
  exports: Record<string, { types: string; default: string }>;
}

let pkg: PackageJson;
let sibling: string;

beforeAll(async () => {
  pkg = JSON.parse(await readFile(join(PROJECT_ROOT, "package.json"), "utf8")) as PackageJson;
  // A sibling project that depends on this one by path: npm links a `file:` dependency as a symlink.
  sibling = await mkdtemp(join(tmpdir(), "aee-sibling-"));
  await writeFile(
    join(sibling, "package.json"),
    JSON.stringify({ name: "sibling", private: true, type: "module", dependencies: { [PACKAGE_NAME]: `file:${PROJECT_ROOT}` } }),
  );
  // npm's own install: it links the dependency and puts its bin on node_modules/.bin. Offline (a link fetches
  // nothing) and without scripts: the global setup has just run the build that `prepare` runs.
  await run("npm", ["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: sibling });
});

afterAll(async () => {
  await rm(sibling, { recursive: true, force: true });
});

describe("what an install leaves", () => {
  it("runs the build on install: prepare is npm run build, which builds the client and then the CLI", () => {
    expect(pkg.scripts.prepare).toMatch(/^npm run build\b/);
    expect(pkg.scripts.build).toBe("npm run build:client && npm run build:cli");
  });

  it("packs the built client entry, its types and the bin, and no sources", async () => {
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: PROJECT_ROOT });
    const [packed] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const paths = packed.files.map((f) => f.path);
    const wanted = [pkg.exports["./client"]?.default, pkg.exports["./client"]?.types, pkg.bin["approved-exec"]];
    for (const file of wanted) expect(paths, `${file} in the pack`).toContain(file?.replace(/^\.\//, ""));
    expect(paths.filter((p) => p.startsWith("src/") || p.startsWith("test/"))).toEqual([]);
  });

  it("lets a sibling project import the client by the package's name", async () => {
    const script = `const m = await import("${PACKAGE_NAME}/client"); console.log(typeof m.EngineClient, typeof m.walkPages);`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: sibling });
    expect(stdout.trim()).toBe("function function");
  });

  it("gives the sibling a bin that prints the commands: npx approved-exec --help", async () => {
    const bin = join(sibling, "node_modules", PACKAGE_NAME, pkg.bin["approved-exec"] ?? "");
    expect((await readFile(bin, "utf8")).startsWith("#!/usr/bin/env node\n")).toBe(true);
    const { stdout } = await run("npx", ["--no-install", "approved-exec", "--help"], { cwd: sibling });
    for (const command of ["trigger", "approve", "deny", "answer", "cancel", "reconcile"]) expect(stdout).toContain(command);
  });
});
