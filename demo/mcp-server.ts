/**
 * Demo MCP server: a stand-in observability tool provider for end-to-end tests and `npm start`.
 *
 * Responsibilities:
 *  - Serve seven observability tools (dashboards, KPIs, alerts; `delete_dashboard` the one its
 *    annotations call destructive) and `echo` (answers with its own arguments, so tests can see
 *    what a result echoing secrets does) over MCP Streamable HTTP at
 *    http://127.0.0.1:<port>/mcp, on the official v2 server package, keeping its state in memory
 *    and, with `stateFile` (DEMO_MCP_STATE_FILE; `npm start` puts it under STATE_DIR), in that
 *    JSON file too, written after every change and read back on start, so a restart keeps dash-1.
 *  - Speak MCP 2026-07-28 by default (contract section 21): stateless, no initialize and no
 *    session, every request its own exchange, with one more tool, `schedule_report`, that asks
 *    its caller a question mid-call (an `input_required` result with one form elicitation and a
 *    signed `requestState`) and completes on the follow-up request that carries the answer.
 *    Clients of the earlier revisions are served statelessly by the package's own fallback.
 *  - With `era: "2025-11-25"` (DEMO_MCP_ERA=2025-11-25) be an older server instead: initialize
 *    and Mcp-Session-Id only, `server/discover` unknown, the eight tools without the question
 *    one; stateless clients (no session header) are served too, and sessions that are deleted or
 *    sit idle are evicted so per-call clients do not leak memory. The test suites run this kind.
 *  - Expose a JSON control API under /control so tests can count tools/call requests (and every
 *    HTTP request to the MCP endpoint, by JSON-RPC method, for the benchmark), inspect state,
 *    reset, and arm per-call faults (delay, error, commit_then_drop); and, for tests of contract
 *    section 23's tool identity, change a tool as tools/list shows it from then on (POST
 *    /control/tools: another description, one more optional input, or the tool removed) until
 *    the next reset.
 *  - Serve the same tools at /mcp-protected only with `Authorization: Bearer demo-mcp-token`
 *    (401 with WWW-Authenticate otherwise), for the health probe's authorization_required.
 *
 * Run as a separate process: `npx tsx demo/mcp-server.ts` (port from DEMO_MCP_PORT, default
 * 3001, 0 = any free port; DEMO_MCP_JSON_RESPONSE=1 answers with JSON instead of SSE;
 * DEMO_MCP_STATE_FILE=path keeps the state in that file across restarts;
 * DEMO_MCP_ERA=2025-11-25 for the older kind). On start it prints exactly one stdout line:
 * `demo-mcp-server listening on http://127.0.0.1:<port>/mcp`.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import {
  acceptedContent,
  type CallToolResult,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  isInitializeRequest,
  isJSONRPCRequest,
  isLegacyRequest,
  McpServer,
  type McpHttpHandler,
  PARSE_ERROR,
  INTERNAL_ERROR,
  type RegisteredTool,
  type RequestId,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
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
const SHUTDOWN_GRACE_MS = 5_000;
/** How long schedule_report's question (its signed requestState) stays answerable. */
const QUESTION_TTL_SECONDS = 30 * 60;
// JSON-RPC implementation-defined codes, as the SDK's own transport uses them.
const SERVER_ERROR_CODE = -32000;
const SESSION_NOT_FOUND_CODE = -32001;
const METHOD_NOT_FOUND_CODE = -32601;

/** The revision the server speaks: the stateless one (default), or the older one with initialize and sessions. */
export const DEMO_ERAS = ["2026-07-28", "2025-11-25"] as const;
export type DemoEra = (typeof DEMO_ERAS)[number];

export const TOOL_NAMES = [
  "create_dashboard",
  "update_dashboard",
  "create_kpi",
  "create_alert_from_chart",
  "delete_dashboard",
  "list_dashboards",
  "get_dashboard",
  "echo",
  "schedule_report",
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
interface Report {
  id: string;
  dashboard_id: string;
  frequency: "daily" | "weekly";
  recipient: string;
  /** The multi-select of the question: the files attached to each report (absent: a link only). */
  formats?: ("pdf" | "csv")[] | undefined;
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

/** What the state file holds: the snapshot and the next ids. */
interface SavedState {
  dashboards: Dashboard[];
  kpis: Kpi[];
  alerts: Alert[];
  reports: Report[];
  next_id: { dash: number; kpi: number; alert: number; report: number };
}

class DemoState {
  private dashboards = new Map<string, Dashboard>();
  private kpis: Kpi[] = [];
  private alerts: Alert[] = [];
  private reports: Report[] = [];
  private nextId = { dash: 1, kpi: 1, alert: 1, report: 1 };

  /** With `file`, the state it holds (when it exists), and every change written back to it. */
  constructor(private readonly file?: string) {
    if (file === undefined) return;
    let saved: SavedState;
    try {
      saved = JSON.parse(readFileSync(file, "utf8")) as SavedState;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw new Error(`the demo state file ${file} cannot be read (${String(error)}); delete it to start empty`);
    }
    this.dashboards = new Map(saved.dashboards.map((d) => [d.id, d]));
    this.kpis = saved.kpis;
    this.alerts = saved.alerts;
    this.reports = saved.reports;
    this.nextId = saved.next_id;
  }

  /** Writes the state file whole (a temporary file renamed over it, so a crash never leaves half of one). */
  private save(): void {
    if (this.file === undefined) return;
    const saved: SavedState = { ...this.snapshot(), next_id: this.nextId };
    mkdirSync(dirname(this.file), { recursive: true });
    writeFileSync(`${this.file}.tmp`, JSON.stringify(saved));
    renameSync(`${this.file}.tmp`, this.file);
  }

  reset(): void {
    this.dashboards.clear();
    this.kpis = [];
    this.alerts = [];
    this.reports = [];
    this.nextId = { dash: 1, kpi: 1, alert: 1, report: 1 };
    this.save();
  }

  createDashboard(title: string, panels: string[]): Dashboard {
    const now = new Date().toISOString();
    const dashboard = { id: `dash-${this.nextId.dash++}`, title, panels, created_at: now, updated_at: now };
    this.dashboards.set(dashboard.id, dashboard);
    this.save();
    return dashboard;
  }

  updateDashboard(id: string, changes: { title?: string; panels?: string[] }): Dashboard | undefined {
    const current = this.dashboards.get(id);
    if (!current) return undefined;
    const updated = { ...current, ...changes, updated_at: new Date().toISOString() };
    this.dashboards.set(id, updated);
    this.save();
    return updated;
  }

  deleteDashboard(id: string): Dashboard | undefined {
    const dashboard = this.dashboards.get(id);
    this.dashboards.delete(id);
    this.save();
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
    this.save();
    return kpi;
  }

  createAlert(input: Omit<Alert, "id" | "created_at">): Alert {
    const alert = { id: `alert-${this.nextId.alert++}`, ...input, created_at: new Date().toISOString() };
    this.alerts.push(alert);
    this.save();
    return alert;
  }

  createReport(input: Omit<Report, "id" | "created_at">): Report {
    const report = { id: `report-${this.nextId.report++}`, ...input, created_at: new Date().toISOString() };
    this.reports.push(report);
    this.save();
    return report;
  }

  snapshot(): { dashboards: Dashboard[]; kpis: Kpi[]; alerts: Alert[]; reports: Report[] } {
    return { dashboards: this.listDashboards(), kpis: [...this.kpis], alerts: [...this.alerts], reports: [...this.reports] };
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

/** What schedule_report asks mid-call: one form, its schema the elicitation's requested_schema. */
const ReportAnswer = z.object({
  frequency: z.enum(["daily", "weekly"]).describe("How often the report goes out"),
  recipient: z.string().min(1).describe("Who receives it (an address or a channel)"),
  // A multi-select enum (MCP's UntitledMultiSelectEnumSchema): optional, so answers without it still fit.
  formats: z
    .array(z.enum(["pdf", "csv"]))
    .max(2)
    .optional()
    .describe("Attach it as (none: a link only)"),
});
/** schedule_report's key in inputRequests / inputResponses. */
const REPORT_QUESTION_KEY = "schedule";
/** What the signed requestState of schedule_report carries: the dashboard the question was about. */
interface ReportQuestionState {
  dashboard_id: string;
}

/**
 * Signs schedule_report's requestState (it comes back from the client, so it is untrusted input:
 * the revision wants it integrity-protected). One key per process: every round of a question
 * reaches this same process.
 */
const reportStates = createRequestStateCodec<ReportQuestionState>({
  key: randomBytes(32),
  ttlSeconds: QUESTION_TTL_SECONDS,
  bind: (ctx) => ctx.mcpReq.method,
});

/**
 * The tool that asks a question mid-call (2026-07-28 only): the first request answers
 * `input_required` with one form elicitation; the follow-up, carrying the answer and the
 * requestState, schedules the report (accept) or schedules nothing (decline, cancel).
 */
function registerQuestionTool(server: McpServer, state: DemoState): void {
  server.registerTool(
    "schedule_report" satisfies ToolName,
    {
      description: "Schedule a recurring report of a dashboard. Asks the caller mid-call how often and to whom it goes, then schedules it.",
      inputSchema: { dashboard_id: z.string() },
      annotations: { ...MUTATING, idempotentHint: false },
    },
    async ({ dashboard_id }, ctx) => {
      if (!state.getDashboard(dashboard_id)) return unknownDashboard(dashboard_id);
      const answer = inputResponse(ctx.mcpReq.inputResponses, REPORT_QUESTION_KEY);
      if (answer.kind === "missing") {
        return inputRequired({
          inputRequests: {
            [REPORT_QUESTION_KEY]: inputRequired.elicit({
              message: `How often should the report of ${dashboard_id} go out, and to whom?`,
              requestedSchema: ReportAnswer,
            }),
          },
          requestState: await reportStates.mint({ dashboard_id }, ctx),
        });
      }
      // The SDK verified the signature before this handler ran; a follow-up without state is refused.
      const asked = ctx.mcpReq.requestState<ReportQuestionState>();
      if (asked?.dashboard_id !== dashboard_id)
        return toolError("This answer belongs to no question of schedule_report on this dashboard.");
      if (answer.kind !== "elicit") return toolError("schedule_report asked a form question; the answer is of another kind.");
      if (answer.action !== "accept") return jsonResult({ scheduled: false, dashboard_id, answer: answer.action });
      const content = acceptedContent(ctx.mcpReq.inputResponses, REPORT_QUESTION_KEY, ReportAnswer);
      if (!content) return toolError("The answer does not fit the question's form (frequency daily or weekly, a recipient).");
      return jsonResult({ scheduled: true, report: state.createReport({ dashboard_id, ...content }) });
    },
  );
}

function registerTools(server: McpServer, state: DemoState): Map<string, RegisteredTool> {
  const tools = new Map<string, RegisteredTool>();
  tools.set(
    "create_dashboard",
    server.registerTool(
      "create_dashboard" satisfies ToolName,
      {
        description: "Create a dashboard. Returns the dashboard, including its id (dash-N).",
        inputSchema: { title: z.string().min(1), panels: z.array(z.string()).optional() },
        annotations: { ...MUTATING, idempotentHint: false },
      },
      ({ title, panels }) => jsonResult(state.createDashboard(title, panels ?? [])),
    ),
  );
  tools.set(
    "update_dashboard",
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
    ),
  );
  tools.set(
    "create_kpi",
    server.registerTool(
      "create_kpi" satisfies ToolName,
      {
        description: "Create a KPI backed by a query, with an optional numeric target.",
        inputSchema: { name: z.string().min(1), query: z.string().min(1), target: z.number().optional() },
        annotations: { ...MUTATING, idempotentHint: false },
      },
      ({ name, query, target }) => jsonResult(state.createKpi(name, query, target)),
    ),
  );
  tools.set(
    "create_alert_from_chart",
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
    ),
  );
  tools.set(
    "delete_dashboard",
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
    ),
  );
  tools.set(
    "list_dashboards",
    server.registerTool(
      "list_dashboards" satisfies ToolName,
      { description: "List all dashboards.", inputSchema: {}, annotations: READ_ONLY },
      () => jsonResult({ dashboards: state.listDashboards() }),
    ),
  );
  tools.set(
    "get_dashboard",
    server.registerTool(
      "get_dashboard" satisfies ToolName,
      { description: "Get one dashboard by id.", inputSchema: { dashboard_id: z.string() }, annotations: READ_ONLY },
      ({ dashboard_id }) => {
        const dashboard = state.getDashboard(dashboard_id);
        return dashboard ? jsonResult(dashboard) : unknownDashboard(dashboard_id);
      },
    ),
  );
  tools.set(
    "echo",
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
    ),
  );
  return tools;
}

// ---------------------------------------------------------------------------------------------
// Tool changes (the control plane's, for contract section 23's tool identity)

const ChangeToolRequest = z.strictObject({
  tool: z.enum(TOOL_NAMES),
  /** The tool's description from now on. */
  description: z.string().max(2_000).optional(),
  /** One more optional string input of this name in the tool's inputSchema. */
  add_input: z
    .string()
    .regex(/^[a-z_]{1,40}$/)
    .optional(),
  /** The tool is no longer listed (nor callable). */
  removed: z.literal(true).optional(),
});
type ToolChange = z.infer<typeof ChangeToolRequest>;

/** Applies the armed changes to a fresh server's tools, before it is connected (so no list_changed is sent). */
function applyToolChanges(tools: Map<string, RegisteredTool>, changes: ReadonlyMap<string, ToolChange>): void {
  for (const [name, change] of changes) {
    const tool = tools.get(name);
    if (tool === undefined) continue;
    if (change.removed) {
      tool.remove();
      continue;
    }
    const schema = tool.inputSchema as unknown as { extend?: (shape: Record<string, unknown>) => RegisteredTool["inputSchema"] };
    tool.update({
      ...(change.description !== undefined ? { description: change.description } : {}),
      ...(change.add_input !== undefined && schema.extend !== undefined
        ? { paramsSchema: schema.extend({ [change.add_input]: z.string().optional() }) }
        : {}),
    });
  }
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

/** Every HTTP request to the MCP endpoints, by JSON-RPC method (or HTTP method without a body): what a mutation costs on the wire. */
class RequestLog {
  private byMethod = new Map<string, number>();

  record(method: string): void {
    this.byMethod.set(method, (this.byMethod.get(method) ?? 0) + 1);
  }

  reset(): void {
    this.byMethod.clear();
  }

  snapshot(): { total: number; by_method: Record<string, number> } {
    const byMethod = Object.fromEntries(this.byMethod);
    return { total: Object.values(byMethod).reduce((sum, n) => sum + n, 0), by_method: byMethod };
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
// MCP exchanges: the v2 package's Web-standard handlers, bridged to node:http here

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

/** The node request as a Web `Request` (the v2 package's handlers take and give Web objects). */
function webRequest(req: IncomingMessage, body: string | undefined): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value);
    else if (Array.isArray(value)) for (const item of value) headers.append(name, item);
  }
  return new Request(`http://${HOST}${req.url ?? "/"}`, {
    method: req.method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
}

/** Whether an SSE chunk carries the JSON-RPC response to request `id` (not a notification or a comment). */
function carriesResponse(chunk: string, id: RequestId): boolean {
  return chunk.split("\n").some((line) => {
    if (!line.startsWith("data:")) return false;
    try {
      const message = JSON.parse(line.slice("data:".length)) as { id?: unknown; result?: unknown; error?: unknown };
      return message.id === id && (message.result !== undefined || message.error !== undefined);
    } catch {
      return false;
    }
  });
}

/**
 * Writes the handler's Web `Response` to the node response. With `dropResponseTo` (the
 * commit_then_drop fault) the handler has committed but its answer never arrives: a JSON answer
 * exists only once the tool ran, so the connection is destroyed before a byte of it is written
 * (the client's fetch itself fails); an SSE answer gets its 200 and event-stream headers on the
 * wire first, then the connection is cut where the result event would be (the POST succeeded,
 * the stream broke before the result).
 */
async function writeWebResponse(res: ServerResponse, response: Response, dropResponseTo?: RequestId): Promise<void> {
  const streaming = (response.headers.get("content-type") ?? "").includes("text/event-stream");
  if (dropResponseTo !== undefined && !streaming) {
    await response.body?.cancel().catch(() => {});
    res.socket?.destroy();
    return;
  }
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (streaming) res.flushHeaders();
  const reader = response.body?.getReader();
  if (!reader) return void res.end();
  res.once("close", () => void reader.cancel().catch(() => {}));
  const decoder = new TextDecoder();
  for (;;) {
    const chunk = await reader.read().catch(() => undefined);
    if (!chunk || chunk.done) break;
    if (dropResponseTo !== undefined && carriesResponse(decoder.decode(chunk.value, { stream: true }), dropResponseTo)) {
      void reader.cancel().catch(() => {});
      res.socket?.destroy();
      return;
    }
    if (res.destroyed) break;
    res.write(chunk.value);
  }
  res.end();
}

/** An older-revision session: one McpServer over one sessionful transport. */
interface LegacySession {
  server: McpServer;
  transport: WebStandardStreamableHTTPServerTransport;
  openRequests: number;
  lastActiveMs: number;
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
  /** Answer POSTs with a single JSON body instead of an SSE stream (2026-07-28: unless a notification precedes the result, which these tools never send). */
  jsonResponse?: boolean;
  /** The revision spoken: 2026-07-28 (stateless, the default) or 2025-11-25 (initialize and sessions). */
  era?: DemoEra;
  /** Older revision only: sessions with no open request for this long are closed. */
  sessionIdleTtlMs?: number;
  /** A JSON file the state is kept in (read on start, written on every change); unset: memory only. */
  stateFile?: string;
}

export interface DemoMcpServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startDemoMcpServer(options: DemoMcpServerOptions = {}): Promise<DemoMcpServer> {
  const jsonResponse = options.jsonResponse ?? false;
  const era = options.era ?? "2026-07-28";
  const sessionIdleTtlMs = options.sessionIdleTtlMs ?? DEFAULT_SESSION_IDLE_TTL_MS;
  const state = new DemoState(options.stateFile);
  const calls = new CallLog();
  const requests = new RequestLog();
  const faults = new FaultTable();
  const toolChanges = new Map<string, ToolChange>();
  const sessions = new Map<string, LegacySession>();

  /** A fresh server instance; the question tool only for the 2026-07-28 revision, which has input_required. */
  const newServer = (modern: boolean): McpServer => {
    const server = new McpServer(
      { name: "demo-observability", version: "1.0.0" },
      modern ? { requestState: { verify: reportStates.verify } } : {},
    );
    applyToolChanges(registerTools(server, state), toolChanges);
    if (modern) registerQuestionTool(server, state);
    return server;
  };

  // 2026-07-28: one fresh instance per request; the older revisions' clients get the package's stateless fallback.
  const modern: McpHttpHandler | undefined =
    era === "2026-07-28"
      ? createMcpHandler(({ era: requestEra }) => newServer(requestEra === "modern"), { responseMode: jsonResponse ? "auto" : "sse" })
      : undefined;

  async function openLegacySession(stateful: boolean): Promise<LegacySession> {
    const server = newServer(false);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: stateful ? randomUUID : undefined,
      enableJsonResponse: jsonResponse,
      onsessioninitialized: (sessionId) => void sessions.set(sessionId, session),
    });
    const session: LegacySession = { server, transport, openRequests: 0, lastActiveMs: Date.now() };
    // Fires on DELETE, idle eviction and shutdown alike.
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return session;
  }

  function trackOpenRequest(session: LegacySession, res: ServerResponse): void {
    session.openRequests += 1;
    res.once("close", () => {
      session.openRequests -= 1;
      session.lastActiveMs = Date.now();
    });
  }

  /** The older revision's exchange: the session named by Mcp-Session-Id, a new one for initialize, else a one-request endpoint. */
  async function legacyResponse(req: IncomingMessage, res: ServerResponse, request: Request, body: unknown): Promise<Response | undefined> {
    const sessionId = req.headers["mcp-session-id"];
    let session: LegacySession | undefined;
    if (typeof sessionId === "string") {
      session = sessions.get(sessionId);
      if (!session) return void writeJson(res, 404, jsonRpcError(null, SESSION_NOT_FOUND_CODE, "Session not found"));
    } else if (req.method !== "POST") {
      // Without a session there is no standalone stream to open and nothing to delete.
      res.setHeader("allow", "POST");
      return void writeJson(res, 405, jsonRpcError(null, SERVER_ERROR_CODE, "Method not allowed without a session"));
    } else if (!(await isLegacyRequest(request.clone(), body))) {
      // An older server does not know the 2026-07-28 envelope, nor server/discover.
      const id = isJSONRPCRequest(body) ? body.id : null;
      return void writeJson(res, 200, jsonRpcError(id, METHOD_NOT_FOUND_CODE, "Method not found"));
    }
    if (!session) {
      const stateful = isInitializeRequest(body);
      session = await openLegacySession(stateful);
      if (!stateful) {
        const oneRequest = session;
        res.once("close", () => void oneRequest.server.close());
      }
    }
    trackOpenRequest(session, res);
    return session.transport.handleRequest(request, body === undefined ? {} : { parsedBody: body });
  }

  async function handleMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: unknown;
    if (req.method === "POST") {
      const parsed = await readJsonBody(req);
      if (!parsed.ok) return writeJson(res, 400, jsonRpcError(null, PARSE_ERROR, parsed.message));
      body = parsed.value;
    }

    // Counted on arrival, before routing or faults, so tests see every attempt.
    const messages = Array.isArray(body) ? body : [body];
    const first = messages[0] as { method?: unknown } | undefined;
    requests.record(typeof first?.method === "string" ? first.method : (req.method ?? "?"));
    const toolCalls = toolCallsIn(body);
    const header = req.headers.traceparent;
    for (const call of toolCalls)
      calls.record(call.name, call.args, { header: typeof header === "string" ? header : undefined, meta: call.metaTraceparent });

    // Faults target single-message POSTs, which is all the SDK client sends.
    const call = toolCalls.length === 1 && !Array.isArray(body) ? toolCalls[0] : undefined;
    const fault = call ? faults.take(call.name) : undefined;
    if (call && fault?.mode === "error") {
      return writeJson(res, 200, jsonRpcError(call.id, INTERNAL_ERROR, `Injected fault: error (${call.name})`));
    }
    if (fault?.mode === "delay") await sleep(fault.delay_ms);

    const request = webRequest(req, body === undefined ? undefined : JSON.stringify(body));
    const response = modern
      ? await modern.fetch(request, body === undefined ? {} : { parsedBody: body })
      : await legacyResponse(req, res, request, body);
    if (response) await writeWebResponse(res, response, call && fault?.mode === "commit_then_drop" ? call.id : undefined);
  }

  async function handleControl(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    switch (`${req.method} ${path}`) {
      case "GET /control/calls":
        return writeJson(res, 200, calls.snapshot());
      case "GET /control/state":
        return writeJson(res, 200, state.snapshot());
      case "GET /control/requests":
        return writeJson(res, 200, requests.snapshot());
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
      case "POST /control/tools": {
        const parsed = await readJsonBody(req);
        if (!parsed.ok) return invalidRequest(res, parsed.message);
        const request = ChangeToolRequest.safeParse(parsed.value);
        if (!request.success) return invalidRequest(res, z.prettifyError(request.error));
        toolChanges.set(request.data.tool, { ...toolChanges.get(request.data.tool), ...request.data });
        return writeJson(res, 200, { changed: Object.fromEntries(toolChanges) });
      }
      case "POST /control/reset":
        toolChanges.clear();
        state.reset();
        calls.reset();
        requests.reset();
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
    for (const session of sessions.values()) {
      if (session.openRequests === 0 && session.lastActiveMs < idleSince) void session.server.close();
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
      await Promise.all([...sessions.values()].map((session) => session.server.close()));
      await modern?.close();
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
  const era = z
    .enum(DEMO_ERAS)
    .default("2026-07-28")
    .parse(process.env.DEMO_MCP_ERA || undefined);
  const server = await startDemoMcpServer({
    port,
    era,
    jsonResponse: process.env.DEMO_MCP_JSON_RESPONSE === "1",
    ...(process.env.DEMO_MCP_STATE_FILE ? { stateFile: process.env.DEMO_MCP_STATE_FILE } : {}),
  });
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
