// `npm start` with a busy port (issue 9, finding 5): it must stop before
// starting anything, exit non-zero, name the busy port and how to choose
// others, and print no token. With a bad setting (issue 20, finding 2) it
// must stop before serving, within seconds, with one paragraph naming the
// setting. Started for real, it serves the README's walk-through to its
// question mid-call (the demo server on MCP 2026-07-28, contract section 21)
// and stops cleanly on SIGTERM. The script runs as a real process (tsx scripts/start.ts); a real
// socket holds the port; the settings file is the test's own (DEV_VARS_FILE).
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { demoMcpUrl, localSettings, newDevVars, withDemoPort, withLocalSettings, withWorkerPort } from "../../scripts/dev-vars";
import { unknownSettingWarnings } from "../../scripts/start-config";
import { EngineClient, type EngineEvent, type ScriptTurn } from "../../src/client";
import { freePort, PROJECT_ROOT } from "../support/worker-server";

const TSX_CLI = join(PROJECT_ROOT, "node_modules/tsx/dist/cli.mjs");
/** The script exits within a second or two when a port is busy; this only bounds a hang. */
const EXIT_TIMEOUT_MS = 30_000;
/**
 * "Within seconds" for a bad setting: the check runs before migrations and
 * wrangler, so the time is a node start plus tsx; generous for a loaded
 * two-core machine, far below the 60 s the old start spent polling a 503.
 */
const BAD_CONFIG_EXIT_MS = 15_000;
/** A whole start (migrations, a first bundle, workerd) on a loaded machine; the test ends as soon as it serves. */
const SERVE_TIMEOUT_MS = 90_000;

/** Whether `port` on loopback can be listened on (nothing holds it). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

const held: Server[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function holdPort(): Promise<number> {
  const server = createServer();
  held.push(server);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
}

function runStart(vars: Record<string, string>, timeoutMs = EXIT_TIMEOUT_MS): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX_CLI, join(PROJECT_ROOT, "scripts/start.ts")], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...vars },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += String(d)));
    child.stderr.on("data", (d) => (output += String(d)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`npm start did not exit within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** No token, from .dev.vars or newly made, in the output. */
function expectNoToken(output: string): void {
  expect(output).not.toMatch(/API token|TOKEN=|Bearer|local-[A-Za-z0-9_-]{10,}/);
  const devVars = join(PROJECT_ROOT, ".dev.vars");
  const token = existsSync(devVars) ? /^API_TOKEN=(.+)$/m.exec(readFileSync(devVars, "utf8"))?.[1]?.trim() : undefined;
  if (token) expect(output).not.toContain(token);
}

describe("npm start with a busy port", () => {
  it("exits non-zero naming the Worker's busy port and how to choose others, with no token", async () => {
    const busy = await holdPort();
    const { code, output } = await runStart({
      PORT: String(busy),
      DEMO_MCP_PORT: String(await freePort()),
      DEMO_OAUTH_PORT: String(await freePort()),
    });
    expect(code).not.toBe(0);
    expect(output).toContain(`127.0.0.1:${busy} for PORT`);
    expect(output).toMatch(/PORT=\d+ DEMO_MCP_PORT=\d+ DEMO_OAUTH_PORT=\d+ npm start/);
    expect(output).not.toMatch(/serving/i);
    expectNoToken(output);
  });

  it("exits non-zero naming the demo server's busy port", async () => {
    const busy = await holdPort();
    const { code, output } = await runStart({
      PORT: String(await freePort()),
      DEMO_MCP_PORT: String(busy),
      DEMO_OAUTH_PORT: String(await freePort()),
    });
    expect(code).not.toBe(0);
    expect(output).toContain(`127.0.0.1:${busy} for DEMO_MCP_PORT`);
    expectNoToken(output);
  });
});

describe("npm start with a short API_TOKEN (contract section 18: at least 32 characters)", () => {
  it("refuses before serving, naming API_TOKEN and how to fix it, and leaves the file exactly as it was", async () => {
    const dir = await mkdtemp(join(tmpdir(), "aee-start-"));
    try {
      const settings = join(dir, "short.vars");
      const text = newDevVars("local-abcdefghijklmnopqrstuvwx", 3001, localSettings(8787)); // 30 characters, as earlier starts wrote
      await writeFile(settings, text);
      const { code, output } = await runStart(
        { DEV_VARS_FILE: settings, PORT: "8787", DEMO_MCP_PORT: String(await freePort()), DEMO_OAUTH_PORT: String(await freePort()) },
        BAD_CONFIG_EXIT_MS,
      );
      expect(code).not.toBe(0);
      expect(output).toContain("API_TOKEN: at least 32 characters");
      expect(output).toContain(`Fix API_TOKEN in ${settings} (or delete ${settings}`);
      expect(output).not.toMatch(/Replaced|serving/i);
      expect(readFileSync(settings, "utf8")).toBe(text);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("npm start with a bad setting", () => {
  it("exits non-zero within seconds, in one paragraph naming the setting, before serving anything", async () => {
    const dir = await mkdtemp(join(tmpdir(), "aee-start-"));
    try {
      const settings = join(dir, "bad.vars");
      await writeFile(
        settings,
        `API_TOKEN=local-test-token-0123456789abcdefghijkl\nTOOL_POLICY='{"mcp__demo__create_dashboard":{"level":"sometimes"}}'\n`,
      );
      const { code, output } = await runStart(
        {
          DEV_VARS_FILE: settings,
          PORT: String(await freePort()),
          DEMO_MCP_PORT: String(await freePort()),
          DEMO_OAUTH_PORT: String(await freePort()),
        },
        BAD_CONFIG_EXIT_MS,
      );
      expect(code).not.toBe(0);
      expect(output).toContain("TOOL_POLICY.mcp__demo__create_dashboard.level");
      expect(output).toContain(`Fix TOOL_POLICY in ${settings}`);
      // One paragraph: no migration table, no wrangler output, nothing served.
      expect(output.trim().split("\n")).toHaveLength(1);
      expect(output).not.toMatch(/serving|migrations|storage-pool/i);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The README's walk-through on `npm start`'s own settings: the dashboard its
 * first example creates (dash-1), then "A question mid-call": the demo server
 * (MCP 2026-07-28) asks its question through the engine, the answer goes back
 * in the follow-up, and the report is scheduled once.
 */
async function questionMidCall(engineUrl: string, token: string, demoUrl: string): Promise<void> {
  const engine = new EngineClient({ baseUrl: engineUrl, token });
  const runToEnd = async (message: string, script: ScriptTurn[]): Promise<EngineEvent[]> => {
    const { run_id: runId } = await engine.trigger({ message, channel_id: "C-start", script });
    const events: EngineEvent[] = [];
    for await (const event of engine.events(runId)) {
      events.push(event);
      if (event.type === "approval_requested") await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
      if (event.type === "human_input_requested") {
        expect(event).toMatchObject({ input_id: "report-1:1:schedule", tool_call_id: "report-1" });
        expect(event.requested_schema).toMatchObject({ type: "object", required: ["frequency", "recipient"] });
        // The optional multi-select too (formats: an array of the enum's values).
        expect(event.requested_schema).toMatchObject({
          properties: { formats: { type: "array", maxItems: 2, items: { type: "string", enum: ["pdf", "csv"] } } },
        });
        await engine.answerInput(runId, event.input_id ?? "", {
          action: "accept",
          content: { frequency: "weekly", recipient: "#ops", formats: ["pdf"] },
        });
      }
    }
    return events;
  };
  const created = await runToEnd("make me a latency dashboard", [
    {
      tool_calls: [
        { tool_name: "mcp__demo__create_dashboard", tool_call_id: "write-1", arguments: { title: "Latency", panels: ["p50", "p99"] } },
      ],
    },
    { text: "Created." },
  ]);
  expect(created.find((e) => e.type === "tool_execution")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
  const events = await runToEnd("send me the latency report", [
    { tool_calls: [{ tool_name: "mcp__demo__schedule_report", tool_call_id: "report-1", arguments: { dashboard_id: "dash-1" } }] },
    { text: "Scheduled." },
  ]);
  expect(events.map((e) => e.type)).toEqual([
    "run_started",
    "tool_started",
    "approval_requested",
    "approval_resolved",
    "tool_execution_started",
    "human_input_requested",
    "human_input_received",
    "tool_execution",
    "tool_completed",
    "assistant_message",
    "run_completed",
  ]);
  expect(events.find((e) => e.type === "tool_execution")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
  const state = (await (await fetch(`${demoUrl}/control/state`)).json()) as { reports?: unknown[] };
  expect(state.reports).toEqual([
    expect.objectContaining({ id: "report-1", dashboard_id: "dash-1", frequency: "weekly", formats: ["pdf"] }),
  ]);
  const calls = (await (await fetch(`${demoUrl}/control/calls`)).json()) as { by_tool?: Record<string, number> };
  expect(calls.by_tool?.schedule_report).toBe(2);
}

/**
 * The README's "Connect a hosted MCP server with OAuth", locally: signed in to
 * the console as token:root, `mcp connect hosted`'s authorization URL opened
 * (the OAuth demo's authorization server redirects at once, as after a
 * person's consent), the callback delivered with the console's cookie, then
 * a call to the OAuth demo's tool runs with the token.
 */
async function oauthConnect(base: string, token: string): Promise<void> {
  const session = await fetch(`${base}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ token }),
  });
  expect(session.status).toBe(204);
  const cookie = session.headers.get("set-cookie")?.split(";")[0] ?? "";
  const started = await fetch(`${base}/api/mcp/servers/hosted/connect`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
  expect(started.status).toBe(200);
  const { authorization_url: authorizationUrl } = (await started.json()) as { authorization_url: string };
  const consent = await fetch(authorizationUrl, { redirect: "manual" });
  expect(consent.status).toBe(302);
  const callback = new URL(consent.headers.get("location") ?? "");
  expect(callback.origin + callback.pathname).toBe(`${base}/oauth/callback`);
  expect((await fetch(callback, { headers: { cookie } })).status).toBe(200);
  const engine = new EngineClient({ baseUrl: base, token });
  const { run_id: runId } = await engine.trigger({
    message: "make an item",
    script: [{ tool_calls: [{ tool_name: "mcp__hosted__create_item", tool_call_id: "item-1", arguments: { name: "first" } }] }],
  });
  let execution: EngineEvent | undefined;
  for await (const event of engine.events(runId)) {
    if (event.type === "approval_requested") await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
    if (event.type === "tool_execution") execution = event;
  }
  expect(execution).toMatchObject({ execution_status: "executed", result: { is_error: false } });
}

describe("npm start stopped with SIGTERM", () => {
  it(
    "serves the README's question mid-call on its own settings, then stops wrangler, workerd and the demo server: both ports are free again",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "aee-start-"));
      const [port, demoPort, oauthPort] = [await freePort(), await freePort(), await freePort()];
      // A file as an older npm start left it (no console secret, no MCP_TOKEN_KEY, no PUBLIC_URL), with the
      // README's OAuth demo entry added to MCP_SERVERS and a misspelt setting.
      const vars = join(dir, "test.vars");
      const servers = { demo: { url: demoMcpUrl(demoPort), trust_annotations: true }, hosted: { url: demoMcpUrl(oauthPort), oauth: {} } };
      await writeFile(
        vars,
        `${newDevVars(`local-${"t".repeat(43)}`, demoPort).replace(/^MCP_SERVERS=.*$/m, `MCP_SERVERS='${JSON.stringify(servers)}'`)}TOOL_POLCY='{}'\n`,
      );
      const child = spawn(process.execPath, [TSX_CLI, join(PROJECT_ROOT, "scripts/start.ts")], {
        cwd: PROJECT_ROOT,
        env: {
          ...process.env,
          WRANGLER_SEND_METRICS: "false",
          DEV_VARS_FILE: vars,
          STATE_DIR: join(dir, "state"),
          PORT: String(port),
          DEMO_MCP_PORT: String(demoPort),
          DEMO_OAUTH_PORT: String(oauthPort),
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (d) => (output += String(d)));
      child.stderr.on("data", (d) => (output += String(d)));
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      try {
        await expect.poll(() => output, { timeout: SERVE_TIMEOUT_MS, interval: 250 }).toContain("The engine is serving");
        expect(await portFree(port)).toBe(false);
        expect(await portFree(demoPort)).toBe(false);
        const base = `http://127.0.0.1:${port}`;
        const written = readFileSync(vars, "utf8");
        const token = /^API_TOKEN=(.+)$/m.exec(written)?.[1]?.trim() ?? "";
        // What it added to the file, said before it started; a misspelling named once, with the setting meant.
        expect(output).toContain(`Added CONSOLE_SESSION_SECRET, MCP_TOKEN_KEY, PUBLIC_URL to ${vars}`);
        expect(written).toMatch(/^CONSOLE_SESSION_SECRET=[0-9a-f]{64}$/m);
        expect(written).toContain(`\nPUBLIC_URL=${base}\n`);
        expect(output.match(/TOOL_POLCY/g)).toHaveLength(1);
        expect(output).toContain("TOOL_POLCY (in");
        expect(output).toContain("did you mean TOOL_POLICY?");
        // The console is on, at the URL it prints.
        expect(output).toContain(`Console: ${base}/console`);
        expect((await fetch(`${base}/console`)).status).toBe(200);
        await questionMidCall(base, token, `http://127.0.0.1:${demoPort}`);
        await oauthConnect(base, token);
        // The retention recipe it prints fires the cron here, and what it deleted shows in its output.
        expect(output).toContain(`curl -s ${base}/cdn-cgi/local/scheduled`);
        expect(await (await fetch(`${base}/cdn-cgi/local/scheduled`)).text()).toBe("ok");
        await expect.poll(() => output, { timeout: 10_000, interval: 100 }).toMatch(/"msg":"retention: done","deleted":\{"receipts":\d+/);
        child.kill("SIGTERM");
        expect(await exited).toBe(0);
        // Its children were stopped as groups before it exited: nothing holds either port.
        expect(await portFree(port)).toBe(true);
        expect(await portFree(demoPort)).toBe(true);
      } finally {
        child.kill("SIGKILL");
        await rm(dir, { recursive: true, force: true });
      }
    },
    SERVE_TIMEOUT_MS + EXIT_TIMEOUT_MS,
  );
});

describe(".dev.vars follows the ports in use", () => {
  it("points the demo server's URL at DEMO_MCP_PORT and leaves everything else", () => {
    const first = newDevVars("local-x", 3001);
    const moved = withDemoPort(first, 4555);
    expect(moved).toContain(demoMcpUrl(4555));
    expect(moved).not.toContain(demoMcpUrl(3001));
    expect(moved.replace(demoMcpUrl(4555), demoMcpUrl(3001))).toBe(first);
    expect(withDemoPort(moved, 4555)).toBe(moved);
    // A developer's own servers and a non-loopback demo URL are not touched.
    const custom = `API_TOKEN=t\nMCP_SERVERS='{"demo":{"url":"https://demo.example/mcp"},"ops":{"url":"http://127.0.0.1:9/mcp"}}'\n`;
    expect(withDemoPort(custom, 4555)).toBe(custom);
  });

  it("marks its demo server trust_annotations (contract section 21), and moving the port keeps the mark", () => {
    const servers = (text: string) => JSON.parse(/^MCP_SERVERS='(.*)'$/m.exec(text)?.[1] ?? "null") as unknown;
    const first = newDevVars("local-x", 3001);
    expect(servers(first)).toEqual({ demo: { url: demoMcpUrl(3001), trust_annotations: true } });
    expect(servers(withDemoPort(first, 4555))).toEqual({ demo: { url: demoMcpUrl(4555), trust_annotations: true } });
  });
});

describe(".dev.vars: the console's and OAuth's local settings", () => {
  it("a new file has CONSOLE_SESSION_SECRET (32+ characters), MCP_TOKEN_KEY (32 bytes) and PUBLIC_URL beside API_TOKEN", () => {
    const text = newDevVars("local-x", 3001, localSettings(8787));
    expect(text).toMatch(
      /^API_TOKEN=local-x\nCONSOLE_SESSION_SECRET=[0-9a-f]{64}\nMCP_TOKEN_KEY=\S+\nPUBLIC_URL=http:\/\/127\.0\.0\.1:8787\n/m,
    );
    expect(Buffer.from(/^MCP_TOKEN_KEY=(\S+)$/m.exec(text)?.[1] ?? "", "base64")).toHaveLength(32);
  });

  it("adds only what a file lacks, at its end, and names what it added; an existing value, even a short one, stays", () => {
    const old = "API_TOKEN=short\nCONSOLE_SESSION_SECRET=mine\n";
    const { text, added } = withLocalSettings(old, { CONSOLE_SESSION_SECRET: "new", MCP_TOKEN_KEY: "k", PUBLIC_URL: "u" });
    expect(added).toEqual(["MCP_TOKEN_KEY", "PUBLIC_URL"]);
    expect(text).toBe(`${old}MCP_TOKEN_KEY=k\nPUBLIC_URL=u\n`);
    expect(withLocalSettings(text, { MCP_TOKEN_KEY: "other" })).toEqual({ text, added: [] });
  });

  it("a loopback PUBLIC_URL follows PORT; any other is left alone", () => {
    expect(withWorkerPort("PUBLIC_URL=http://127.0.0.1:8787\n", 8788)).toBe("PUBLIC_URL=http://127.0.0.1:8788\n");
    expect(withWorkerPort("PUBLIC_URL=https://x.example\n", 8788)).toBe("PUBLIC_URL=https://x.example\n");
  });
});

describe("settings that look like ours but are not", () => {
  it("names a misspelt setting once, with the one it most likely means; a name far from every setting passes", () => {
    const warnings = unknownSettingWarnings(
      { TOOL_POLCY: "{}", MUTATION_BUGDET: "{}", api_token: "x", TOOL_POLICY: "{}", MY_TEAM_NAME: "ops", DEBUG: "1" },
      ".dev.vars",
    );
    expect(warnings).toEqual([
      "npm start: TOOL_POLCY (in .dev.vars) is not a setting of this engine and is ignored; did you mean TOOL_POLICY?",
      "npm start: MUTATION_BUGDET (in .dev.vars) is not a setting of this engine and is ignored; did you mean MUTATION_BUDGET?",
      "npm start: api_token (in .dev.vars) is not a setting of this engine and is ignored; did you mean API_TOKEN?",
    ]);
  });
});
