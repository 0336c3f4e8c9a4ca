/**
 * Demo MCP server: a stand-in observability tool provider for end-to-end tests and `npm start`.
 *
 * Responsibilities:
 *  - Serve seven observability tools (dashboards, KPIs, alerts; `delete_dashboard` the one its
 *    annotations call destructive) and `echo` (answers with its own arguments, so tests can see
 *    what a result echoing secrets does) over MCP Streamable HTTP at
 *    http://127.0.0.1:<port>/mcp, keeping all state in memory.
 *  - Accept both stateful clients (Mcp-Session-Id) and stateless ones (no session header),
 *    evicting sessions that are deleted or sit idle so per-call clients do not leak memory.
 *  - Expose a JSON control API under /control so tests can count tools/call requests, inspect
 *    state, reset, and arm per-call faults (delay, error, commit_then_drop).
 *  - Serve the same tools at /mcp-protected only with `Authorization: Bearer demo-mcp-token`
 *    (401 with WWW-Authenticate otherwise), for the health probe's authorization_required.
 *
 * Run as a separate process: `npx tsx demo/mcp-server.ts` (port from DEMO_MCP_PORT, default
 * 3001, 0 = any free port; DEMO_MCP_JSON_RESPONSE=1 answers with JSON instead of SSE). On start
 * it prints exactly one stdout line: `demo-mcp-server listening on http://127.0.0.1:<port>/mcp`.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  ErrorCode,
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type CallToolResult,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const HOST = "127.0.0.1";
const DEFAULT_PORT = 3001;
const MCP_PATH = "/mcp";
/** The same MCP endpoint behind a bearer token (contract section 22's authorization_required). */
const PROTECTED_MCP_PATH = "/mcp-protected";
const PROTECTED_MCP_TOKEN = "demo-mcp-token";
const MAX_BODY_BYTES = 1024 * 1024;
// Long enough for a client that pauses between calls, short enough that clients which close
// without DELETE (the SDK client's close() never sends one) do not pile up.
const DEFAULT_SESSION_IDLE_TTL_MS = 5 * 60_000;
const MAX_SESSION_SWEEP_INTERVAL_MS = 30_000;
const MAX_FAULT_DELAY_MS = 10 * 60_000;
// The SDK flushes SSE headers within a timer tick; this only bounds a pathological wait.
const SSE_HEADERS_WAIT_MS = 1_000;
const SHUTDOWN_GRACE_MS = 5_000;
// JSON-RPC implementation-defined codes, as the SDK's own transport uses them.
const SERVER_ERROR_CODE = -32000;
const SESSION_NOT_FOUND_CODE = -32001;

export const TOOL_NAMES = [
  "create_dashboard",
  "update_dashboard",
  "create_kpi",
  "create_alert_from_chart",
  "delete_dashboard",
  "list_dashboards",
  "get_dashboard",
  "echo",
] as const;
type ToolName = (typeof TOOL_NAMES)[number];

// ---------------------------------------------------------------------------------------------
// Domain state

interface Dashboard {
  id: string;
  title: string;
  panels: string[];
  created_at: string;
  updated_at: string;
}
interface Kpi {
  id: string;
  name: string;
  query: string;
  target: number | null;
  created_at: string;
}
interface Alert {
  id: string;
  dashboard_id: string;
  chart: string;
  threshold: number;
  channel: string | null;
  created_at: string;
}

class DemoState {
  private dashboards = new Map<string, Dashboard>();
  private kpis: Kpi[] = [];
  private alerts: Alert[] = [];
  private nextId = { dash: 1, kpi: 1, alert: 1 };

  reset(): void {
    this.dashboards.clear();
    this.kpis = [];
    this.alerts = [];
    this.nextId = { dash: 1, kpi: 1, alert: 1 };
  }

  createDashboard(title: string, panels: string[]): Dashboard {
    const now = new Date().toISOString();
    const dashboard = { id: `dash-${this.nextId.dash++}`, title, panels, created_at: now, updated_at: now };
    this.dashboards.set(dashboard.id, dashboard);
    return dashboard;
  }

  updateDashboard(id: string, changes: { title?: string; panels?: string[] }): Dashboard | undefined {
    const current = this.dashboards.get(id);
    if (!current) return undefined;
    const updated = { ...current, ...changes, updated_at: new Date().toISOString() };
    this.dashboards.set(id, updated);
    return updated;
  }

  deleteDashboard(id: string): Dashboard | undefined {
    const dashboard = this.dashboards.get(id);
    this.dashboards.delete(id);
    return dashboard;
  }

  getDashboard(id: string): Dashboard | undefined {
    return this.dashboards.get(id);
  }

  listDashboards(): Dashboard[] {
    return [...this.dashboards.values()];
  }

  createKpi(name: string, query: string, target: number | undefined): Kpi {
    const kpi = { id: `kpi-${this.nextId.kpi++}`, name, query, target: target ?? null, created_at: new Date().toISOString() };
    this.kpis.push(kpi);
    return kpi;
  }

  createAlert(input: Omit<Alert, "id" | "created_at">): Alert {
    const alert = { id: `alert-${this.nextId.alert++}`, ...input, created_at: new Date().toISOString() };
    this.alerts.push(alert);
    return alert;
  }

  snapshot(): { dashboards: Dashboard[]; kpis: Kpi[]; alerts: Alert[] } {
    return { dashboards: this.listDashboards(), kpis: [...this.kpis], alerts: [...this.alerts] };
  }
}

// ---------------------------------------------------------------------------------------------
// Tools

const MUTATING = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;
const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;

const jsonResult = (value: unknown): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value) }],
});
const toolError = (message: string): CallToolResult => ({
  content: [{ type: "text", text: message }],
  isError: true,
});
const unknownDashboard = (id: string): CallToolResult => toolError(`Unknown dashboard_id: ${id}`);

function registerTools(server: McpServer, state: DemoState): void {
  server.registerTool(
    "create_dashboard" satisfies ToolName,
    {
      description: "Create a dashboard. Returns the dashboard, including its id (dash-N).",
      inputSchema: { title: z.string().min(1), panels: z.array(z.string()).optional() },
      annotations: { ...MUTATING, idempotentHint: false },
    },
    ({ title, panels }) => jsonResult(state.createDashboard(title, panels ?? [])),
  );
  server.registerTool(
    "update_dashboard" satisfies ToolName,
    {
      description: "Change a dashboard's title and/or panels.",
      inputSchema: { dashboard_id: z.string(), title: z.string().min(1).optional(), panels: z.array(z.string()).optional() },
      annotations: { ...MUTATING, idempotentHint: true },
    },
    ({ dashboard_id, title, panels }) => {
      const changes = { ...(title === undefined ? {} : { title }), ...(panels === undefined ? {} : { panels }) };
      const updated = state.updateDashboard(dashboard_id, changes);
      return updated ? jsonResult(updated) : unknownDashboard(dashboard_id);
    },
  );
  server.registerTool(
    "create_kpi" satisfies ToolName,
    {
      description: "Create a KPI backed by a query, with an optional numeric target.",
      inputSchema: { name: z.string().min(1), query: z.string().min(1), target: z.number().optional() },
      annotations: { ...MUTATING, idempotentHint: false },
    },
    ({ name, query, target }) => jsonResult(state.createKpi(name, query, target)),
  );
  server.registerTool(
    "create_alert_from_chart" satisfies ToolName,
    {
      description: "Create an alert on a chart of an existing dashboard.",
      inputSchema: {
        dashboard_id: z.string(),
        chart: z.string().min(1),
        threshold: z.number(),
        channel: z.string().min(1).optional(),
      },
      annotations: { ...MUTATING, idempotentHint: false },
    },
    ({ dashboard_id, chart, threshold, channel }) => {
      if (!state.getDashboard(dashboard_id)) return unknownDashboard(dashboard_id);
      return jsonResult(state.createAlert({ dashboard_id, chart, threshold, channel: channel ?? null }));
    },
  );
  server.registerTool(
    "delete_dashboard" satisfies ToolName,
    {
      description: "Delete a dashboard for good. Returns the dashboard as it was.",
      inputSchema: { dashboard_id: z.string() },
      // The one tool whose server says it destroys (contract section 21: confirm unless the host sets a level).
      annotations: { ...MUTATING, destructiveHint: true, idempotentHint: true },
    },
    ({ dashboard_id }) => {
      const deleted = state.deleteDashboard(dashboard_id);
      return deleted ? jsonResult(deleted) : unknownDashboard(dashboard_id);
    },
  );
  server.registerTool(
    "list_dashboards" satisfies ToolName,
    { description: "List all dashboards.", inputSchema: {}, annotations: READ_ONLY },
    () => jsonResult({ dashboards: state.listDashboards() }),
  );
  server.registerTool(
    "get_dashboard" satisfies ToolName,
    { description: "Get one dashboard by id.", inputSchema: { dashboard_id: z.string() }, annotations: READ_ONLY },
    ({ dashboard_id }) => {
      const dashboard = state.getDashboard(dashboard_id);
      return dashboard ? jsonResult(dashboard) : unknownDashboard(dashboard_id);
    },
  );
  server.registerTool(
    "echo" satisfies ToolName,
    {
      description: "Answer with the arguments as given (any object), as a text line and as JSON.",
      inputSchema: z.looseObject({}),
      annotations: READ_ONLY,
    },
    (args) => ({
      content: [
        {
          type: "text",
          text: `echo: ${Object.entries(args)
            .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
            .join(" ")}`,
        },
        { type: "text", text: JSON.stringify(args) },
      ],
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Call log and faults (the control plane's view)

interface CallRecord {
  tool: string;
  arguments: unknown;
  at: string;
  /** The W3C trace context the call carried (contract section 22): its HTTP header and its params._meta. */
  traceparent?: { header?: string; meta?: string };
}

class CallLog {
  private calls: CallRecord[] = [];

  record(tool: string, args: unknown, traceparent: { header?: string; meta?: string } = {}): void {
    const traced = traceparent.header !== undefined || traceparent.meta !== undefined;
    this.calls.push({ tool, arguments: args, at: new Date().toISOString(), ...(traced ? { traceparent } : {}) });
  }

  reset(): void {
    this.calls = [];
  }

  snapshot(): { total: number; by_tool: Record<string, number>; calls: CallRecord[] } {
    // Every known tool appears, so a test can assert a count of 0 without a fallback.
    const byTool: Record<string, number> = Object.fromEntries(TOOL_NAMES.map((name) => [name, 0]));
    for (const call of this.calls) byTool[call.tool] = (byTool[call.tool] ?? 0) + 1;
    return { total: this.calls.length, by_tool: byTool, calls: [...this.calls] };
  }
}

const FAULT_MODES = ["delay", "error", "commit_then_drop"] as const;
type FaultMode = (typeof FAULT_MODES)[number];

const ArmFaultRequest = z
  .strictObject({
    tool: z.enum(TOOL_NAMES),
    mode: z.enum(FAULT_MODES),
    delay_ms: z.number().int().min(0).max(MAX_FAULT_DELAY_MS).optional(),
    times: z.number().int().min(1).default(1),
  })
  .refine((fault) => fault.mode !== "delay" || fault.delay_ms !== undefined, {
    message: "delay_ms is required when mode is delay",
    path: ["delay_ms"],
  });

interface Fault {
  mode: FaultMode;
  delay_ms: number;
}
interface ArmedFault extends Fault {
  tool: ToolName;
  remaining: number;
}

/** Per-tool FIFO of armed faults; arming twice queues the second behind the first. */
class FaultTable {
  private armed: ArmedFault[] = [];

  arm(request: z.infer<typeof ArmFaultRequest>): void {
    this.armed.push({ tool: request.tool, mode: request.mode, delay_ms: request.delay_ms ?? 0, remaining: request.times });
  }

  take(tool: string): Fault | undefined {
    const index = this.armed.findIndex((fault) => fault.tool === tool);
    const fault = this.armed[index];
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining === 0) this.armed.splice(index, 1);
    return { mode: fault.mode, delay_ms: fault.delay_ms };
  }

  reset(): void {
    this.armed = [];
  }

  snapshot(): ArmedFault[] {
    return this.armed.map((fault) => ({ ...fault }));
  }
}

// ---------------------------------------------------------------------------------------------
// MCP endpoints: one McpServer + transport per session (or per stateless request)

interface McpEndpoint {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  /** Requests whose response must be swallowed: the connection is killed instead. */
  drops: Map<RequestId, () => Promise<void>>;
  openRequests: number;
  lastActiveMs: number;
}

/**
 * Interposes on the transport's outgoing messages so commit_then_drop happens at exactly the
 * right moment: the handler has committed (its response exists) but not a byte of the response
 * has been written. The message is still forwarded afterwards so the transport clears its
 * per-request bookkeeping; the write to the dead connection goes nowhere.
 */
function dropMarkedResponses(endpoint: McpEndpoint): void {
  const { transport, drops } = endpoint;
  const forward = transport.send.bind(transport);
  transport.send = async (message, options) => {
    const id = isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message) ? message.id : undefined;
    const drop = id === undefined ? undefined : drops.get(id);
    if (id !== undefined && drop) {
      drops.delete(id);
      await drop();
    }
    try {
      await forward(message, options);
    } catch {
      // Only reachable once the connection is gone: there is no one left to answer.
    }
  };
}

/**
 * Destroys the connection carrying a response. An SSE response has its 200 + event-stream
 * headers flushed just before the first event; waiting for them makes the client's view
 * deterministic: its POST succeeded, then the stream was cut before the result. A JSON
 * response has sent nothing yet, so its client's fetch itself fails.
 */
async function dropConnection(res: ServerResponse, streaming: boolean): Promise<void> {
  const socket = res.socket;
  const deadline = Date.now() + SSE_HEADERS_WAIT_MS;
  const headersOnTheWire = () => res.headersSent && (socket?.writableLength ?? 0) === 0;
  while (streaming && !headersOnTheWire() && !res.destroyed && Date.now() < deadline) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  socket?.destroy();
}

interface ToolCall {
  id: RequestId;
  name: string;
  args: unknown;
  /** `params._meta.traceparent`, when the client sent its trace context. */
  metaTraceparent?: string;
}

function toolCallsIn(body: unknown): ToolCall[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((message): ToolCall[] => {
    if (!isJSONRPCRequest(message) || message.method !== "tools/call") return [];
    const params = (message.params ?? {}) as { name?: unknown; arguments?: unknown; _meta?: { traceparent?: unknown } };
    const traceparent = params._meta?.traceparent;
    return [
      {
        id: message.id,
        name: String(params.name),
        args: params.arguments ?? {},
        ...(typeof traceparent === "string" ? { metaTraceparent: traceparent } : {}),
      },
    ];
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP plumbing

/** 401 for /mcp-protected without the demo token, as an OAuth-protected MCP server answers (RFC 6750). */
function refuseUnauthorized(res: ServerResponse): void {
  res.writeHead(401, { "content-type": "application/json", "www-authenticate": 'Bearer realm="demo-mcp"' });
  res.end(JSON.stringify({ error: "unauthorized", message: "Send Authorization: Bearer demo-mcp-token." }));
}

function writeJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

const jsonRpcError = (id: RequestId | null, code: number, message: string) => ({
  jsonrpc: "2.0",
  id,
  error: { code, message },
});

const invalidRequest = (res: ServerResponse, message: string) => writeJson(res, 400, { error: "invalid_request", message });

/** Reads the whole body; undefined when it exceeds MAX_BODY_BYTES. */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

type JsonBody = { ok: true; value: unknown } | { ok: false; message: string };

async function readJsonBody(req: IncomingMessage): Promise<JsonBody> {
  const text = await readBody(req);
  if (text === undefined) return { ok: false, message: `body exceeds ${MAX_BODY_BYTES} bytes` };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, message: "body is not valid JSON" };
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Server factory

export interface DemoMcpServerOptions {
  /** 0 picks a free port. Defaults to 3001. */
  port?: number;
  /** Answer POSTs with a single JSON body instead of an SSE stream. */
  jsonResponse?: boolean;
  /** Sessions with no open request for this long are closed. */
  sessionIdleTtlMs?: number;
}

export interface DemoMcpServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startDemoMcpServer(options: DemoMcpServerOptions = {}): Promise<DemoMcpServer> {
  const jsonResponse = options.jsonResponse ?? false;
  const sessionIdleTtlMs = options.sessionIdleTtlMs ?? DEFAULT_SESSION_IDLE_TTL_MS;
  const state = new DemoState();
  const calls = new CallLog();
  const faults = new FaultTable();
  const sessions = new Map<string, McpEndpoint>();

  async function openEndpoint(stateful: boolean): Promise<McpEndpoint> {
    const server = new McpServer({ name: "demo-observability", version: "1.0.0" });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: stateful ? randomUUID : undefined,
      enableJsonResponse: jsonResponse,
      onsessioninitialized: (sessionId) => void sessions.set(sessionId, endpoint),
    });
    const endpoint: McpEndpoint = { server, transport, drops: new Map(), openRequests: 0, lastActiveMs: Date.now() };
    // Fires on DELETE, idle eviction and shutdown alike.
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    dropMarkedResponses(endpoint);
    registerTools(server, state);
    await server.connect(transport);
    return endpoint;
  }

  function trackOpenRequest(endpoint: McpEndpoint, res: ServerResponse): void {
    endpoint.openRequests += 1;
    res.once("close", () => {
      endpoint.openRequests -= 1;
      endpoint.lastActiveMs = Date.now();
    });
  }

  async function handleMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: unknown;
    if (req.method === "POST") {
      const parsed = await readJsonBody(req);
      if (!parsed.ok) return writeJson(res, 400, jsonRpcError(null, ErrorCode.ParseError, parsed.message));
      body = parsed.value;
    }

    // Counted on arrival, before routing or faults, so tests see every attempt.
    const toolCalls = toolCallsIn(body);
    const header = req.headers.traceparent;
    for (const call of toolCalls)
      calls.record(call.name, call.args, { header: typeof header === "string" ? header : undefined, meta: call.metaTraceparent });

    const sessionId = req.headers["mcp-session-id"];
    let endpoint: McpEndpoint | undefined;
    if (typeof sessionId === "string") {
      endpoint = sessions.get(sessionId);
      if (!endpoint) return writeJson(res, 404, jsonRpcError(null, SESSION_NOT_FOUND_CODE, "Session not found"));
    } else if (req.method !== "POST") {
      // Without a session there is no standalone stream to open and nothing to delete.
      res.setHeader("allow", "POST");
      return writeJson(res, 405, jsonRpcError(null, SERVER_ERROR_CODE, "Method not allowed without a session"));
    }

    // Faults target single-message POSTs, which is all the SDK client sends.
    const call = toolCalls.length === 1 && !Array.isArray(body) ? toolCalls[0] : undefined;
    const fault = call ? faults.take(call.name) : undefined;
    if (call && fault?.mode === "error") {
      return writeJson(res, 200, jsonRpcError(call.id, ErrorCode.InternalError, `Injected fault: error (${call.name})`));
    }
    if (fault?.mode === "delay") await sleep(fault.delay_ms);

    if (!endpoint) {
      const stateful = isInitializeRequest(body);
      endpoint = await openEndpoint(stateful);
      if (!stateful) {
        const stateless = endpoint;
        res.once("close", () => void stateless.server.close());
      }
    }
    if (call && fault?.mode === "commit_then_drop") endpoint.drops.set(call.id, () => dropConnection(res, !jsonResponse));

    trackOpenRequest(endpoint, res);
    await endpoint.transport.handleRequest(req, res, body);
  }

  async function handleControl(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    switch (`${req.method} ${path}`) {
      case "GET /control/calls":
        return writeJson(res, 200, calls.snapshot());
      case "GET /control/state":
        return writeJson(res, 200, state.snapshot());
      case "GET /control/sessions":
        return writeJson(res, 200, { open: sessions.size });
      case "GET /control/faults":
        return writeJson(res, 200, { armed: faults.snapshot() });
      case "POST /control/faults": {
        const parsed = await readJsonBody(req);
        if (!parsed.ok) return invalidRequest(res, parsed.message);
        const request = ArmFaultRequest.safeParse(parsed.value);
        if (!request.success) return invalidRequest(res, z.prettifyError(request.error));
        faults.arm(request.data);
        return writeJson(res, 200, { armed: faults.snapshot() });
      }
      case "POST /control/reset":
        state.reset();
        calls.reset();
        faults.reset();
        return writeJson(res, 200, { ok: true });
      default:
        return writeJson(res, 404, { error: "not_found", message: `No control endpoint ${req.method} ${path}` });
    }
  }

  const httpServer = createServer((req, res) => {
    const path = new URL(req.url ?? "/", `http://${HOST}`).pathname;
    const handled =
      path === MCP_PATH
        ? handleMcp(req, res)
        : path === PROTECTED_MCP_PATH
          ? req.headers.authorization === `Bearer ${PROTECTED_MCP_TOKEN}`
            ? handleMcp(req, res)
            : Promise.resolve(refuseUnauthorized(res))
          : path.startsWith("/control/")
            ? handleControl(req, res, path)
            : Promise.resolve(writeJson(res, 404, { error: "not_found", message: `Nothing at ${path}` }));
    handled.catch((error: unknown) => {
      process.stderr.write(`demo-mcp-server: request failed: ${String(error)}\n`);
      writeJson(res, 500, { error: "internal_error", message: String(error) });
    });
  });

  const sweepIntervalMs = Math.min(sessionIdleTtlMs, MAX_SESSION_SWEEP_INTERVAL_MS);
  const sweeper = setInterval(() => {
    const idleSince = Date.now() - sessionIdleTtlMs;
    for (const endpoint of sessions.values()) {
      if (endpoint.openRequests === 0 && endpoint.lastActiveMs < idleSince) void endpoint.server.close();
    }
  }, sweepIntervalMs);
  sweeper.unref();

  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(options.port ?? DEFAULT_PORT, HOST, () => {
      httpServer.off("error", reject);
      resolve();
    });
  });
  const { port } = httpServer.address() as AddressInfo;

  return {
    url: `http://${HOST}:${port}${MCP_PATH}`,
    port,
    async close() {
      clearInterval(sweeper);
      await Promise.all([...sessions.values()].map((endpoint) => endpoint.server.close()));
      const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      httpServer.closeAllConnections();
      await closed;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Process entry point

const PortFromEnv = z.coerce.number().int().min(0).max(65_535);

async function main(): Promise<void> {
  const rawPort = process.env.DEMO_MCP_PORT;
  const port = rawPort === undefined || rawPort === "" ? DEFAULT_PORT : PortFromEnv.parse(rawPort);
  const server = await startDemoMcpServer({ port, jsonResponse: process.env.DEMO_MCP_JSON_RESPONSE === "1" });
  process.stdout.write(`demo-mcp-server listening on ${server.url}\n`);

  const shutdown = () => {
    // A hung connection must not keep the process alive past the grace period.
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", shutdown);
  process.once("SIGINT", shutdown);
}

const entryScript = process.argv[1];
if (entryScript !== undefined && import.meta.url === pathToFileURL(entryScript).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`demo-mcp-server: failed to start: ${String(error)}\n`);
    process.exit(1);
  });
}
