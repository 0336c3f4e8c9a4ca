/**
 * Tests for the demo MCP server (demo/mcp-server.ts), on the official v2 packages.
 *
 * The main suite spawns the server as `npm start` does (`npx tsx demo/mcp-server.ts`, MCP
 * 2026-07-28, stateless, SSE responses) and drives it with the v2 SDK's Client over Streamable
 * HTTP plus the /control API: its tools and annotations, the faults, and `schedule_report`,
 * which asks a question mid-call (input_required, then the follow-up with the answer and the
 * requestState). A second suite spawns the older kind the test suites use
 * (DEMO_MCP_ERA=2025-11-25: initialize and sessions, no server/discover). A third starts it
 * in-process to cover JSON responses and idle-session eviction, which need non-default options.
 */
import {
  Client,
  type CallToolResult,
  type InputRequiredResult,
  ProtocolError,
  ProtocolErrorCode,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startDemoMcpServer, type DemoMcpServer } from "../../demo/mcp-server.js";
import { startDemoMcpProcess, type DemoMcpProcess } from "../support/demo-mcp-process";

const FAULT_DELAY_MS = 400;
// Short client-side timeout for calls whose response is deliberately never delivered.
const DROPPED_CALL_TIMEOUT_MS = 1_000;
const SESSION_IDLE_TTL_MS = 200;
const MODERN = "2026-07-28";
const OLDER = "2025-11-25";

const MUTATING_TOOLS = ["create_alert_from_chart", "create_dashboard", "create_kpi", "update_dashboard"];
const READ_ONLY_TOOLS = ["get_dashboard", "list_dashboards", "echo"];
const DESTRUCTIVE_TOOLS = ["delete_dashboard"];
/** Only on the 2026-07-28 revision, which has input_required. */
const QUESTION_TOOL = "schedule_report";

interface Dashboard {
  id: string;
  title: string;
  panels: string[];
}
interface CallsSnapshot {
  total: number;
  by_tool: Record<string, number>;
  calls: { tool: string; arguments: unknown; at: string }[];
}
interface StateSnapshot {
  dashboards: Dashboard[];
  kpis: { id: string; name: string }[];
  alerts: { id: string; dashboard_id: string }[];
  reports: { id: string; dashboard_id: string; frequency: string; recipient: string }[];
}

// ---------------------------------------------------------------------------------------------
// Helpers

async function control<T>(mcpUrl: URL, method: "GET" | "POST", path: string, body?: string): Promise<{ status: number; json: T }> {
  const response = await fetch(new URL(path, mcpUrl), { method, body });
  return { status: response.status, json: (await response.json()) as T };
}
const getCalls = async (mcpUrl: URL) => (await control<CallsSnapshot>(mcpUrl, "GET", "/control/calls")).json;
const getState = async (mcpUrl: URL) => (await control<StateSnapshot>(mcpUrl, "GET", "/control/state")).json;
const openSessions = async (mcpUrl: URL) => (await control<{ open: number }>(mcpUrl, "GET", "/control/sessions")).json.open;

async function armFault(mcpUrl: URL, fault: Record<string, unknown>): Promise<void> {
  const { status } = await control(mcpUrl, "POST", "/control/faults", JSON.stringify(fault));
  expect(status).toBe(200);
}

/** A v2 client that negotiates the era (server/discover, else initialize) and can answer form questions. */
async function connectClient(mcpUrl: URL): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client(
    { name: "demo-mcp-server-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: "auto" } },
  );
  // Quiet: aborted streams (the drop faults) are reported here as well as through the call's promise.
  client.onerror = () => {};
  const transport = new StreamableHTTPClientTransport(mcpUrl, { reconnectionOptions: { maxRetries: 0 } as never });
  await client.connect(transport);
  return { client, transport };
}

async function callTool(client: Client, name: string, args: Record<string, unknown>, timeout?: number): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, timeout === undefined ? undefined : { timeout })) as CallToolResult;
}

/** One tools/call as sent, answered as given: an input_required comes back as a value, never answered by the SDK. */
async function rawCall(client: Client, params: Record<string, unknown>): Promise<CallToolResult | InputRequiredResult> {
  return (await client.request({ method: "tools/call", params } as never, { allowInputRequired: true } as never)) as
    | CallToolResult
    | InputRequiredResult;
}

function resultJson<T>(result: CallToolResult): T {
  expect(result.isError ?? false).toBe(false);
  const [first] = result.content;
  if (first?.type !== "text") throw new Error(`expected text content, got ${JSON.stringify(result.content)}`);
  return JSON.parse(first.text) as T;
}

async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// ---------------------------------------------------------------------------------------------
// Spawned process, 2026-07-28, SSE responses (what `npm start` runs)

describe("demo MCP server as a separate process (2026-07-28, stateless)", () => {
  let demo: DemoMcpProcess;
  let mcpUrl: URL;
  let client: Client;

  beforeAll(async () => {
    demo = await startDemoMcpProcess({ DEMO_MCP_ERA: MODERN });
    mcpUrl = new URL(demo.url);
    ({ client } = await connectClient(mcpUrl));
  });
  afterAll(async () => {
    await client?.close();
    await demo?.stop();
  });
  beforeEach(async () => {
    expect((await control(mcpUrl, "POST", "/control/reset")).status).toBe(200);
  });

  it("speaks 2026-07-28: the era came from server/discover, no initialize, no session", async () => {
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    expect(client.getProtocolEra()).toBe("modern");
    expect(await openSessions(mcpUrl)).toBe(0);
  });

  it("lists the nine tools with read-only, mutating and destructive annotations", async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()].sort()).toEqual([...MUTATING_TOOLS, ...READ_ONLY_TOOLS, ...DESTRUCTIVE_TOOLS, QUESTION_TOOL].sort());
    for (const name of [...MUTATING_TOOLS, QUESTION_TOOL]) {
      expect(byName.get(name)?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    }
    for (const name of READ_ONLY_TOOLS) {
      expect(byName.get(name)?.annotations).toMatchObject({ readOnlyHint: true });
    }
    for (const name of DESTRUCTIVE_TOOLS) {
      expect(byName.get(name)?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    }
    expect(byName.get("create_dashboard")?.inputSchema.required).toEqual(["title"]);
  });

  it("round-trips a dashboard through create, get, list and update", async () => {
    const created = resultJson<Dashboard>(await callTool(client, "create_dashboard", { title: "Checkout", panels: ["p95 latency"] }));
    expect(created).toMatchObject({ id: "dash-1", title: "Checkout", panels: ["p95 latency"] });

    expect(resultJson<Dashboard>(await callTool(client, "get_dashboard", { dashboard_id: "dash-1" }))).toEqual(created);
    expect(resultJson<{ dashboards: Dashboard[] }>(await callTool(client, "list_dashboards", {}))).toEqual({ dashboards: [created] });

    const updated = resultJson<Dashboard>(await callTool(client, "update_dashboard", { dashboard_id: "dash-1", title: "Checkout v2" }));
    expect(updated).toMatchObject({ id: "dash-1", title: "Checkout v2", panels: ["p95 latency"] });
  });

  it("creates KPIs and alerts, and rejects alerts on unknown dashboards", async () => {
    resultJson(await callTool(client, "create_dashboard", { title: "API" }));
    expect(resultJson(await callTool(client, "create_kpi", { name: "error rate", query: "rate(errors)", target: 0.01 }))).toMatchObject({
      id: "kpi-1",
      target: 0.01,
    });
    expect(
      resultJson(await callTool(client, "create_alert_from_chart", { dashboard_id: "dash-1", chart: "p95", threshold: 500 })),
    ).toMatchObject({ id: "alert-1", dashboard_id: "dash-1", channel: null });
    const rejected = await callTool(client, "create_alert_from_chart", { dashboard_id: "dash-9", chart: "p95", threshold: 1 });
    expect(rejected.isError).toBe(true);

    const state = await getState(mcpUrl);
    expect(state.kpis).toHaveLength(1);
    expect(state.alerts).toHaveLength(1);
  });

  it("answers update_dashboard on an unknown id with a tool error", async () => {
    const result = await callTool(client, "update_dashboard", { dashboard_id: "dash-404", title: "nope" });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain("dash-404");
    expect((await getState(mcpUrl)).dashboards).toEqual([]);
  });

  it("echo answers with its arguments as a text line and as JSON", async () => {
    const result = await callTool(client, "echo", { a: "x", n: 2 });
    expect(result.content).toEqual([
      { type: "text", text: "echo: a=x n=2" },
      { type: "text", text: JSON.stringify({ a: "x", n: 2 }) },
    ]);
  });

  it("counts every tools/call per tool and in total", async () => {
    await callTool(client, "create_dashboard", { title: "A" });
    await callTool(client, "create_dashboard", { title: "B" });
    await callTool(client, "list_dashboards", {});
    await client.listTools(); // not a tools/call: not counted

    const calls = await getCalls(mcpUrl);
    expect(calls.total).toBe(3);
    expect(calls.by_tool).toMatchObject({ create_dashboard: 2, list_dashboards: 1, get_dashboard: 0, schedule_report: 0 });
    expect(calls.calls.map((call) => [call.tool, call.arguments])).toEqual([
      ["create_dashboard", { title: "A" }],
      ["create_dashboard", { title: "B" }],
      ["list_dashboards", {}],
    ]);
    expect(Number.isNaN(Date.parse(calls.calls[0]!.at))).toBe(false);
    // Every HTTP request, by method: on 2026-07-28 each call is exactly one request, with no handshake.
    const requests = (await control<{ total: number; by_method: Record<string, number> }>(mcpUrl, "GET", "/control/requests")).json;
    expect(requests).toEqual({ total: 4, by_method: { "tools/call": 3, "tools/list": 1 } });
  });

  it("delay fault: the call succeeds after at least delay_ms", async () => {
    await armFault(mcpUrl, { tool: "list_dashboards", mode: "delay", delay_ms: FAULT_DELAY_MS });
    const startedMs = performance.now();
    const result = await callTool(client, "list_dashboards", {});
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(FAULT_DELAY_MS);
    expect(resultJson(result)).toEqual({ dashboards: [] });

    expect((await control<{ armed: unknown[] }>(mcpUrl, "GET", "/control/faults")).json.armed).toEqual([]);
    expect((await getCalls(mcpUrl)).by_tool.list_dashboards).toBe(1);
  });

  it("error fault: JSON-RPC error for `times` calls, no state change, every call counted", async () => {
    await armFault(mcpUrl, { tool: "create_dashboard", mode: "error", times: 2 });
    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await callTool(client, "create_dashboard", { title: "Doomed" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).code).toBe(ProtocolErrorCode.InternalError);
    }
    expect((await getState(mcpUrl)).dashboards).toEqual([]);

    // Disarmed after two calls; the id counter never moved.
    expect(resultJson<Dashboard>(await callTool(client, "create_dashboard", { title: "Lives" })).id).toBe("dash-1");
    expect((await getCalls(mcpUrl)).by_tool.create_dashboard).toBe(3);
  });

  it("commit_then_drop fault (SSE): the stream breaks before the result, yet the dashboard was committed once", async () => {
    await armFault(mcpUrl, { tool: "create_dashboard", mode: "commit_then_drop" });
    const error = await callTool(client, "create_dashboard", { title: "Ambiguous" }, DROPPED_CALL_TIMEOUT_MS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);

    const state = await getState(mcpUrl);
    expect(state.dashboards.map((dashboard) => dashboard.title)).toEqual(["Ambiguous"]);
    expect((await getCalls(mcpUrl)).by_tool.create_dashboard).toBe(1);
    // Nothing to survive: the next request is its own exchange.
    expect(resultJson<{ dashboards: Dashboard[] }>(await callTool(client, "list_dashboards", {})).dashboards).toHaveLength(1);
  });

  it("reset clears state, counters and armed faults", async () => {
    await callTool(client, "create_dashboard", { title: "Temp" });
    await armFault(mcpUrl, { tool: "create_kpi", mode: "error" });

    expect((await control(mcpUrl, "POST", "/control/reset")).status).toBe(200);

    expect(await getState(mcpUrl)).toEqual({ dashboards: [], kpis: [], alerts: [], reports: [] });
    expect((await getCalls(mcpUrl)).total).toBe(0);
    expect(resultJson<{ id: string }>(await callTool(client, "create_kpi", { name: "k", query: "q" })).id).toBe("kpi-1");
  });

  it.each([
    ["invalid JSON", "{not json"],
    ["an empty body", ""],
    ["an unknown tool", JSON.stringify({ tool: "drop_database", mode: "error" })],
    ["an unknown mode", JSON.stringify({ tool: "create_dashboard", mode: "explode" })],
    ["delay without delay_ms", JSON.stringify({ tool: "create_dashboard", mode: "delay" })],
    ["times of 0", JSON.stringify({ tool: "create_dashboard", mode: "error", times: 0 })],
    ["an unknown field", JSON.stringify({ tool: "create_dashboard", mode: "error", tims: 2 })],
  ])("rejects a fault body with %s as 400 invalid_request", async (_label, body) => {
    const { status, json } = await control<{ error: string; message: string }>(mcpUrl, "POST", "/control/faults", body);
    expect(status).toBe(400);
    expect(json.error).toBe("invalid_request");
    expect(json.message.length).toBeGreaterThan(0);
    expect((await control<{ armed: unknown[] }>(mcpUrl, "GET", "/control/faults")).json.armed).toEqual([]);
  });

  describe("schedule_report: a question mid-call", () => {
    beforeEach(async () => {
      await callTool(client, "create_dashboard", { title: "Checkout" });
    });

    /** The first round: input_required with one form question and a requestState. */
    async function ask(): Promise<InputRequiredResult> {
      const first = await rawCall(client, { name: QUESTION_TOOL, arguments: { dashboard_id: "dash-1" } });
      expect(first).toMatchObject({ resultType: "input_required" });
      return first as InputRequiredResult;
    }

    it("asks one form question with a requested schema, and schedules nothing yet", async () => {
      const first = await ask();
      expect(Object.keys(first.inputRequests ?? {})).toEqual(["schedule"]);
      expect(first.inputRequests?.schedule).toMatchObject({
        method: "elicitation/create",
        params: {
          mode: "form",
          message: "How often should the report of dash-1 go out, and to whom?",
          requestedSchema: {
            type: "object",
            properties: {
              frequency: { type: "string", enum: ["daily", "weekly"] },
              recipient: { type: "string" },
              // An optional multi-select enum (MCP's UntitledMultiSelectEnumSchema).
              formats: { type: "array", maxItems: 2, items: { type: "string", enum: ["pdf", "csv"] } },
            },
            required: ["frequency", "recipient"],
          },
        },
      });
      expect(typeof first.requestState).toBe("string");
      expect((await getState(mcpUrl)).reports).toEqual([]);
    });

    it("completes on the follow-up that carries the accepted answer and the requestState", async () => {
      const first = await ask();
      const done = await rawCall(client, {
        name: QUESTION_TOOL,
        arguments: { dashboard_id: "dash-1" },
        inputResponses: { schedule: { action: "accept", content: { frequency: "weekly", recipient: "#ops", formats: ["csv", "pdf"] } } },
        requestState: first.requestState,
      });
      expect(resultJson(done as CallToolResult)).toMatchObject({
        scheduled: true,
        report: { id: "report-1", dashboard_id: "dash-1", frequency: "weekly", recipient: "#ops", formats: ["csv", "pdf"] },
      });
      expect((await getState(mcpUrl)).reports).toHaveLength(1);
      // Each round is its own tools/call, as the engine's `sends` counts them.
      expect((await getCalls(mcpUrl)).by_tool.schedule_report).toBe(2);
    });

    it.each(["decline", "cancel"] as const)("schedules nothing when the question is answered %s", async (action) => {
      const first = await ask();
      const done = await rawCall(client, {
        name: QUESTION_TOOL,
        arguments: { dashboard_id: "dash-1" },
        inputResponses: { schedule: { action } },
        requestState: first.requestState,
      });
      expect(resultJson(done as CallToolResult)).toEqual({ scheduled: false, dashboard_id: "dash-1", answer: action });
      expect((await getState(mcpUrl)).reports).toEqual([]);
    });

    it("refuses a follow-up whose requestState was tampered with, or that has none", async () => {
      const first = await ask();
      const answer = { schedule: { action: "accept", content: { frequency: "daily", recipient: "#ops" } } };
      const forged = await rawCall(client, {
        name: QUESTION_TOOL,
        arguments: { dashboard_id: "dash-1" },
        inputResponses: answer,
        requestState: `${first.requestState}x`,
      }).catch((e: unknown) => e);
      expect(forged).toBeInstanceOf(ProtocolError);
      expect((forged as ProtocolError).code).toBe(ProtocolErrorCode.InvalidParams);
      const stateless = await rawCall(client, { name: QUESTION_TOOL, arguments: { dashboard_id: "dash-1" }, inputResponses: answer });
      expect((stateless as CallToolResult).isError).toBe(true);
      expect((await getState(mcpUrl)).reports).toEqual([]);
    });

    it("refuses an accepted answer that does not fit the form", async () => {
      const first = await ask();
      const done = await rawCall(client, {
        name: QUESTION_TOOL,
        arguments: { dashboard_id: "dash-1" },
        inputResponses: { schedule: { action: "accept", content: { frequency: "hourly", recipient: "#ops" } } },
        requestState: first.requestState,
      });
      expect((done as CallToolResult).isError).toBe(true);
      expect((await getState(mcpUrl)).reports).toEqual([]);
    });
  });

  it("has written nothing to stderr", () => {
    expect(demo.stderr()).toBe("");
  });
});

// ---------------------------------------------------------------------------------------------
// Spawned process, the older revision (what the test suites run)

describe("demo MCP server as a separate process (2025-11-25, initialize and sessions)", () => {
  let demo: DemoMcpProcess;
  let mcpUrl: URL;
  let client: Client;

  beforeAll(async () => {
    demo = await startDemoMcpProcess({ DEMO_MCP_ERA: OLDER });
    mcpUrl = new URL(demo.url);
    ({ client } = await connectClient(mcpUrl));
  });
  afterAll(async () => {
    await client?.close();
    await demo?.stop();
  });
  beforeEach(async () => {
    expect((await control(mcpUrl, "POST", "/control/reset")).status).toBe(200);
  });

  it("does not know server/discover: the v2 client falls back to initialize and a session", async () => {
    expect(client.getProtocolEra()).toBe("legacy");
    expect(client.getNegotiatedProtocolVersion()).toBe(OLDER);
    expect(await openSessions(mcpUrl)).toBeGreaterThanOrEqual(1);
  });

  it("lists the eight tools, without the question one, with their annotations", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...MUTATING_TOOLS, ...READ_ONLY_TOOLS, ...DESTRUCTIVE_TOOLS].sort());
    expect(tools.find((tool) => tool.name === "delete_dashboard")?.annotations).toMatchObject({ destructiveHint: true });
  });

  it("changes a tool as later listings show it (another description, one more input, removed) until the reset", async () => {
    const listed = async () => {
      const fresh = await connectClient(mcpUrl);
      try {
        return (await fresh.client.listTools()).tools;
      } finally {
        await fresh.client.close();
      }
    };
    const change = (body: Record<string, unknown>) => control(mcpUrl, "POST", "/control/tools", JSON.stringify(body));
    expect((await change({ tool: "create_kpi", description: "Changed.", add_input: "owner" })).status).toBe(200);
    expect((await change({ tool: "update_dashboard", removed: true })).status).toBe(200);
    expect((await change({ tool: "create_kpi", removed: false })).status).toBe(400);
    expect((await change({ tool: "no_such_tool", description: "x" })).status).toBe(400);
    const tools = await listed();
    const kpi = tools.find((tool) => tool.name === "create_kpi");
    expect(kpi?.description).toBe("Changed.");
    expect(Object.keys(kpi?.inputSchema.properties ?? {}).sort()).toEqual(["name", "owner", "query", "target"]);
    expect(tools.map((tool) => tool.name)).not.toContain("update_dashboard");
    // The changed tool still runs with its new input.
    const fresh = await connectClient(mcpUrl);
    expect(resultJson<{ id: string }>(await callTool(fresh.client, "create_kpi", { name: "k", query: "q", owner: "o" })).id).toMatch(
      /^kpi-/,
    );
    await fresh.client.close();
    expect((await control(mcpUrl, "POST", "/control/reset")).status).toBe(200);
    const restored = await listed();
    expect(restored.find((tool) => tool.name === "create_kpi")?.description).toBe(
      "Create a KPI backed by a query, with an optional numeric target.",
    );
    expect(restored.map((tool) => tool.name)).toContain("update_dashboard");
  });

  it("commit_then_drop fault (SSE): the call gets no answer, yet the dashboard was committed once, and the session survives", async () => {
    await armFault(mcpUrl, { tool: "create_dashboard", mode: "commit_then_drop" });
    const error = await callTool(client, "create_dashboard", { title: "Ambiguous" }, DROPPED_CALL_TIMEOUT_MS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((await getState(mcpUrl)).dashboards.map((dashboard) => dashboard.title)).toEqual(["Ambiguous"]);
    expect((await getCalls(mcpUrl)).by_tool.create_dashboard).toBe(1);
    expect(resultJson<{ dashboards: Dashboard[] }>(await callTool(client, "list_dashboards", {})).dashboards).toHaveLength(1);
  });

  it("serves stateless clients that send tools/call without a session", async () => {
    const response = await fetch(mcpUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "create_dashboard", arguments: { title: "Raw" } },
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("mcp-session-id")).toBeNull();
    const dataLine = (await response.text()).split("\n").find((line) => line.startsWith("data: "));
    const message = JSON.parse(dataLine!.slice("data: ".length)) as { id: number; result: CallToolResult };
    expect(message.id).toBe(1);
    expect(resultJson<Dashboard>(message.result).title).toBe("Raw");
    expect((await getCalls(mcpUrl)).by_tool.create_dashboard).toBe(1);
  });

  it("forgets a session once its client deletes it", async () => {
    const before = await openSessions(mcpUrl);
    const { client: shortLived, transport } = await connectClient(mcpUrl);
    expect(await openSessions(mcpUrl)).toBe(before + 1);
    await transport.terminateSession();
    await shortLived.close();
    expect(await openSessions(mcpUrl)).toBe(before);
  });

  it("has written nothing to stderr", () => {
    expect(demo.stderr()).toBe("");
  });
});

describe("demo MCP server with a state file (DEMO_MCP_STATE_FILE, what npm start keeps under STATE_DIR)", () => {
  it("keeps dash-1 and its alert across a restart, and numbers the next dashboard dash-2", async () => {
    const dir = await mkdtemp(join(tmpdir(), "aee-demo-state-"));
    const env = { DEMO_MCP_ERA: MODERN, DEMO_MCP_STATE_FILE: join(dir, "state", "demo.json") };
    try {
      const first = await startDemoMcpProcess(env);
      const one = await connectClient(new URL(first.url));
      const made = resultJson<Dashboard>(await callTool(one.client, "create_dashboard", { title: "Latency", panels: ["p50", "p99"] }));
      expect(made.id).toBe("dash-1");
      resultJson(await callTool(one.client, "create_alert_from_chart", { dashboard_id: "dash-1", chart: "p99", threshold: 250 }));
      await one.client.close();
      await first.stop();

      const second = await startDemoMcpProcess(env);
      try {
        const url = new URL(second.url);
        const state = await getState(url);
        expect(state.dashboards).toEqual([expect.objectContaining({ id: "dash-1", title: "Latency", panels: ["p50", "p99"] })]);
        expect(state.alerts).toEqual([expect.objectContaining({ dashboard_id: "dash-1" })]);
        const two = await connectClient(url);
        expect(resultJson<Dashboard>(await callTool(two.client, "create_dashboard", { title: "Errors" })).id).toBe("dash-2");
        await two.client.close();
      } finally {
        await second.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("demo MCP server shutdown", () => {
  it("exits on SIGTERM and stops listening", async () => {
    const demo = await startDemoMcpProcess({ DEMO_MCP_ERA: MODERN });
    await demo.stop(); // SIGTERM first; the server exits within its grace
    expect(demo.child.exitCode !== null || demo.child.signalCode !== null).toBe(true);
    await expect(fetch(new URL("/control/calls", demo.url))).rejects.toThrow();
  });
});

// ---------------------------------------------------------------------------------------------
// In-process, JSON responses and a short idle TTL

describe.each([MODERN, OLDER] as const)("demo MCP server in-process with JSON responses (%s)", (era) => {
  let server: DemoMcpServer;
  let mcpUrl: URL;
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startDemoMcpServer({ port: 0, era, jsonResponse: true, sessionIdleTtlMs: SESSION_IDLE_TTL_MS });
    mcpUrl = new URL(server.url);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });
  afterAll(async () => {
    await server?.close();
  });

  it("commit_then_drop fault (JSON): the call fails at once with a connection error, state committed", async () => {
    const { client } = await connectClient(mcpUrl);
    clients.push(client);
    await armFault(mcpUrl, { tool: "create_kpi", mode: "commit_then_drop" });

    const startedMs = performance.now();
    const error = await callTool(client, "create_kpi", { name: "p99", query: "q" }, DROPPED_CALL_TIMEOUT_MS).catch((e: unknown) => e);
    expect(performance.now() - startedMs).toBeLessThan(DROPPED_CALL_TIMEOUT_MS);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ProtocolError);

    expect((await getState(mcpUrl)).kpis.map((kpi) => kpi.name)).toEqual(["p99"]);
    expect((await getCalls(mcpUrl)).by_tool.create_kpi).toBe(1);
    expect(resultJson<{ id: string }>(await callTool(client, "create_kpi", { name: "next", query: "q" })).id).toBe("kpi-2");
  });
});

describe("demo MCP server in-process, sessions", () => {
  it("2025-11-25: evicts sessions whose clients went away without deleting them", async () => {
    const server = await startDemoMcpServer({ port: 0, era: OLDER, sessionIdleTtlMs: SESSION_IDLE_TTL_MS });
    const mcpUrl = new URL(server.url);
    try {
      const { client } = await connectClient(mcpUrl);
      await callTool(client, "list_dashboards", {});
      expect(await openSessions(mcpUrl)).toBe(1);
      await client.close(); // the SDK client's close() sends no DELETE
      await eventually(async () => (await openSessions(mcpUrl)) === 0, SESSION_IDLE_TTL_MS * 20);
    } finally {
      await server.close();
    }
  });

  it("2026-07-28: keeps no session at all, every request is its own exchange", async () => {
    const server = await startDemoMcpServer({ port: 0, era: MODERN, sessionIdleTtlMs: SESSION_IDLE_TTL_MS });
    const mcpUrl = new URL(server.url);
    try {
      const { client, transport } = await connectClient(mcpUrl);
      expect(resultJson(await callTool(client, "list_dashboards", {}))).toEqual({ dashboards: [] });
      expect(transport.sessionId).toBeUndefined();
      expect(await openSessions(mcpUrl)).toBe(0);
      await client.close();
    } finally {
      await server.close();
    }
  });
});
