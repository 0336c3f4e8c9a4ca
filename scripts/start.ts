// `npm start`: the service on its embedded defaults, on loopback, no account
// and no network. Creates .dev.vars with a fresh local API token the first
// time, applies the D1 migrations to the local database, starts the demo MCP
// server beside the Worker, and serves the Worker with wrangler dev.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const WRANGLER_CLI = join(ROOT, "node_modules/wrangler/wrangler-dist/cli.js");
const DEV_VARS = join(ROOT, ".dev.vars");
const WORKER_PORT = Number(process.env.PORT ?? 8787);
const DEMO_MCP_PORT = Number(process.env.DEMO_MCP_PORT ?? 3001);
const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };

function ensureDevVars(): string {
  if (!existsSync(DEV_VARS)) {
    const token = `local-${randomBytes(18).toString("base64url")}`;
    writeFileSync(
      DEV_VARS,
      [
        "# Local settings for `npm start` (wrangler dev). Not committed.",
        `API_TOKEN=${token}`,
        `MCP_SERVERS='{"demo":{"url":"http://127.0.0.1:${DEMO_MCP_PORT}/mcp"}}'`,
        `MUTATION_BUDGET='{"mcp__demo__create_dashboard":2,"mcp__demo__update_dashboard":2}'`,
        "",
      ].join("\n"),
    );
    console.log(`Created .dev.vars with a new local API token.`);
  }
  const token = /^API_TOKEN=(.+)$/m.exec(readFileSync(DEV_VARS, "utf8"))?.[1]?.trim();
  if (!token) throw new Error(".dev.vars has no API_TOKEN line; add `API_TOKEN=<something>` or delete the file to get a new one.");
  return token.replace(/^['"]|['"]$/g, "");
}

const children: ChildProcess[] = [];
function stopAll(code = 0): never {
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  process.exit(code);
}
process.once("SIGINT", () => stopAll(0));
process.once("SIGTERM", () => stopAll(0));

const token = ensureDevVars();
console.log("Applying D1 migrations to the local database...");
execFileSync(process.execPath, [WRANGLER_CLI, "d1", "migrations", "apply", "DB", "--local"], { cwd: ROOT, env, stdio: "inherit" });

const demo = spawn(process.execPath, [join(ROOT, "node_modules/tsx/dist/cli.mjs"), join(ROOT, "demo/mcp-server.ts")], {
  cwd: ROOT,
  env: { ...env, DEMO_MCP_PORT: String(DEMO_MCP_PORT) },
  stdio: ["ignore", "inherit", "inherit"],
});
children.push(demo);

const worker = spawn(
  process.execPath,
  [WRANGLER_CLI, "dev", "--ip", "127.0.0.1", "--port", String(WORKER_PORT), "--show-interactive-dev-session=false"],
  { cwd: ROOT, env, stdio: ["ignore", "inherit", "inherit"] },
);
children.push(worker);
for (const child of children) child.once("exit", (code) => stopAll(code ?? 1));

const base = `http://127.0.0.1:${WORKER_PORT}`;
const started = Date.now();
const STARTUP_TIMEOUT_MS = 60_000;
while (Date.now() - started < STARTUP_TIMEOUT_MS) {
  try {
    if ((await fetch(`${base}/healthz`)).ok) break;
  } catch {
    // not yet listening
  }
  await new Promise((r) => setTimeout(r, 250));
}
console.log(`
The engine is serving on ${base} (local D1, local Durable Objects, demo MCP server on :${DEMO_MCP_PORT}).
API token (from .dev.vars): ${token}

Try:
  export TOKEN=${token}
  curl -s -X POST ${base}/api/trigger -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
    -d '{"message":"hello","script":[{"text":"thinking...","delay_ms":2000},{"text":"done"}]}'
  curl -N ${base}/api/runs/<run_id>/events -H "authorization: Bearer $TOKEN"

Ctrl-C stops everything.`);
