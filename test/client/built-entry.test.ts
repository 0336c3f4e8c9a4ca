// The package's own client entry point as a consumer gets it: a plain Node
// process (no Vite, no TypeScript) imports `approved-execution-engine/client`
// (package self-reference through `exports["./client"]` → dist/client, built by
// the node project's global setup from tsconfig.client.json) and uses it
// against the real Worker. Also checks the built files import nothing but each
// other and eventsource-parser, so they can load in browsers and Workers.
import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { token, url } from "../support/e2e-client";
import { PROJECT_ROOT } from "../support/worker-server";

const run = promisify(execFile);

/** Runs as an ES module in a separate Node process, from the project root. */
const CONSUMER = `
import { ApiError, EngineClient } from "approved-execution-engine/client";
const client = new EngineClient({ baseUrl: process.env.ENGINE_URL, token: process.env.ENGINE_TOKEN });
const stream = await client.triggerStream({ message: "from the built client", channel_id: "C-built-entry" });
const events = [];
for await (const event of stream.events) events.push([event.sequence, event.type]);
const replayed = [];
for await (const event of client.events(stream.runId, { after: 1 })) replayed.push(event.sequence);
const summary = await client.summary(stream.runId);
const page = await client.listMutations({ channel_id: "C-built-entry", limit: 1 });
const openapi = await client.openapi();
let refusal;
try { await client.summary("run_does_not_exist"); } catch (err) { refusal = { isApiError: err instanceof ApiError, status: err.status, code: err.code }; }
console.log(JSON.stringify({ runId: stream.runId, events, replayed, status: summary.status, page, openapi: openapi.openapi, refusal }));
`;

describe("the built client entry point", () => {
  it("is importable by its package name in plain Node and works against the engine", async () => {
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", CONSUMER], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ENGINE_URL: url, ENGINE_TOKEN: token },
    });
    const result = JSON.parse(stdout);
    expect(result.runId).toMatch(/^run_/);
    expect(result.events).toEqual([
      [1, "run_started"],
      [2, "assistant_message"],
      [3, "run_completed"],
    ]);
    expect(result.replayed).toEqual([2, 3]);
    expect(result.status).toBe("completed");
    expect(result.page).toEqual({ mutations: [], next_cursor: null });
    expect(result.openapi).toMatch(/^3\.1\./);
    expect(result.refusal).toEqual({ isApiError: true, status: 404, code: "not_found" });
  });

  it("ships JavaScript with declarations that imports only itself, eventsource-parser and json-canonicalize (RFC 8785, for the audit verifier)", async () => {
    const pkg = JSON.parse(await readFile(join(PROJECT_ROOT, "package.json"), "utf8"));
    expect(pkg.exports["./client"]).toEqual({ types: "./dist/client/index.d.ts", default: "./dist/client/index.js" });
    const dir = join(PROJECT_ROOT, "dist/client");
    const files = await readdir(dir);
    expect(files).toEqual(expect.arrayContaining(["index.js", "index.d.ts", "engine-client.js", "engine-client.d.ts"]));
    for (const file of files.filter((f) => f.endsWith(".js"))) {
      const source = await readFile(join(dir, file), "utf8");
      const specifiers = [...source.matchAll(/\b(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]);
      for (const specifier of specifiers)
        expect([file, specifier]).toEqual([file, expect.stringMatching(/^(\.\/[\w-]+\.js|eventsource-parser|json-canonicalize)$/)]);
      expect(source).not.toMatch(/\brequire\(|\bprocess\.|\bBuffer\b/);
    }
  });
});
