// `npm start`: the service on its embedded defaults, on loopback, no account
// and no network. Checks first that its ports (PORT, default 8787, and
// DEMO_MCP_PORT, default 3001) are free, and stops with a message naming the
// busy one when not. Creates .dev.vars with a fresh local API token the first
// time (DEV_VARS_FILE names another settings file), validates the settings
// the Worker will get with the Worker's own config loader and stops with one
// paragraph naming a bad one, applies the D1 migrations to the local database
// (one summary line), starts the demo MCP server beside the Worker, and serves
// the Worker with wrangler dev. The demo server's URL in the settings file
// follows DEMO_MCP_PORT on every start. STATE_DIR moves the local D1 and
// Durable Object storage, and the demo server's state file, out of
// .wrangler/state. Beside the demo server it starts the OAuth-protected demo
// MCP server (DEMO_OAUTH_PORT, default 3002) for the README's `mcp connect`.
// The first start writes CONSOLE_SESSION_SECRET, MCP_TOKEN_KEY and PUBLIC_URL
// with the token; a file without them gets them added, said before it starts.
// A setting whose name is a misspelling of one the Worker reads is named once.
//
// Quiet by default: no wrangler banner (nor its npm update check and Node
// version notice), no telemetry, no cf.json fetch, none of wrangler's info
// lines and none of the Worker's info lines but retention's report.
// VERBOSE=1 npm start shows wrangler's full output. Its children
// (wrangler with workerd and esbuild, the demo servers) run in their own
// process groups and are stopped as groups on Ctrl-C, SIGTERM or exit.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, relative, resolve } from "node:path";
import { createInterface } from "node:readline";
import { localSettings, newDevVars, withDemoPort, withLocalSettings, withWorkerPort } from "./dev-vars";
import { parseEnv, stripVTControlCharacters } from "node:util";
import { configProblem, envFileVars, tomlVars, unknownSettingWarnings } from "./start-config";

const ROOT = resolve(import.meta.dirname, "..");
const WRANGLER_CLI = join(ROOT, "node_modules/wrangler/wrangler-dist/cli.js");
const WRANGLER_TOML = join(ROOT, "wrangler.toml");
const DEV_VARS = process.env.DEV_VARS_FILE ? resolve(process.env.DEV_VARS_FILE) : join(ROOT, ".dev.vars");
const DEV_VARS_NAME = relative(process.cwd(), DEV_VARS).startsWith("..") ? DEV_VARS : relative(process.cwd(), DEV_VARS);
/** Local D1 and Durable Object storage: wrangler's default (.wrangler/state), or STATE_DIR. */
const PERSIST_ARGS = process.env.STATE_DIR ? ["--persist-to", resolve(process.env.STATE_DIR)] : [];
/** The demo MCP server's state, beside the local D1 that remembers what it did. */
const DEMO_STATE_FILE = join(process.env.STATE_DIR ? resolve(process.env.STATE_DIR) : join(ROOT, ".wrangler/state"), "demo-mcp-state.json");
const HOST = "127.0.0.1";
const VERBOSE = process.env.VERBOSE === "1" || process.env.VERBOSE === "true";
/** No network beyond loopback: no telemetry or error reports, no banner (its npm update check), no cf.json download. */
const env = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_SEND_ERROR_REPORTS: "false",
  WRANGLER_HIDE_BANNER: "true",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
};

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
/** The OAuth-protected demo MCP server's port (its resource; its authorization server takes any free port). */
const DEMO_OAUTH_PORT = portSetting("DEMO_OAUTH_PORT", 3002);

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
  if (new Set([WORKER_PORT, DEMO_MCP_PORT, DEMO_OAUTH_PORT]).size < 3) {
    console.error(
      `PORT, DEMO_MCP_PORT and DEMO_OAUTH_PORT (${WORKER_PORT}, ${DEMO_MCP_PORT}, ${DEMO_OAUTH_PORT}) must differ; e.g. PORT=8787 DEMO_MCP_PORT=3001 DEMO_OAUTH_PORT=3002 npm start`,
    );
    process.exit(1);
  }
  const busy: string[] = [];
  for (const [name, port] of [
    ["PORT (the Worker)", WORKER_PORT],
    ["DEMO_MCP_PORT (the demo MCP server)", DEMO_MCP_PORT],
    ["DEMO_OAUTH_PORT (the OAuth demo MCP server)", DEMO_OAUTH_PORT],
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
      `  PORT=${WORKER_PORT + 1} DEMO_MCP_PORT=${DEMO_MCP_PORT + 1} DEMO_OAUTH_PORT=${DEMO_OAUTH_PORT + 1} npm start`,
    ].join("\n"),
  );
  process.exit(1);
}

/**
 * The settings file as this start needs it: created the first time, or with
 * the local URLs following the ports and the local secrets it lacks added.
 * Checked before anything is written (a refused file is left exactly as it
 * was: a short API_TOKEN is the user's to replace), and every change said.
 */
function ensureDevVars(): string {
  const fresh = !existsSync(DEV_VARS);
  const current = fresh ? "" : readFileSync(DEV_VARS, "utf8");
  const said: string[] = [];
  let updated: string;
  if (fresh) {
    updated = newDevVars(`local-${randomBytes(32).toString("base64url")}`, DEMO_MCP_PORT, localSettings(WORKER_PORT));
    said.push(`Created ${DEV_VARS_NAME} with a new local API token and console session secret.`);
  } else {
    const ported = withWorkerPort(withDemoPort(current, DEMO_MCP_PORT), WORKER_PORT);
    if (ported !== current) said.push(`Pointed the local URLs in ${DEV_VARS_NAME} (MCP_SERVERS' demo, PUBLIC_URL) at this start's ports.`);
    const local = withLocalSettings(ported, localSettings(WORKER_PORT));
    updated = local.text;
    if (local.added.length > 0)
      said.push(
        `Added ${local.added.join(", ")} to ${DEV_VARS_NAME} (the console and MCP OAuth need them locally; your other lines are as they were).`,
      );
  }
  const problem = configProblem({ ...tomlVars(WRANGLER_TOML), ...parseEnv(updated) }, DEV_VARS_NAME);
  if (problem !== undefined) {
    console.error(problem);
    process.exit(1);
  }
  if (updated !== current) writeFileSync(DEV_VARS, updated);
  for (const line of said) console.log(line);
  const token = /^API_TOKEN=(.+)$/m.exec(updated)?.[1]?.trim();
  if (!token) {
    console.error(
      `npm start cannot start: ${DEV_VARS_NAME} has no API_TOKEN line; add \`API_TOKEN=<something>\` or delete the file to get a new one.`,
    );
    process.exit(1);
  }
  return token.replace(/^['"]|['"]$/g, "");
}

const children: ChildProcess[] = [];
/** After SIGTERM, how long a child's group gets before SIGKILL. */
const STOP_GRACE_MS = 5_000;
/** After SIGKILL, how long to wait for the kernel to take the groups down (their ports with them). */
const KILL_WAIT_MS = 1_000;

/** Signals a child's whole process group (wrangler's includes workerd and esbuild), whether or not the child itself still runs. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals | 0): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false; // the group is gone
  }
}

/** Whether anything of the child's group still runs (workerd can outlive the wrangler process that started it). */
const groupAlive = (child: ChildProcess): boolean => signalGroup(child, 0);

/** Waits until no child group is left, or `ms` passed. */
async function groupsGone(ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (children.some(groupAlive) && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
}

let stopping: Promise<never> | undefined;
/**
 * Stops every child group (SIGTERM, SIGKILL after STOP_GRACE_MS), waits until
 * they are gone, then exits with `code`. The first reason to stop wins: a
 * child that exits 143 because this SIGTERMed it joins the stop already under
 * way rather than exiting early with its own code.
 */
function stopAll(code = 0): Promise<never> {
  stopping ??= (async () => {
    for (const child of children) signalGroup(child, "SIGTERM");
    await groupsGone(STOP_GRACE_MS);
    for (const child of children) signalGroup(child, "SIGKILL");
    await groupsGone(KILL_WAIT_MS);
    process.exit(code);
  })();
  return stopping;
}
process.once("SIGINT", () => void stopAll(0));
process.once("SIGTERM", () => void stopAll(0));
process.once("SIGHUP", () => void stopAll(0));
// Orphaned (whatever started it went away without a signal reaching here): stop too, rather than hold the ports.
const PARENT_PID = process.ppid;
const PARENT_POLL_MS = 1_000;
setInterval(() => {
  if (process.ppid !== PARENT_PID) void stopAll(1);
}, PARENT_POLL_MS).unref();
// Whatever else ends this process, its children's groups do not outlive it.
process.once("exit", () => {
  for (const child of children) signalGroup(child, "SIGKILL");
});

await checkPorts();
const token = ensureDevVars();
// Once, at start: a misspelt setting (TOOL_POLCY) would otherwise be ignored without a word.
for (const warning of [
  ...unknownSettingWarnings(envFileVars(DEV_VARS), DEV_VARS_NAME),
  ...unknownSettingWarnings(tomlVars(WRANGLER_TOML), "wrangler.toml [vars]"),
])
  console.error(warning);

/** Applies the D1 migrations to the local database; prints one line, or wrangler's output when it fails. */
function applyMigrations(): void {
  const all = readdirSync(join(ROOT, "migrations")).filter((f) => f.endsWith(".sql"));
  let output: string;
  try {
    output = execFileSync(process.execPath, [WRANGLER_CLI, "d1", "migrations", "apply", "DB", "--local", ...PERSIST_ARGS], {
      cwd: ROOT,
      env: { ...env, CI: "true" },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
    });
  } catch (err) {
    const failed = err as { stdout?: string; stderr?: string };
    console.error(`npm start cannot start: applying the D1 migrations failed:\n${failed.stdout ?? ""}${failed.stderr ?? ""}`);
    process.exit(1);
  }
  if (VERBOSE) console.log(output);
  const applied = /About to apply (\d+) migration/.exec(output)?.[1];
  console.log(
    applied === undefined
      ? `D1 (local): up to date, ${all.length} migrations.`
      : `D1 (local): applied ${applied} of ${all.length} migrations (${all
          .slice(-Number(applied))
          .join(", ")
          .replace(/, .*, /, " … ")}).`,
  );
}
applyMigrations();

const demo = spawn(process.execPath, [join(ROOT, "node_modules/tsx/dist/cli.mjs"), join(ROOT, "demo/mcp-server.ts")], {
  cwd: ROOT,
  // Its dashboards, KPIs, alerts and reports live in a file under STATE_DIR (or .wrangler/state), so a restart keeps dash-1.
  env: { ...env, DEMO_MCP_PORT: String(DEMO_MCP_PORT), DEMO_MCP_STATE_FILE: DEMO_STATE_FILE },
  stdio: ["ignore", "inherit", "inherit"],
  detached: true,
});
children.push(demo);
// The OAuth-protected one, for the README's `mcp connect` example (MCP_SERVERS names it only when you add it).
const oauthDemo = spawn(process.execPath, [join(ROOT, "node_modules/tsx/dist/cli.mjs"), join(ROOT, "demo/oauth-mcp-server.ts")], {
  cwd: ROOT,
  env: { ...env, DEMO_OAUTH_PORT: String(DEMO_OAUTH_PORT) },
  stdio: ["ignore", "inherit", "inherit"],
  detached: true,
});
children.push(oauthDemo);

/**
 * Wrangler runs at `info` so the Worker's info lines reach this process (at
 * `warn` wrangler drops them), and this passes on what a person should see:
 * everything but wrangler's info lines and the Worker's info and debug JSON lines, except
 * retention's report (`retention: done` with what it deleted, when
 * /cdn-cgi/local/scheduled fires the cron). VERBOSE passes everything.
 */
function passOn(stream: NodeJS.ReadableStream, to: NodeJS.WriteStream): void {
  createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
    if (!VERBOSE && quietWorkerLine(line)) return;
    to.write(`${line}\n`);
  });
}
function quietWorkerLine(raw: string): boolean {
  const line = stripVTControlCharacters(raw);
  // Wrangler's own info lines at this level: "Ready on ..." and one per request.
  if (line.startsWith("[wrangler:info]")) return true;
  const start = line.indexOf("{");
  if (start < 0) return false;
  try {
    const parsed = JSON.parse(line.slice(start)) as { level?: unknown; msg?: unknown };
    return (parsed.level === "info" || parsed.level === "debug") && !String(parsed.msg).startsWith("retention:");
  } catch {
    return false;
  }
}

const worker = spawn(
  process.execPath,
  [
    WRANGLER_CLI,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(WORKER_PORT),
    "--env-file",
    DEV_VARS,
    ...PERSIST_ARGS,
    // Only to drop wrangler's "Scheduled Workers are not automatically triggered" box: the banner below gives the recipe.
    "--test-scheduled",
    "--show-interactive-dev-session=false",
    "--log-level",
    VERBOSE ? "log" : "info",
  ],
  { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true },
);
children.push(worker);
if (worker.stdout) passOn(worker.stdout, process.stdout);
if (worker.stderr) passOn(worker.stderr, process.stderr);
for (const child of children) child.once("exit", (code) => void stopAll(code ?? 1));

const base = `http://${HOST}:${WORKER_PORT}`;
const started = Date.now();
const STARTUP_TIMEOUT_MS = 60_000;
let ready = false;
while (!ready && Date.now() - started < STARTUP_TIMEOUT_MS) {
  try {
    // Ready means this engine with this token: another server on the port would answer 401.
    const res = await fetch(`${base}/api/storage-pool`, { headers: { authorization: `Bearer ${token}` } });
    ready = res.ok;
    // The settings were checked above; a 503 naming the config (say, a setting changed since) is final, not "not yet".
    const body =
      res.status === 503 ? ((await res.json().catch(() => ({}))) as { error?: string; message?: string; details?: unknown }) : {};
    if (body.error === "bad_config" || body.error === "not_configured") {
      console.error(`npm start: the Worker refuses its settings: ${body.message} ${JSON.stringify(body.details ?? [])}`);
      await stopAll(1);
    }
  } catch {
    // not yet listening
  }
  if (!ready) await new Promise((r) => setTimeout(r, 250));
}
if (!ready) {
  console.error(
    `The Worker did not answer on ${base} with the token from ${DEV_VARS_NAME} within ${STARTUP_TIMEOUT_MS / 1000} s; see the output above${VERBOSE ? "" : " (VERBOSE=1 npm start shows all of wrangler's)"}.`,
  );
  await stopAll(1);
}
console.log(`
The engine is serving on ${base} (local D1, local Durable Objects, demo MCP server on :${DEMO_MCP_PORT}, OAuth demo on :${DEMO_OAUTH_PORT}).
Other ports: PORT=<worker port> DEMO_MCP_PORT=<demo server port> DEMO_OAUTH_PORT=<OAuth demo port> npm start
API token (from ${DEV_VARS_NAME}): ${token}
Console: ${base}/console (sign in with the API token)
Retention (the hourly cron, on demand): curl -s ${base}/cdn-cgi/local/scheduled; what it deleted is printed here as "retention: done".

Try:
  export TOKEN=${token}
  curl -s -X POST ${base}/api/trigger -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
    -d '{"message":"hello","script":[{"text":"thinking...","delay_ms":2000},{"text":"done"}]}'
  curl -N ${base}/api/runs/<run_id>/events -H "authorization: Bearer $TOKEN"

Ctrl-C stops everything.`);
