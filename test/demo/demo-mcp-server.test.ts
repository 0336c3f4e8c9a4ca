/**
 * Tests for the demo MCP server (demo/mcp-server.ts).
 *
 * The main suite spawns the server exactly as `npm start` and the e2e tests do
 * (`npx tsx demo/mcp-server.ts`, SSE responses) and drives it with the SDK's Client over
 * Streamable HTTP plus the /control API. A second suite starts it in-process to cover JSON
 * responses and idle-session eviction, which need non-default options.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startDemoMcpServer, type DemoMcpServer } from "../../demo/mcp-server.js";
import { startDemoMcpProcess, type DemoMcpProcess } from "../support/demo-mcp-process";

const FAULT_DELAY_MS = 400;
// Short client-side timeout for calls whose response is deliberately never delivered.
const DROPPED_CALL_TIMEOUT_MS = 1_000;
const SESSION_IDLE_TTL_MS = 200;

const MUTATING_TOOLS = ["create_alert_from_chart", "create_dashboard", "create_kpi", "update_dashboard"];
const READ_ONLY_TOOLS = ["get_dashboard", "list_dashboards", "echo"];
const DESTRUCTIVE_TOOLS = ["delete_dashboard"];

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
}

// ---------------------------------------------------------------------------------------------
// Helpers

interface SpawnedServer {
  demoProcess: DemoMcpProcess;
  mcpUrl: URL;
  stderr: () => string;
}

/** The server as its own process, started the way every other test and the benchmark start it. */
async function spawnServer(): Promise<SpawnedServer> {
  const demoProcess = await startDemoMcpProcess();
  return { demoProcess, mcpUrl: new URL(demoProcess.url), stderr: () => demoProcess.stderr() };
}

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

async function connectClient(mcpUrl: URL): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: "demo-mcp-server-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(mcpUrl);
  await client.connect(transport);
  return { client, transport };
}

async function callTool(client: Client, name: string, args: Record<string, unknown>, timeout?: number): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, timeout === undefined ? undefined : { timeout })) as CallToolResult;
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
// Spawned process, SSE responses (the default)

describe("demo MCP server as a separate process", () => {
  let server: SpawnedServer;
  let client: Client;

  beforeAll(async () => {
    server = await spawnServer();
    ({ client } = await connectClient(server.mcpUrl));
  });
  afterAll(async () => {
    await client?.close();
    if (server) await server.demoProcess.stop();
  });
  beforeEach(async () => {
    expect((await control(server.mcpUrl, "POST", "/control/reset")).status).toBe(200);
  });

  it("lists the eight tools with read-only, mutating and destructive annotations", async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()].sort()).toEqual([...MUTATING_TOOLS, ...READ_ONLY_TOOLS, ...DESTRUCTIVE_TOOLS].sort());
    for (const name of MUTATING_TOOLS) {
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
    ).toMatchObject({
      id: "alert-1",
      dashboard_id: "dash-1",
      channel: null,
    });
    const rejected = await callTool(client, "create_alert_from_chart", { dashboard_id: "dash-9", chart: "p95", threshold: 1 });
    expect(rejected.isError).toBe(true);

    const state = await getState(server.mcpUrl);
    expect(state.kpis).toHaveLength(1);
    expect(state.alerts).toHaveLength(1);
  });

  it("answers update_dashboard on an unknown id with a tool error", async () => {
    const result = await callTool(client, "update_dashboard", { dashboard_id: "dash-404", title: "nope" });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain("dash-404");
    expect((await getState(server.mcpUrl)).dashboards).toEqual([]);
  });

  it("counts every tools/call per tool and in total", async () => {
    await callTool(client, "create_dashboard", { title: "A" });
    await callTool(client, "create_dashboard", { title: "B" });
    await callTool(client, "list_dashboards", {});
    await client.listTools(); // not a tools/call: not counted

    const calls = await getCalls(server.mcpUrl);
    expect(calls.total).toBe(3);
    expect(calls.by_tool).toMatchObject({ create_dashboard: 2, list_dashboards: 1, get_dashboard: 0 });
    expect(calls.calls.map((call) => [call.tool, call.arguments])).toEqual([
      ["create_dashboard", { title: "A" }],
      ["create_dashboard", { title: "B" }],
      ["list_dashboards", {}],
    ]);
    expect(Number.isNaN(Date.parse(calls.calls[0]!.at))).toBe(false);
  });

  it("delay fault: the call succeeds after at least delay_ms", async () => {
    await armFault(server.mcpUrl, { tool: "list_dashboards", mode: "delay", delay_ms: FAULT_DELAY_MS });
    const startedMs = performance.now();
    const result = await callTool(client, "list_dashboards", {});
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(FAULT_DELAY_MS);
    expect(resultJson(result)).toEqual({ dashboards: [] });

    expect((await control<{ armed: unknown[] }>(server.mcpUrl, "GET", "/control/faults")).json.armed).toEqual([]);
    expect((await getCalls(server.mcpUrl)).by_tool.list_dashboards).toBe(1);
  });

  it("error fault: JSON-RPC error for `times` calls, no state change, every call counted", async () => {
    await armFault(server.mcpUrl, { tool: "create_dashboard", mode: "error", times: 2 });
    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await callTool(client, "create_dashboard", { title: "Doomed" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(ErrorCode.InternalError);
    }
    expect((await getState(server.mcpUrl)).dashboards).toEqual([]);

    // Disarmed after two calls; the id counter never moved.
    expect(resultJson<Dashboard>(await callTool(client, "create_dashboard", { title: "Lives" })).id).toBe("dash-1");
    expect((await getCalls(server.mcpUrl)).by_tool.create_dashboard).toBe(3);
  });

  it("commit_then_drop fault (SSE): the call times out, yet the dashboard was committed once", async () => {
    await armFault(server.mcpUrl, { tool: "create_dashboard", mode: "commit_then_drop" });
    const error = await callTool(client, "create_dashboard", { title: "Ambiguous" }, DROPPED_CALL_TIMEOUT_MS).catch((e: unknown) => e);
    // The SSE stream is cut after its headers, which the SDK client only reports via onerror:
    // the pending call is settled by the client's own timeout.
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(ErrorCode.RequestTimeout);

    const state = await getState(server.mcpUrl);
    expect(state.dashboards.map((dashboard) => dashboard.title)).toEqual(["Ambiguous"]);
    expect((await getCalls(server.mcpUrl)).by_tool.create_dashboard).toBe(1);

    // The session survives the dropped connection.
    expect(resultJson<{ dashboards: Dashboard[] }>(await callTool(client, "list_dashboards", {})).dashboards).toHaveLength(1);
  });

  it("reset clears state, counters and armed faults", async () => {
    await callTool(client, "create_dashboard", { title: "Temp" });
    await armFault(server.mcpUrl, { tool: "create_kpi", mode: "error" });

    expect((await control(server.mcpUrl, "POST", "/control/reset")).status).toBe(200);

    expect(await getState(server.mcpUrl)).toEqual({ dashboards: [], kpis: [], alerts: [] });
    expect((await getCalls(server.mcpUrl)).total).toBe(0);
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
    const { status, json } = await control<{ error: string; message: string }>(server.mcpUrl, "POST", "/control/faults", body);
    expect(status).toBe(400);
    expect(json.error).toBe("invalid_request");
    expect(json.message.length).toBeGreaterThan(0);
    expect((await control<{ armed: unknown[] }>(server.mcpUrl, "GET", "/control/faults")).json.armed).toEqual([]);
  });

  it("serves stateless clients that send tools/call without a session", async () => {
    const response = await fetch(server.mcpUrl, {
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
    expect((await getCalls(server.mcpUrl)).by_tool.create_dashboard).toBe(1);
  });

  it("forgets a session once its client deletes it", async () => {
    const before = await openSessions(server.mcpUrl);
    const { client: shortLived, transport } = await connectClient(server.mcpUrl);
    expect(await openSessions(server.mcpUrl)).toBe(before + 1);
    await transport.terminateSession();
    await shortLived.close();
    expect(await openSessions(server.mcpUrl)).toBe(before);
  });

  it("has written nothing to stderr", () => {
    expect(server.stderr()).toBe("");
  });
});

describe("demo MCP server shutdown", () => {
  it("exits on SIGTERM and stops listening", async () => {
    const { demoProcess, mcpUrl } = await spawnServer();
    await demoProcess.stop(); // SIGTERM first; the server exits within its grace
    expect(demoProcess.child.exitCode !== null || demoProcess.child.signalCode !== null).toBe(true);
    await expect(fetch(new URL("/control/calls", mcpUrl))).rejects.toThrow();
  });
});

// ---------------------------------------------------------------------------------------------
// In-process, JSON responses and a short idle TTL

describe("demo MCP server in-process with JSON responses", () => {
  let server: DemoMcpServer;
  let mcpUrl: URL;
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startDemoMcpServer({ port: 0, jsonResponse: true, sessionIdleTtlMs: SESSION_IDLE_TTL_MS });
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
    expect(error).toBeInstanceOf(TypeError); // undici's "fetch failed", cause: other side closed
    expect(error).not.toBeInstanceOf(McpError);

    expect((await getState(mcpUrl)).kpis.map((kpi) => kpi.name)).toEqual(["p99"]);
    expect((await getCalls(mcpUrl)).by_tool.create_kpi).toBe(1);
    expect(resultJson<{ id: string }>(await callTool(client, "create_kpi", { name: "next", query: "q" })).id).toBe("kpi-2");
  });

  it("evicts sessions whose clients went away without deleting them", async () => {
    const before = await openSessions(mcpUrl);
    const { client } = await connectClient(mcpUrl);
    await callTool(client, "list_dashboards", {});
    expect(await openSessions(mcpUrl)).toBe(before + 1);
    await client.close(); // the SDK client's close() sends no DELETE
    await eventually(async () => (await openSessions(mcpUrl)) === 0, SESSION_IDLE_TTL_MS * 20);
  });

  it("keeps a connected client's session past the idle TTL", async () => {
    // The SDK client holds a standalone GET stream open, which counts as activity.
    const { client } = await connectClient(mcpUrl);
    clients.push(client);
    await new Promise((resolve) => setTimeout(resolve, SESSION_IDLE_TTL_MS * 3));
    expect(resultJson(await callTool(client, "list_dashboards", {}))).toEqual({ dashboards: [] });
  });
});
