// The package as a consumer gets it (contract section 15): `npm ci` / `npm install`
// (also from a git URL, where npm runs `prepare` before packing) must leave the
// built client entry point and a working `approved-exec` bin. The node project's
// global setup has just run the same build `prepare` runs; these tests check
// that `prepare` is that build, that a pack carries its output, and that a
// sibling project depending on this one by path can import the client and run
// the bin.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { PROJECT_ROOT } from "../support/worker-server";

const run = promisify(execFile);
const PACKAGE_NAME = "approved-execution-engine";

interface PackageJson {
  name: string;
  version: string;
  dependencies: Record<string, string>;
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

/** The bare package names the built JavaScript under `dir` imports (node: built-ins left out). */
async function importedPackages(files: string[]): Promise<Set<string>> {
  const names = new Set<string>();
  for (const file of files) {
    const text = await readFile(join(PROJECT_ROOT, file), "utf8");
    for (const [, specifier] of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^"'\n]*?from\s*["']([^"'./][^"']*)["']/g)) {
      if (specifier === undefined || specifier.startsWith("node:")) continue;
      const parts = specifier.split("/");
      names.add(specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier));
    }
  }
  return names;
}

describe("an install on a Node older than 22 (issue 29)", () => {
  it("is refused at once with one EBADENGINE error naming the versions, not a warning per package", async () => {
    // npm on this Node, told it runs on Node 20 (npm reads process.version for its engine check), in a copy of the
    // project's install inputs: package.json, the lockfile and .npmrc.
    const copy = await mkdtemp(join(tmpdir(), "aee-node20-"));
    try {
      for (const name of ["package.json", "package-lock.json", ".npmrc"])
        await writeFile(join(copy, name), await readFile(join(PROJECT_ROOT, name)));
      await writeFile(join(copy, "node20.cjs"), 'Object.defineProperty(process, "version", { value: "v20.19.0" });\n');
      const refused = await run("npm", ["ci", "--dry-run", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], {
        cwd: copy,
        env: { ...process.env, NODE_OPTIONS: `--require ${join(copy, "node20.cjs")}` },
      }).then(
        () => undefined,
        (err: { code?: number; stdout?: string; stderr?: string }) => err,
      );
      expect(refused?.code).toBe(1);
      const output = `${refused?.stdout ?? ""}${refused?.stderr ?? ""}`;
      expect(output).toContain("npm error code EBADENGINE");
      expect(output).toContain('Required: {"node":">=22"}');
      expect(output).toContain('"node":"v20.19.0"');
      expect(output).not.toContain("warn EBADENGINE");
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });
});

describe("what a consumer's install pulls in (issue 29: not the Worker's SDKs)", () => {
  it("depends on exactly what the packed client and CLI import; the Worker's packages are dev-only in the lockfile", async () => {
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: PROJECT_ROOT });
    const [packed] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const js = packed.files.map((f) => f.path).filter((p) => p.endsWith(".js"));
    const imported = await importedPackages(js);
    imported.delete(PACKAGE_NAME); // the CLI imports the client through the package's own name
    expect(Object.keys(pkg.dependencies).sort()).toEqual([...imported].sort());
    expect(Object.keys(pkg.dependencies).sort()).toEqual(["commander", "eventsource-parser", "json-canonicalize", "ora"]);
    // What `npm install` of this package puts in a consumer's node_modules: the lockfile's non-dev entries.
    const lock = JSON.parse(await readFile(join(PROJECT_ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
    };
    const production = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== "" && entry.dev !== true && entry.devOptional !== true)
      .map(([path]) => path.replace(/^.*node_modules\//, ""));
    for (const heavy of ["@anthropic-ai/sdk", "openai", "slack-edge", "@modelcontextprotocol/client", "zod", "wrangler"])
      expect(production).not.toContain(heavy);
    expect(production.length).toBeLessThanOrEqual(20);
  });

  it("runs the README's client snippet as written, in a fresh `npm init -y` project with the packed package, against the engine", async () => {
    const readme = await readFile(join(PROJECT_ROOT, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## The consumer client"));
    const snippet = /```js\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
    const file = /^\/\/ (\S+\.mjs):/.exec(snippet)?.[1];
    expect(file).toBe("watch.mjs");
    const fresh = await mkdtemp(join(tmpdir(), "aee-consumer-"));
    try {
      await run("npm", ["init", "-y"], { cwd: fresh });
      // What `npm install <tarball>` leaves, offline: the packed files, and the packages the client imports.
      const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", fresh], { cwd: PROJECT_ROOT });
      const [packed] = JSON.parse(stdout) as [{ filename: string }];
      const installed = join(fresh, "node_modules", PACKAGE_NAME);
      await mkdir(installed, { recursive: true });
      await run("tar", ["-xzf", join(fresh, packed.filename), "-C", installed, "--strip-components=1"]);
      for (const dependency of ["eventsource-parser", "json-canonicalize"])
        await symlink(join(PROJECT_ROOT, "node_modules", dependency), join(fresh, "node_modules", dependency));
      await writeFile(join(fresh, file ?? "watch.mjs"), snippet);
      const { stdout: printed } = await run(process.execPath, [file ?? "watch.mjs"], {
        cwd: fresh,
        env: { PATH: process.env.PATH, ENGINE_URL: inject("workerUrl"), ENGINE_TOKEN: inject("workerToken") },
        timeout: 30_000,
      });
      const lines = printed.trimEnd().split("\n");
      expect(lines[0]).toBe("1 run_started");
      expect(lines).toContain("2 assistant_message");
      expect(lines.at(-1)).toMatch(/^\d+ run_completed$|^mut_/);
    } finally {
      await rm(fresh, { recursive: true, force: true });
    }
  });
});
