// `npm start`: the service on its embedded defaults, on loopback, no account
// and no network. Checks first that its ports (PORT, default 8787, and
// DEMO_MCP_PORT, default 3001) are free, and stops with a message naming the
// busy one when not. Creates .dev.vars with a fresh local API token the first
// time, applies the D1 migrations to the local database, starts the demo MCP
// server beside the Worker, and serves the Worker with wrangler dev. The demo
// server's URL in .dev.vars follows DEMO_MCP_PORT on every start.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { newDevVars, withDemoPort, withLongEnoughToken } from "./dev-vars";

const ROOT = resolve(import.meta.dirname, "..");
const WRANGLER_CLI = join(ROOT, "node_modules/wrangler/wrangler-dist/cli.js");
const DEV_VARS = join(ROOT, ".dev.vars");
const HOST = "127.0.0.1";
const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };

function portSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  const port = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    console.error(`${name}=${raw} is not a port (1..65535). Example: ${name}=${fallback} npm start`);
    process.exit(2);
  }
  return port;
}
const WORKER_PORT = portSetting("PORT", 8787);
const DEMO_MCP_PORT = portSetting("DEMO_MCP_PORT", 3001);

/** Resolves with the error code when `port` cannot be listened on (EADDRINUSE, EACCES), else undefined. */
function probePort(port: number): Promise<string | undefined> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => resolvePort(err.code ?? String(err)));
    server.listen(port, HOST, () => server.close(() => resolvePort(undefined)));
  });
}

/** Both ports free, or exit before anything starts (and before any token is shown). */
async function checkPorts(): Promise<void> {
  if (WORKER_PORT === DEMO_MCP_PORT) {
    console.error(`PORT and DEMO_MCP_PORT are both ${WORKER_PORT}; choose two ports, e.g. PORT=8787 DEMO_MCP_PORT=3001 npm start`);
    process.exit(1);
  }
  const busy: string[] = [];
  for (const [name, port] of [
    ["PORT (the Worker)", WORKER_PORT],
    ["DEMO_MCP_PORT (the demo MCP server)", DEMO_MCP_PORT],
  ] as const) {
    const problem = await probePort(port);
    if (problem !== undefined)
      busy.push(`  ${HOST}:${port} for ${name}: ${problem === "EADDRINUSE" ? "already in use by another process" : problem}`);
  }
  if (busy.length === 0) return;
  console.error(
    [
      "npm start cannot start: a port it needs is not free.",
      ...busy,
      "Stop whatever holds it, or choose other ports, e.g.:",
      `  PORT=${WORKER_PORT + 1} DEMO_MCP_PORT=${DEMO_MCP_PORT + 1} npm start`,
    ].join("\n"),
  );
  process.exit(1);
}

function ensureDevVars(): string {
  if (!existsSync(DEV_VARS)) {
    const token = `local-${randomBytes(32).toString("base64url")}`;
    writeFileSync(DEV_VARS, newDevVars(token, DEMO_MCP_PORT));
    console.log(`Created .dev.vars with a new local API token.`);
  }
  const current = readFileSync(DEV_VARS, "utf8");
  const ported = withDemoPort(current, DEMO_MCP_PORT);
  if (ported !== current) console.log(`Pointed the demo server's URL in .dev.vars (MCP_SERVERS) at port ${DEMO_MCP_PORT}.`);
  // API_TOKEN needs 32 characters now (contract section 18); an older, shorter local token is replaced.
  const updated = withLongEnoughToken(ported, `local-${randomBytes(32).toString("base64url")}`);
  if (updated !== ported) console.log("Replaced the API token in .dev.vars: tokens now need at least 32 characters.");
  if (updated !== current) writeFileSync(DEV_VARS, updated);
  const token = /^API_TOKEN=(.+)$/m.exec(updated)?.[1]?.trim();
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

await checkPorts();
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

const base = `http://${HOST}:${WORKER_PORT}`;
const started = Date.now();
const STARTUP_TIMEOUT_MS = 60_000;
let ready = false;
while (!ready && Date.now() - started < STARTUP_TIMEOUT_MS) {
  try {
    // Ready means this engine with this token: another server on the port would answer 401.
    ready = (await fetch(`${base}/api/storage-pool`, { headers: { authorization: `Bearer ${token}` } })).ok;
  } catch {
    // not yet listening
  }
  if (!ready) await new Promise((r) => setTimeout(r, 250));
}
if (!ready) {
  console.error(
    `The Worker did not answer on ${base} with the token from .dev.vars within ${STARTUP_TIMEOUT_MS / 1000} s; see the output above.`,
  );
  stopAll(1);
}
console.log(`
The engine is serving on ${base} (local D1, local Durable Objects, demo MCP server on :${DEMO_MCP_PORT}).
Other ports: PORT=<worker port> DEMO_MCP_PORT=<demo server port> npm start
API token (from .dev.vars): ${token}

Try:
  export TOKEN=${token}
  curl -s -X POST ${base}/api/trigger -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
    -d '{"message":"hello","script":[{"text":"thinking...","delay_ms":2000},{"text":"done"}]}'
  curl -N ${base}/api/runs/<run_id>/events -H "authorization: Bearer $TOKEN"

Ctrl-C stops everything.`);
