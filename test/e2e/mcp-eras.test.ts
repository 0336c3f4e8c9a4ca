// The two MCP eras end to end (contract section 21), over loopback against
// real local servers: a stateless server of the 2026-07-28 revision only (the
// v2 server package, refusing initialize; test/support/stateless-mcp-server.ts)
// and the demo server, which speaks only the earlier revisions. One Worker
// names both. The era is learned with server/discover before any
// checkpoint; the stateless server gets the revision's headers and `_meta`
// on every request, never initialize or a session, and exactly one
// tools/call per approved mutation; the demo server gets initialize after
// the probe. GET /api/mcp/servers (and the CLI's `mcp list`) show each as
// last seen, without header values. A third server is one the engine did not
// write: the MCP maintainers' server-everything (an older-revision server
// with sessions), called for a read tool.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { EngineClient, type EngineEvent, type ScriptTurn } from "../../src/client";
import { demoCalls, demoReset } from "../support/e2e-client";
import { startEverythingMcpProcess, type EverythingMcpProcess } from "../support/everything-mcp-process";
import { STATELESS_API_KEY_HEADER, startStatelessMcpServer, type StatelessMcpServer } from "../support/stateless-mcp-server";
import { PROJECT_ROOT, startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const API_KEY = "stateless-api-key-s3cr3t";
const CREATE_NOTE = "mcp__stateless__create_note";
const LIST_NOTES = "mcp__stateless__list_notes";
const CREATE_DASHBOARD = "mcp__demo__create_dashboard";
const MODERN = "2026-07-28";

let stateless: StatelessMcpServer;
let everything: EverythingMcpProcess;
let server: WorkerServer;
let engine: EngineClient;

beforeAll(async () => {
  [stateless, everything] = await Promise.all([startStatelessMcpServer(API_KEY), startEverythingMcpProcess()]);
  server = await startWorkerServer({
    ...e2eVars(`${demo}/mcp`),
    APPROVAL_TIMEOUT_MS: "30000",
    MCP_SERVERS: JSON.stringify({
      stateless: { url: stateless.url, headers: { [STATELESS_API_KEY_HEADER]: API_KEY }, trust_annotations: true },
      demo: { url: `${demo}/mcp` },
      // Its readOnlyHint tools run without approval only because it is marked trusted.
      everything: { url: everything.url, trust_annotations: true },
    }),
    MUTATION_BUDGET: JSON.stringify({ [CREATE_NOTE]: 3, [CREATE_DASHBOARD]: 1 }),
  });
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await stateless?.stop();
  await everything?.stop();
});

beforeEach(async () => {
  await demoReset();
});

/** Runs `script` to its end, approving every approval it asks for. */
async function runApproving(script: ScriptTurn[]): Promise<EngineEvent[]> {
  const { run_id: runId } = await engine.trigger({ message: "m", channel_id: `C-eras-${Date.now()}`, script });
  const events: EngineEvent[] = [];
  for await (const event of engine.events(runId)) {
    events.push(event);
    if (event.type === "approval_requested") await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
  }
  return events;
}

const executionOf = (events: EngineEvent[], toolCallId: string) =>
  events.find((e): e is Extract<EngineEvent, { type: "tool_execution" }> => e.type === "tool_execution" && e.tool_call_id === toolCallId);

/** `approved-exec <args>` as a process against the Worker, to its exit. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, ENGINE_URL: server.url, ENGINE_TOKEN: server.token, NO_COLOR: "1" };
  delete env.API_TOKEN;
  const child = spawn(process.execPath, [join(PROJECT_ROOT, "dist/cli/main.js"), ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += String(d)));
  child.stderr.on("data", (d) => (stderr += String(d)));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })));
}

describe("MCP eras: a stateless 2026-07-28 server and an older one", () => {
  it("the stateless server refuses initialize: it is not a server that would also take the older handshake", async () => {
    const refused = await fetch(stateless.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", [STATELESS_API_KEY_HEADER]: API_KEY },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "probe", version: "0" } },
      }),
    });
    expect(refused.ok).toBe(false);
  });

  it("lists every configured server before any contact with nulls, and never a header value", async () => {
    const response = await fetch(`${server.url}/api/mcp/servers`, { headers: { authorization: `Bearer ${server.token}` } });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain(API_KEY);
    expect(JSON.parse(text)).toEqual({
      servers: [
        {
          server: "stateless",
          url: stateless.url,
          protocol_version: null,
          auth: "headers",
          trust_annotations: true,
          connected: null,
          tools: null,
          last_contact_at: null,
        },
        {
          server: "demo",
          url: `${demo}/mcp`,
          protocol_version: null,
          auth: "none",
          trust_annotations: false,
          connected: null,
          tools: null,
          last_contact_at: null,
        },
        {
          server: "everything",
          url: everything.url,
          protocol_version: null,
          auth: "none",
          trust_annotations: true,
          connected: null,
          tools: null,
          last_contact_at: null,
        },
      ],
    });
  });

  it("speaks 2026-07-28 to the stateless server (one tools/call, no initialize) and initialize to the older one", async () => {
    stateless.reset();
    const events = await runApproving([
      {
        tool_calls: [
          { tool_name: CREATE_NOTE, tool_call_id: "note", arguments: { text: "hello" } },
          { tool_name: LIST_NOTES, tool_call_id: "notes", arguments: {} },
          { tool_name: CREATE_DASHBOARD, tool_call_id: "dash", arguments: { title: "eras" } },
        ],
      },
    ]);
    expect(executionOf(events, "note")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(executionOf(events, "notes")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(executionOf(events, "dash")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(stateless.notes()).toEqual(["hello"]);
    expect(await demoCalls()).toMatchObject({ total: 1, by_tool: { create_dashboard: 1 } });

    const seen = stateless.seen();
    // Every request carried the key and reached the server; the era came from server/discover, not a tools/call.
    expect(seen.every((r) => r.status === 200)).toBe(true);
    expect(seen.map((r) => r.method)).not.toContain("initialize");
    expect(seen.filter((r) => r.method === "server/discover").length).toBeLessThanOrEqual(1);
    expect(seen.filter((r) => r.headers["mcp-session-id"] !== undefined)).toEqual([]);
    const calls = seen.filter((r) => r.method === "tools/call");
    expect(calls.map((r) => r.tool)).toEqual(["create_note", "list_notes"]);
    for (const request of seen) {
      expect(request.headers).toMatchObject({ "mcp-protocol-version": MODERN, "mcp-method": request.method });
      expect(request.meta).toMatchObject({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": { name: "approved-execution-engine" },
        "io.modelcontextprotocol/clientCapabilities": {},
      });
    }
    expect(calls.map((r) => r.headers["mcp-name"])).toEqual(["create_note", "list_notes"]);
  });

  it("learns the era once per server: a second run sends no probe and exactly one tools/call", async () => {
    stateless.reset();
    const events = await runApproving([{ tool_calls: [{ tool_name: CREATE_NOTE, tool_call_id: "again", arguments: { text: "again" } }] }]);
    expect(executionOf(events, "again")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    const methods = stateless.seen().map((r) => r.method);
    expect(methods).not.toContain("server/discover");
    expect(methods.filter((m) => m === "tools/call")).toEqual(["tools/call"]);
  });

  it("runs server-everything's read tool get-sum through the engine: no approval (readOnlyHint on a trusted server), the server's answer as the result", async () => {
    const events = await runApproving([
      { tool_calls: [{ tool_name: "mcp__everything__get-sum", tool_call_id: "sum", arguments: { a: 2, b: 40 } }] },
    ]);
    expect(events.find((e) => e.type === "tool_started" && e.tool_call_id === "sum")).toMatchObject({ approval_required: false });
    expect(events.filter((e) => e.type === "approval_requested")).toEqual([]);
    expect(executionOf(events, "sum")).toMatchObject({
      execution_status: "executed",
      result: { is_error: false, summary: expect.stringContaining("42") },
    });
    // It speaks an earlier revision: the engine fell back to initialize after its server/discover probe.
    const listed = Object.fromEntries((await engine.listMcpServers()).map((s) => [s.server, s]));
    expect(listed.everything).toMatchObject({ protocol_version: "2025-11-25", connected: true });
  });

  it("shows each server as last seen: the revision it speaks, its tools, its last contact", async () => {
    const listed = await engine.listMcpServers();
    const byName = Object.fromEntries(listed.map((s) => [s.server, s]));
    expect(byName.stateless).toMatchObject({ protocol_version: MODERN, connected: true, tools: 2, auth: "headers" });
    expect(byName.demo).toMatchObject({ protocol_version: "2025-11-25", connected: true, tools: 8, auth: "none" });
    for (const s of listed) expect(Date.parse(s.last_contact_at ?? "")).not.toBeNaN();

    const printed = await cli(["mcp", "list"]);
    expect(printed).toMatchObject({ code: 0, stderr: "" });
    const lines = printed.stdout.trim().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^stateless ${stateless.url} protocol=${MODERN} auth=headers tools=2 connected=yes last_contact=\\S+ trust_annotations$`,
        ),
      ),
      expect.stringMatching(new RegExp(`^demo ${demo}/mcp protocol=2025-11-25 auth=none tools=8 connected=yes last_contact=\\S+$`)),
      expect.stringMatching(
        new RegExp(
          `^everything ${everything.url} protocol=2025-11-25 auth=none tools=\\d+ connected=yes last_contact=\\S+ trust_annotations$`,
        ),
      ),
    ]);
    expect(printed.stdout).not.toContain(API_KEY);
  });
});

describe("MCP 2026-07-28 headers: Mcp-Param-* from the tool's x-mcp-header declarations", () => {
  it("mirrors an annotated argument into its Mcp-Param header, base64-wrapped when it is not plain ASCII, beside Mcp-Method and Mcp-Name", async () => {
    stateless.reset();
    // Not a plain ASCII field value (non-ASCII letters, trailing space): the revision wants =?base64?…?=.
    const text = "grüße aus Zürich ";
    const events = await runApproving([{ tool_calls: [{ tool_name: CREATE_NOTE, tool_call_id: "param", arguments: { text } }] }]);
    // The server (the v2 SDK) refuses a call whose Mcp-Param-Text is absent or disagrees with the body.
    expect(executionOf(events, "param")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(stateless.notes()).toEqual([text]);
    const calls = stateless.seen().filter((r) => r.method === "tools/call");
    expect(calls).toHaveLength(1);
    expect(calls[0]?.headers).toEqual({
      "mcp-protocol-version": MODERN,
      "mcp-method": "tools/call",
      "mcp-name": "create_note",
      "mcp-param-text": `=?base64?${Buffer.from(text, "utf8").toString("base64")}?=`,
    });
    // A plain value rides as it is; a tool without declarations (list_notes) gets no Mcp-Param header.
    stateless.reset();
    await runApproving([
      {
        tool_calls: [
          { tool_name: CREATE_NOTE, tool_call_id: "plain", arguments: { text: "plain note" } },
          { tool_name: LIST_NOTES, tool_call_id: "list", arguments: {} },
        ],
      },
    ]);
    const plain = stateless.seen().filter((r) => r.method === "tools/call");
    expect(plain.map((r) => [r.tool, r.headers["mcp-param-text"]])).toEqual([
      ["create_note", "plain note"],
      ["list_notes", undefined],
    ]);
  });
});

describe("crash invariants on a stateless server: SIGKILL mid-call", () => {
  it("the Worker killed while the tools/call is in flight: after the restart the call is executed(transport_error), its row outcome_unknown, and it was sent once", async () => {
    stateless.reset();
    const HOLD_MS = 1_500;
    stateless.holdNextCreate(HOLD_MS);
    const text = `crash ${Date.now()}`;
    const { run_id: runId } = await engine.trigger({
      message: "m",
      channel_id: `C-crash-${Date.now()}`,
      script: [{ tool_calls: [{ tool_name: CREATE_NOTE, tool_call_id: "crash", arguments: { text } }] }, { text: "done" }],
    });
    for await (const event of engine.events(runId)) {
      if (event.type !== "approval_requested") continue;
      await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
      break;
    }
    // The server has the call (counted on arrival) and is holding it: kill wrangler and workerd now.
    await expect.poll(() => stateless.arrivals(), { timeout: 10_000, interval: 20 }).toEqual([text]);
    const arrivedAt = Date.now();
    server = await server.crashAndRestart();
    engine = new EngineClient({ baseUrl: server.url, token: server.token });

    const events: EngineEvent[] = [];
    for await (const event of engine.events(runId)) events.push(event);
    expect(executionOf(events, "crash")).toMatchObject({
      execution_status: "executed",
      error: { code: "transport_error", message: expect.stringContaining("restarted") },
    });
    expect(events.at(-1)?.type).toBe("run_completed");
    const mutations = (await (await server.api(`/api/runs/${runId}/mutations`)).json()) as {
      mutations: { state: string; dispatched: boolean }[];
    };
    expect(mutations.mutations).toMatchObject([{ state: "outcome_unknown", dispatched: true }]);
    // Well past the server's hold: still exactly one arrival and one tools/call request, never a second send.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, arrivedAt + HOLD_MS + 500 - Date.now())));
    expect(stateless.arrivals()).toEqual([text]);
    expect(stateless.seen().filter((r) => r.method === "tools/call")).toHaveLength(1);
  });
});
