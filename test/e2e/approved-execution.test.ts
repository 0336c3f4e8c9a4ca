// Approved execution end to end: the Worker under wrangler dev, the demo MCP
// server as a separate process, decisions over HTTP. Every scenario asserts
// the exact ordered list of event types and identities its subscriber
// received (heartbeats interleave and are checked only for contiguity), and
// the demo server's own call count proves what reached it.
import { beforeEach, describe, expect, inject, it } from "vitest";
import { createHookDispatcher } from "../../src/adapters/adapter-hooks";
import { eventIds, RawSseClient } from "../support/sse-client";

const url = inject("workerUrl");
const token = inject("workerToken");
const demo = inject("demoMcpBaseUrl");
const auth = { authorization: `Bearer ${token}` };

const CREATE = "mcp__demo__create_dashboard";
const UPDATE = "mcp__demo__update_dashboard";
const KPI = "mcp__demo__create_kpi";
const ALERT = "mcp__demo__create_alert_from_chart";
const LIST = "mcp__demo__list_dashboards";

interface Event {
  sequence: number;
  type: string;
  tool_name?: string;
  tool_call_id?: string;
  approval_id?: string;
  [k: string]: unknown;
}

async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

async function demoCalls(): Promise<{ total: number; by_tool: Record<string, number>; calls: { tool: string; arguments: any }[] }> {
  return (await fetch(`${demo}/control/calls`)).json() as never;
}

async function armFault(tool: string, mode: "delay" | "error" | "commit_then_drop", delayMs?: number) {
  const res = await fetch(`${demo}/control/faults`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool, mode, ...(delayMs !== undefined ? { delay_ms: delayMs } : {}) }),
  });
  expect(res.status).toBe(200);
}

/** A run and its one subscriber, attached from sequence 1. */
class Scenario {
  constructor(
    readonly runId: string,
    readonly client: RawSseClient,
  ) {}

  static async start(script: unknown[], extra: Record<string, unknown> = {}): Promise<Scenario> {
    const { status, json } = await post("/api/trigger", { message: "scenario", channel_id: "C1", script, ...extra });
    expect(status).toBe(202);
    return new Scenario(json.run_id, await RawSseClient.open(`${url}/api/runs/${json.run_id}/events`, auth));
  }

  get events(): Event[] {
    return this.client.events.map((e) => JSON.parse(e.data) as Event);
  }

  /** Waits for the first event of `type` (optionally for one tool call) and returns it. */
  async waitFor(type: string, toolCallId?: string): Promise<Event> {
    for (;;) {
      const found = this.events.find((e) => e.type === type && (toolCallId === undefined || e.tool_call_id === toolCallId));
      if (found) return found;
      if (this.client.ended) throw new Error(`stream ended without ${type}: ${this.shape().join(", ")}`);
      await this.client.waitFor(this.client.events.length + 1);
    }
  }

  async decide(approvalId: string, body: Record<string, unknown>) {
    return post(`/api/runs/${this.runId}/approvals/${approvalId}`, { decided_by: "U-approver", ...body });
  }

  async approve(toolCallId: string, extra: Record<string, unknown> = {}) {
    const requested = await this.waitFor("approval_requested", toolCallId);
    const answer = await this.decide(requested.approval_id!, { decision: "approve", ...extra });
    expect(answer.status).toBe(200);
    return requested;
  }

  async toEnd(): Promise<Event[]> {
    await this.client.toEnd(30_000);
    const all = this.events;
    expect(eventIds(this.client.events)).toEqual(all.map((_, i) => i + 1));
    return all;
  }

  /** Event types with the call they belong to, heartbeats left out. */
  shape(): string[] {
    return this.events
      .filter((e) => e.type !== "heartbeat")
      .map((e) => (e.tool_call_id ? `${e.type}:${e.tool_call_id}` : e.type));
  }

  one(type: string, toolCallId?: string): Event {
    const found = this.events.filter((e) => e.type === type && (toolCallId === undefined || e.tool_call_id === toolCallId));
    expect(found).toHaveLength(1);
    return found[0]!;
  }
}

/** A question, then a write the model wants to run after it: the ordered-admission case. */
const ASK_THEN_WRITE = [
  {
    tool_calls: [
      { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which dashboard?" } },
      { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } },
    ],
  },
];

const approvedAndRun = (id: string) => [
  `tool_started:${id}`,
  `approval_requested:${id}`,
  `approval_resolved:${id}`,
  `tool_execution_started:${id}`,
  `tool_execution:${id}`,
  `tool_completed:${id}`,
];

beforeEach(async () => {
  await fetch(`${demo}/control/reset`, { method: "POST" });
});

describe("approved mutations", () => {
  it("creates and then updates a dashboard, each after a person's approval", async () => {
    const s = await Scenario.start([
      { text: "Creating it.", tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "Latency" } }] },
      { tool_calls: [{ tool_name: UPDATE, tool_call_id: "write-2", arguments: { dashboard_id: "dash-1", title: "Latency p99" } }] },
      { text: "Done." },
    ]);
    const first = await s.approve("write-1");
    const second = await s.approve("write-2");
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", "assistant_message", ...approvedAndRun("write-1"), ...approvedAndRun("write-2"), "assistant_message", "run_completed"]);
    expect(first.approval_id).not.toBe(second.approval_id);
    expect(s.one("approval_requested", "write-1")).toMatchObject({ tool_name: CREATE, level: "approve", arguments: { title: "Latency" } });
    expect(s.one("approval_resolved", "write-1")).toMatchObject({ approval_id: first.approval_id, decision: "approved", decided_by: "U-approver" });
    const started = s.one("tool_execution_started", "write-1");
    expect(Object.keys(started).sort()).toEqual(["approval_id", "at", "channel_id", "protocol_version", "run_id", "sequence", "tool_call_id", "tool_name", "type"]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "executed", approval_id: first.approval_id, result: { is_error: false } });
    expect(s.one("tool_execution", "write-2")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(s.one("tool_completed", "write-2")).toMatchObject({ approved: true, duration_ms: expect.any(Number) });
    expect(s.events.at(-1)).toMatchObject({ type: "run_completed", text: "Done.", tool_calls: 2 });
    const calls = await demoCalls();
    expect(calls.by_tool).toMatchObject({ create_dashboard: 1, update_dashboard: 1 });
    const state = (await (await fetch(`${demo}/control/state`)).json()) as any;
    expect(state.dashboards).toEqual([expect.objectContaining({ id: "dash-1", title: "Latency p99" })]);
  });

  it("runs synthetic KPI and alert writes within their budget and refuses the ones beyond it", async () => {
    const s = await Scenario.start([
      {
        tool_calls: [
          { tool_name: KPI, tool_call_id: "kpi-1", arguments: { name: "p99", query: "latency" } },
          { tool_name: KPI, tool_call_id: "kpi-2", arguments: { name: "p50", query: "latency" } },
          { tool_name: ALERT, tool_call_id: "alert-1", arguments: { dashboard_id: "dash-9", chart: "p99", threshold: 250 } },
          { tool_name: "mcp__demo__delete_everything", tool_call_id: "nope-1", arguments: {} },
        ],
      },
    ]);
    // One decision at a time, each after the previous call ended, so the expected order is exact.
    await s.approve("kpi-1");
    await s.waitFor("tool_completed", "kpi-1");
    await s.approve("kpi-2");
    await s.waitFor("tool_completed", "kpi-2");
    await s.approve("alert-1", { confirmation: ALERT });
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:kpi-1",
      "approval_requested:kpi-1",
      "tool_started:kpi-2",
      "approval_requested:kpi-2",
      "tool_started:alert-1",
      "approval_requested:alert-1",
      "tool_started:nope-1",
      "tool_execution:nope-1",
      "tool_completed:nope-1",
      "approval_resolved:kpi-1",
      "tool_execution_started:kpi-1",
      "tool_execution:kpi-1",
      "tool_completed:kpi-1",
      "approval_resolved:kpi-2",
      "tool_execution_started:kpi-2",
      "tool_execution:kpi-2",
      "tool_completed:kpi-2",
      "approval_resolved:alert-1",
      "tool_execution_started:alert-1",
      "tool_execution:alert-1",
      "tool_completed:alert-1",
      "run_completed",
    ]);
    expect(s.one("tool_execution", "nope-1")).toMatchObject({ execution_status: "not_executed", reason: "not_in_budget" });
    expect(s.one("tool_completed", "nope-1")).toMatchObject({ approved: false });
    expect(s.one("tool_execution", "kpi-1")).toMatchObject({ execution_status: "executed" });
    // Approval adds no allowance: the KPI budget is 1 per run.
    expect(s.one("tool_execution", "kpi-2")).toMatchObject({ execution_status: "not_executed", reason: "budget_exhausted" });
    expect(s.one("tool_completed", "kpi-2")).toMatchObject({ approved: true });
    expect(s.one("approval_requested", "alert-1")).toMatchObject({ level: "confirm" });
    // The demo server has no dash-9: the call left, and the tool said no.
    expect(s.one("tool_execution", "alert-1")).toMatchObject({ execution_status: "executed", result: { is_error: true }, error: { code: "tool_error" } });
    expect((await demoCalls()).by_tool).toMatchObject({ create_kpi: 1, create_alert_from_chart: 1 });
  });

  it("needs the tool name as confirmation for a confirm-level approval", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: ALERT, tool_call_id: "alert-1", arguments: { dashboard_id: "dash-1", chart: "c", threshold: 1 } }] }]);
    const requested = await s.waitFor("approval_requested", "alert-1");
    const missing = await s.decide(requested.approval_id!, { decision: "approve" });
    expect(missing).toMatchObject({ status: 400, json: { error: "confirmation_mismatch" } });
    const wrong = await s.decide(requested.approval_id!, { decision: "approve", confirmation: "create_alert_from_chart" });
    expect(wrong).toMatchObject({ status: 400, json: { error: "confirmation_mismatch" } });
    const summary = (await (await fetch(`${url}/api/runs/${s.runId}`, { headers: auth })).json()) as any;
    expect(summary.pending_approvals).toEqual([expect.objectContaining({ approval_id: requested.approval_id, tool_call_id: "alert-1", tool_name: ALERT })]);
    expect((await s.decide(requested.approval_id!, { decision: "approve", confirmation: ALERT })).status).toBe(200);
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", ...approvedAndRun("alert-1"), "run_completed"]);
  });
});

describe("decisions that stop a call", () => {
  it("denial: not executed, approved false, and a repeat or a change of mind gets a clear answer", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } }] }]);
    const requested = await s.waitFor("approval_requested", "write-1");
    const denied = await s.decide(requested.approval_id!, { decision: "deny", reason: "not now" });
    expect(denied).toEqual({ status: 200, json: { approval_id: requested.approval_id, decision: "denied", status: "resolved" } });
    expect(await s.decide(requested.approval_id!, { decision: "deny" })).toEqual(denied);
    expect(await s.decide(requested.approval_id!, { decision: "approve" })).toMatchObject({ status: 409, json: { error: "already_resolved", decision: "denied" } });
    expect((await s.decide("approval_unknown", { decision: "approve" })).status).toBe(404);
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", "tool_started:write-1", "approval_requested:write-1", "approval_resolved:write-1", "tool_execution:write-1", "tool_completed:write-1", "run_completed"]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "denied" });
    expect(s.one("tool_completed", "write-1")).toMatchObject({ approved: false });
    expect((await demoCalls()).total).toBe(0);
  });

  it("expiry by the run's alarm: expired, never denied, and a late decision gets 410", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } }] }]);
    const requested = await s.waitFor("approval_requested", "write-1");
    await s.toEnd(); // nobody decides: the alarm expires it
    expect(s.shape()).toEqual(["run_started", "tool_started:write-1", "approval_requested:write-1", "approval_resolved:write-1", "tool_execution:write-1", "tool_completed:write-1", "run_completed"]);
    expect(s.one("approval_resolved", "write-1")).toMatchObject({ decision: "expired" });
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "expired" });
    expect(await s.decide(requested.approval_id!, { decision: "approve" })).toMatchObject({ status: 410, json: { error: "expired" } });
    expect((await demoCalls()).total).toBe(0);
  });
});

describe("cancellation at each wait", () => {
  async function cancel(s: Scenario) {
    const res = await post(`/api/runs/${s.runId}/cancel`, {});
    expect(res).toEqual({ status: 202, json: { status: "cancelling" } });
  }

  it("while waiting for approval", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } }] }]);
    await s.waitFor("approval_requested", "write-1");
    await cancel(s);
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", "tool_started:write-1", "approval_requested:write-1", "approval_resolved:write-1", "tool_execution:write-1", "tool_completed:write-1", "run_failed"]);
    expect(s.one("approval_resolved", "write-1")).toMatchObject({ decision: "cancelled" });
    expect(s.one("tool_execution", "write-1")).toMatchObject({ reason: "cancelled" });
    expect(s.one("run_failed")).toMatchObject({ error: { code: "cancelled" } });
  });

  it("while waiting for an answer", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which team?" } }] }]);
    await s.waitFor("human_input_requested", "ask-1");
    await cancel(s);
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", "tool_started:ask-1", "human_input_requested:ask-1", "tool_execution:ask-1", "tool_completed:ask-1", "run_failed"]);
    expect(s.one("tool_execution", "ask-1")).toMatchObject({ execution_status: "not_executed", reason: "cancelled" });
  });

  it("while waiting for admission behind a human__ask", async () => {
    const s = await Scenario.start(ASK_THEN_WRITE);
    await s.approve("write-1");
    await s.waitFor("tool_execution_started", "write-1");
    await cancel(s);
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:ask-1",
      "human_input_requested:ask-1",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution_started:write-1",
      "tool_execution:ask-1",
      "tool_completed:ask-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "run_failed",
    ]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "cancelled" });
    expect(s.one("tool_completed", "write-1")).toMatchObject({ approved: true });
    expect((await demoCalls()).total).toBe(0);
  });

  it("during a dispatch: the call is not abandoned and its result is still reported", async () => {
    await armFault("create_dashboard", "delay", 600);
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } }] }, { text: "never said" }]);
    await s.approve("write-1");
    await s.waitFor("tool_execution_started", "write-1");
    await new Promise((r) => setTimeout(r, 150)); // the call is on the wire now
    await cancel(s);
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", ...approvedAndRun("write-1"), "run_failed"]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect((await demoCalls()).by_tool.create_dashboard).toBe(1);
  });
});

describe("transport", () => {
  it("a mutating call that times out is executed with transport_timeout and reached the server once", async () => {
    await armFault("create_dashboard", "delay", 2_500);
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "slow" } }] }]);
    await s.approve("write-1");
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", ...approvedAndRun("write-1"), "run_completed"]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "executed", error: { code: "transport_timeout" } });
    await new Promise((r) => setTimeout(r, 2_000)); // long enough for any retry to have arrived
    expect((await demoCalls()).by_tool.create_dashboard).toBe(1);
  });

  it("an ambiguous failure (committed, response dropped) is never retried", async () => {
    await armFault("create_dashboard", "commit_then_drop");
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "lost" } }] }]);
    await s.approve("write-1");
    await s.toEnd();
    const execution = s.one("tool_execution", "write-1");
    expect(execution).toMatchObject({ execution_status: "executed", error: { code: expect.stringMatching(/^transport_(timeout|error)$/) } });
    await new Promise((r) => setTimeout(r, 500));
    expect((await demoCalls()).by_tool.create_dashboard).toBe(1);
  });
});

describe("ordered admission and the ceiling", () => {
  it("stalls an approved call behind an unanswered human__ask until its admission deadline", async () => {
    const s = await Scenario.start(ASK_THEN_WRITE);
    await s.approve("write-1");
    await s.waitFor("tool_execution", "write-1");
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "expired" });
    // Then the question itself expires.
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:ask-1",
      "human_input_requested:ask-1",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution_started:write-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "tool_execution:ask-1",
      "tool_completed:ask-1",
      "run_completed",
    ]);
    expect((await demoCalls()).total).toBe(0);
  });

  it("runs the approved call once the earlier question is answered", async () => {
    const s = await Scenario.start(ASK_THEN_WRITE);
    await s.approve("write-1");
    const answer = await post(`/api/runs/${s.runId}/inputs/ask-1`, { answer: "Latency", answered_by: "U-2" });
    expect(answer).toEqual({ status: 200, json: { tool_call_id: "ask-1", status: "answered" } });
    expect(await post(`/api/runs/${s.runId}/inputs/ask-1`, { answer: "Latency", answered_by: "U-2" })).toEqual(answer);
    expect((await post(`/api/runs/${s.runId}/inputs/ask-1`, { answer: "Other", answered_by: "U-2" })).status).toBe(409);
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:ask-1",
      "human_input_requested:ask-1",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution_started:write-1",
      "human_input_received:ask-1",
      "tool_execution:ask-1",
      "tool_completed:ask-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "run_completed",
    ]);
    expect(s.one("human_input_received", "ask-1")).toMatchObject({ answered_by: "U-2" });
    expect(JSON.stringify(s.events)).not.toContain("Latency"); // the answer goes to the model, not the stream
    expect((await demoCalls()).by_tool.create_dashboard).toBe(1);
  });

  it("enforces the effective call ceiling (the trigger narrows the host's)", async () => {
    const s = await Scenario.start(
      [
        {
          tool_calls: [
            { tool_name: LIST, tool_call_id: "read-1", arguments: {} },
            { tool_name: LIST, tool_call_id: "read-2", arguments: {} },
          ],
        },
      ],
      { max_tool_calls: 1 },
    );
    await s.toEnd();
    // read-2 can never be admitted once read-1 took the only call: it ends at once, before read-1 returns.
    expect(s.shape()).toEqual(["run_started", "tool_started:read-1", "tool_started:read-2", "tool_execution:read-2", "tool_completed:read-2", "tool_execution:read-1", "tool_completed:read-1", "run_completed"]);
    expect(s.one("tool_started", "read-1")).toMatchObject({ approval_required: false });
    expect(s.one("tool_execution", "read-1")).toMatchObject({ execution_status: "executed" });
    expect(s.one("tool_execution", "read-2")).toMatchObject({ execution_status: "not_executed", reason: "call_ceiling" });
    expect(s.events.some((e) => e.type === "tool_execution_started" || e.type === "approval_requested")).toBe(false);
    expect((await demoCalls()).by_tool.list_dashboards).toBe(1);
  });
});

describe("what the stream shows", () => {
  it("redacts secret-looking arguments in the approval and never puts them on the stream", async () => {
    const s = await Scenario.start([
      {
        tool_calls: [
          {
            tool_name: CREATE,
            tool_call_id: "write-1",
            arguments: { title: "Billing", api_key: "sk-live-123", panels: ["p1"], auth: { password: "hunter2", headers: { Authorization: "Bearer abc" } } },
          },
        ],
      },
    ]);
    const requested = await s.approve("write-1");
    await s.toEnd();
    expect(requested.arguments).toEqual({ title: "Billing", api_key: "[REDACTED]", panels: ["p1"], auth: { password: "[REDACTED]", headers: { Authorization: "[REDACTED]" } } });
    for (const secret of ["sk-live-123", "hunter2", "Bearer abc"]) expect(s.client.raw).not.toContain(secret);
    // The approved call was dispatched with the exact arguments shown (before redaction).
    const calls = await demoCalls();
    expect(calls.calls[0]?.arguments).toMatchObject({ title: "Billing", panels: ["p1"] });
  });

  it("drives adapter hooks from the stream: execution-started only for human-approved calls", async () => {
    const s = await Scenario.start([
      {
        tool_calls: [
          { tool_name: LIST, tool_call_id: "read-1", arguments: {} },
          { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "a" } },
          { tool_name: CREATE, tool_call_id: "write-2", arguments: { title: "b" } },
          { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "?" } },
        ],
      },
    ]);
    await s.waitFor("tool_completed", "read-1");
    await s.approve("write-1");
    await s.waitFor("tool_completed", "write-1");
    const second = await s.waitFor("approval_requested", "write-2");
    await s.decide(second.approval_id!, { decision: "deny" });
    await post(`/api/runs/${s.runId}/inputs/ask-1`, { answer: "ok", answered_by: "U" });
    await s.toEnd();
    const recorded: unknown[][] = [];
    const dispatch = createHookDispatcher({
      onToolStart: (name, input) => recorded.push(["start", name, input]),
      onToolExecutionStarted: (name) => recorded.push(["execution_started", name]),
      onToolEnd: (name, elapsed, approved) => recorded.push(["end", name, typeof elapsed, approved]),
    });
    for (const e of s.client.events) dispatch(e.data);
    for (const e of s.client.events) dispatch(e.data); // a replay calls nothing twice
    expect(recorded).toEqual([
      ["start", LIST, { tool_call_id: "read-1", approval_required: false }],
      ["start", CREATE, { tool_call_id: "write-1", approval_required: true }],
      ["start", CREATE, { tool_call_id: "write-2", approval_required: true }],
      ["start", "human__ask", { tool_call_id: "ask-1", approval_required: false }],
      ["end", LIST, "number", true],
      ["execution_started", CREATE],
      ["end", CREATE, "number", true],
      ["end", CREATE, "number", false],
      ["end", "human__ask", "number", true],
    ]);
  });
});
