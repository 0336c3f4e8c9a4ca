// The per-call lifecycle as pure functions: event order, decisions, ordered
// admission, ceiling, budget, expiry and cancellation.
import { describe, expect, it } from "vitest";
import {
  advanceAdmission,
  announce,
  answerInput,
  cancelPending,
  decideApproval,
  expireDue,
  nextDeadline,
  settleDispatch,
  turnDone,
  type Effect,
  type Limits,
  type RunCounters,
  type ToolCallRecord,
  type TurnState,
} from "../../src/execution/tool-calls";

const T0 = 1_000_000;
const limits: Limits = { ceiling: 25, budget: { mcp__demo__create_dashboard: 2 }, approvalTimeoutMs: 1_000, admissionTimeoutMs: 5_000 };

function call(index: number, over: Partial<ToolCallRecord> = {}): ToolCallRecord {
  return {
    turn: 0,
    index,
    tool_call_id: `call-${index}`,
    tool_name: "mcp__demo__create_dashboard",
    arguments: { title: "t" },
    arguments_digest: "sha256:x",
    kind: "mcp",
    mutating: true,
    level: "approve",
    description: "Create a dashboard.",
    state: "awaiting_admission",
    started_at: T0,
    approved: false,
    ...over,
  };
}

const events = (effects: Effect[]) => effects.map((e) => (e.kind === "emit" ? `${e.type}` : `dispatch:${e.call.tool_call_id}`));
const fields = (effects: Effect[], type: string) =>
  (effects.find((e) => e.kind === "emit" && e.type === type) as { fields: Record<string, unknown> }).fields;

function counters(): RunCounters {
  return { admitted: 0, used: {} };
}

describe("announce", () => {
  it("asks a person for a budgeted mutating call, showing redacted arguments", () => {
    const c = call(0);
    const effects = announce(c, { title: "t", api_key: "[redacted]" }, limits, T0, "approval-1");
    expect(events(effects)).toEqual(["tool_started", "approval_requested"]);
    expect(fields(effects, "tool_started")).toEqual({ tool_name: c.tool_name, tool_call_id: "call-0", approval_required: true });
    expect(fields(effects, "approval_requested")).toEqual({
      tool_name: c.tool_name,
      tool_call_id: "call-0",
      approval_id: "approval-1",
      level: "approve",
      description: "Create a dashboard.",
      arguments: { title: "t", api_key: "[redacted]" },
      expires_at: new Date(T0 + 1_000).toISOString(),
    });
    expect(c.state).toBe("awaiting_approval");
  });

  it("ends a mutating call outside the budget right after tool_started, without asking", () => {
    const c = call(0, { tool_name: "mcp__demo__create_kpi" });
    const effects = announce(c, {}, limits, T0, "approval-1");
    expect(events(effects)).toEqual(["tool_started", "tool_execution", "tool_completed"]);
    expect(fields(effects, "tool_execution")).toEqual({
      tool_name: "mcp__demo__create_kpi",
      tool_call_id: "call-0",
      execution_status: "not_executed",
      reason: "not_in_budget",
    });
    expect(fields(effects, "tool_completed")).toMatchObject({ approved: false });
    expect(c.approval).toBeUndefined();
  });

  it("runs read-only calls with automatic approval and asks human__ask's question", () => {
    const ro = call(0, { tool_name: "mcp__demo__list_dashboards", mutating: false, level: null });
    expect(events(announce(ro, {}, limits, T0, "a"))).toEqual(["tool_started"]);
    expect(ro).toMatchObject({ state: "awaiting_admission", approved: true });
    const ask = call(1, {
      tool_name: "human__ask",
      kind: "human_ask",
      mutating: false,
      level: null,
      arguments: { question: "Which team?" },
    });
    const effects = announce(ask, {}, limits, T0, "a");
    expect(events(effects)).toEqual(["tool_started", "human_input_requested"]);
    expect(fields(effects, "human_input_requested")).toEqual({
      tool_call_id: "call-1",
      question: "Which team?",
      expires_at: new Date(T0 + 1_000).toISOString(),
    });
  });
});

describe("decideApproval", () => {
  function pending(level: "approve" | "confirm" = "approve") {
    const c = call(0, { level });
    announce(c, {}, limits, T0, "approval-1");
    return c;
  }

  it("approves once: approval_resolved then tool_execution_started; a repeat is the same 200 with no event", () => {
    const c = pending();
    const first = decideApproval(c, { decision: "approve", decided_by: "U1" }, limits, T0 + 10);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ approval_id: "approval-1", decision: "approved", status: "resolved" });
    expect("effects" in first && events(first.effects)).toEqual(["approval_resolved", "tool_execution_started"]);
    expect("effects" in first && fields(first.effects, "tool_execution_started")).toEqual({
      tool_name: c.tool_name,
      tool_call_id: "call-0",
      approval_id: "approval-1",
    });
    const again = decideApproval(c, { decision: "approve", decided_by: "U2" }, limits, T0 + 20);
    expect(again.status).toBe(200);
    expect("effects" in again && again.effects).toEqual([]);
    const conflict = decideApproval(c, { decision: "deny", decided_by: "U2" }, limits, T0 + 20);
    expect(conflict).toMatchObject({ status: 409, body: { error: "already_resolved", decision: "approved" } });
  });

  it("denies: the call ends not_executed(denied), approved false", () => {
    const c = pending();
    const answer = decideApproval(c, { decision: "deny", decided_by: "U1" }, limits, T0 + 10);
    expect("effects" in answer && events(answer.effects)).toEqual(["approval_resolved", "tool_execution", "tool_completed"]);
    expect("effects" in answer && fields(answer.effects, "tool_execution")).toMatchObject({
      execution_status: "not_executed",
      reason: "denied",
    });
    expect("effects" in answer && fields(answer.effects, "tool_completed")).toMatchObject({ approved: false, duration_ms: 10 });
  });

  it("needs the tool name as confirmation for confirm-level approvals, and leaves the approval pending otherwise", () => {
    const c = pending("confirm");
    expect(decideApproval(c, { decision: "approve", decided_by: "U1" }, limits, T0).status).toBe(400);
    expect(decideApproval(c, { decision: "approve", decided_by: "U1", confirmation: "create_dashboard" }, limits, T0).status).toBe(400);
    expect(c.state).toBe("awaiting_approval");
    expect(decideApproval(c, { decision: "approve", decided_by: "U1", confirmation: c.tool_name }, limits, T0).status).toBe(200);
  });

  it("lets expiry win over a decision that arrives at or after expires_at, and never records it as denied", () => {
    const c = pending();
    const late = decideApproval(c, { decision: "approve", decided_by: "U1" }, limits, T0 + 1_000);
    expect(late.status).toBe(410);
    expect("effects" in late && events(late.effects)).toEqual(["approval_resolved", "tool_execution", "tool_completed"]);
    expect("effects" in late && fields(late.effects, "approval_resolved")).toMatchObject({ decision: "expired" });
    expect("effects" in late && fields(late.effects, "tool_execution")).toMatchObject({ reason: "expired" });
    const again = decideApproval(c, { decision: "deny", decided_by: "U1" }, limits, T0 + 2_000);
    expect(again.status).toBe(410);
    expect("effects" in again && again.effects).toEqual([]);
  });
});

describe("ordered admission", () => {
  it("runs calls in the model's order: a later approved call waits for an earlier pending approval", () => {
    const turn: TurnState = { calls: [call(0), call(1)] };
    announce(turn.calls[0]!, {}, limits, T0, "approval-0");
    announce(turn.calls[1]!, {}, limits, T0, "approval-1");
    const n = counters();
    decideApproval(turn.calls[1]!, { decision: "approve", decided_by: "U" }, limits, T0 + 1);
    expect(events(advanceAdmission(turn, n, limits, T0 + 1))).toEqual([]);
    decideApproval(turn.calls[0]!, { decision: "approve", decided_by: "U" }, limits, T0 + 2);
    expect(events(advanceAdmission(turn, n, limits, T0 + 2))).toEqual(["dispatch:call-0"]);
    // One call in flight at a time.
    expect(events(advanceAdmission(turn, n, limits, T0 + 3))).toEqual([]);
    const settled = settleDispatch(
      turn.calls[0]!,
      { kind: "result", is_error: false, content_bytes: 10, summary: "ok", model_text: "ok" },
      T0 + 50,
    );
    expect(events(settled)).toEqual(["tool_execution", "tool_completed"]);
    expect(fields(settled, "tool_execution")).toEqual({
      tool_name: "mcp__demo__create_dashboard",
      tool_call_id: "call-0",
      approval_id: "approval-0",
      execution_status: "executed",
      result: { is_error: false, content_bytes: 10, summary: "ok" },
    });
    expect(fields(settled, "tool_completed")).toMatchObject({ approved: true, duration_ms: 50 });
    expect(events(advanceAdmission(turn, n, limits, T0 + 51))).toEqual(["dispatch:call-1"]);
    expect(n).toEqual({ admitted: 2, used: { mcp__demo__create_dashboard: 2 } });
  });

  it("stalls an approved call behind an earlier human__ask until it is answered", () => {
    const ask = call(0, { tool_name: "human__ask", kind: "human_ask", mutating: false, level: null, arguments: { question: "ok?" } });
    const write = call(1);
    const turn: TurnState = { calls: [ask, write] };
    announce(ask, {}, limits, T0, "a0");
    announce(write, {}, limits, T0, "a1");
    decideApproval(write, { decision: "approve", decided_by: "U" }, limits, T0 + 1);
    const n = counters();
    expect(events(advanceAdmission(turn, n, limits, T0 + 2))).toEqual([]);
    const answered = answerInput(ask, "yes", "U", T0 + 3);
    expect("effects" in answered && events(answered.effects)).toEqual(["human_input_received"]);
    expect(events(advanceAdmission(turn, n, limits, T0 + 4))).toEqual(["tool_execution", "tool_completed", "dispatch:call-1"]);
    expect(ask.model_result).toBe("yes");
  });

  it("ends a waiting call at its admission deadline", () => {
    const first = call(0);
    const second = call(1);
    const turn: TurnState = { calls: [first, second] };
    announce(first, {}, limits, T0, "a0");
    announce(second, {}, limits, T0, "a1");
    decideApproval(second, { decision: "approve", decided_by: "U" }, limits, T0);
    expect(nextDeadline(turn)).toBe(T0 + 1_000); // first's approval expiry comes first
    const effects = advanceAdmission(turn, counters(), limits, T0 + 5_000);
    expect(events(effects)).toEqual(["tool_execution", "tool_completed"]);
    expect(fields(effects, "tool_execution")).toMatchObject({ tool_call_id: "call-1", reason: "expired" });
    expect(fields(effects, "tool_completed")).toMatchObject({ approved: true });
  });

  it("applies the call ceiling to waiting calls and the budget at admission", () => {
    const budget: Limits = { ...limits, ceiling: 2, budget: { mcp__demo__create_kpi: 1, mcp__demo__list_dashboards: 0 } };
    const kpi1 = call(0, { tool_name: "mcp__demo__create_kpi" });
    const kpi2 = call(1, { tool_name: "mcp__demo__create_kpi" });
    const read = call(2, { tool_name: "mcp__demo__list_dashboards", mutating: false, level: null });
    const kpi3 = call(3, { tool_name: "mcp__demo__create_kpi" });
    const turn: TurnState = { calls: [kpi1, kpi2, read, kpi3] };
    for (const c of turn.calls) announce(c, {}, budget, T0, `a-${c.index}`);
    for (const c of [kpi1, kpi2, kpi3]) decideApproval(c, { decision: "approve", decided_by: "U" }, budget, T0);
    const n = counters();
    expect(events(advanceAdmission(turn, n, budget, T0))).toEqual(["dispatch:call-0"]);
    settleDispatch(kpi1, { kind: "result", is_error: false, content_bytes: 1, summary: "", model_text: "" }, T0);
    const next = advanceAdmission(turn, n, budget, T0);
    // kpi2: over its budget of 1; read: admitted (2 of 2); kpi3: can never be admitted now.
    expect(events(next)).toEqual(["tool_execution", "tool_completed", "dispatch:call-2", "tool_execution", "tool_completed"]);
    expect(fields(next, "tool_execution")).toMatchObject({ tool_call_id: "call-1", reason: "budget_exhausted" });
    expect((next[3] as { fields: Record<string, unknown> }).fields).toMatchObject({ tool_call_id: "call-3", reason: "call_ceiling" });
  });
});

describe("expiry and cancellation", () => {
  it("expires approvals and questions by time", () => {
    const write = call(0);
    const ask = call(1, { tool_name: "human__ask", kind: "human_ask", mutating: false, level: null, arguments: { question: "?" } });
    const turn: TurnState = { calls: [write, ask] };
    announce(write, {}, limits, T0, "a0");
    announce(ask, {}, limits, T0, "a1");
    expect(expireDue(turn, T0 + 999)).toEqual([]);
    expect(events(expireDue(turn, T0 + 1_000))).toEqual([
      "approval_resolved",
      "tool_execution",
      "tool_completed",
      "tool_execution",
      "tool_completed",
    ]);
    expect(turnDone(turn)).toBe(true);
    expect(answerInput(ask, "late", "U", T0 + 2_000).status).toBe(410);
  });

  it("cancels everything not yet dispatched and leaves the dispatched call to settle", () => {
    const inFlight = call(0);
    const approved = call(1);
    const pendingApproval = call(2);
    const turn: TurnState = { calls: [inFlight, approved, pendingApproval] };
    for (const c of turn.calls) announce(c, {}, limits, T0, `a${c.index}`);
    decideApproval(inFlight, { decision: "approve", decided_by: "U" }, limits, T0);
    decideApproval(approved, { decision: "approve", decided_by: "U" }, limits, T0);
    advanceAdmission(turn, counters(), limits, T0);
    const effects = cancelPending(turn, T0 + 5);
    expect(events(effects)).toEqual(["tool_execution", "tool_completed", "approval_resolved", "tool_execution", "tool_completed"]);
    expect(fields(effects, "tool_completed")).toMatchObject({ tool_call_id: "call-1", approved: true });
    expect(fields(effects, "approval_resolved")).toMatchObject({ tool_call_id: "call-2", decision: "cancelled" });
    expect(inFlight.state).toBe("dispatched");
  });
});
