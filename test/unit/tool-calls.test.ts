// The per-call lifecycle as pure functions: event order, decisions, ordered
// admission, ceiling, budget, expiry and cancellation.
import { describe, expect, it } from "vitest";
import { shownArguments } from "../../src/execution/shown-arguments";
import {
  advanceAdmission,
  announce,
  answerInput,
  cancelPending,
  decideApproval,
  expireDue,
  nextDeadline,
  refuseDispatch,
  settleDispatch,
  turnDone,
  type Decision,
  type Effect,
  type Limits,
  type Proposed,
  type RunCounters,
  type ToolCall,
} from "../../src/execution/tool-calls";
import type { ApprovalPolicy, Requester } from "../../src/policy/approval-policy";

const NOTHING_SHOWN = shownArguments({});

const T0 = 1_000_000;
const limits: Limits = { ceiling: 25, budget: { mcp__demo__create_dashboard: 2 }, approvalTimeoutMs: 1_000, admissionTimeoutMs: 5_000 };

function call(index: number, over: Partial<Proposed> = {}): Proposed {
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
    state: "proposed",
    started_at: T0,
    ...over,
  };
}

/** The calls of one turn (turn 0), as the run keeps them: transitions replace their slots. */
function turnOf(...proposed: Proposed[]): ToolCall[] {
  return [...proposed];
}

/** The run's requester, and an API approver whose person is its own id: the default policy lets every one decide. */
const REQUESTER: Requester = { principal_id: "token:requester", person: null };
const asApi = <D extends { decision: "approve" | "deny"; decided_by: string }>(d: D) => ({
  ...d,
  decider: { via: "api" as const, principal_id: d.decided_by, person: `access:${d.decided_by}@example.com`, has_approver_role: true },
});
const ids = (approvalId: string) => ({ approvalId, mutationId: `mut-${approvalId}` });
const byId = (calls: ToolCall[], id: string) => calls.find((c) => c.tool_call_id === id)!;
const approve = (calls: ToolCall[], approvalId: string, now: number, over: Partial<{ decided_by: string; confirmation: string }> = {}) =>
  decideApproval(
    calls,
    approvalId,
    asApi({ decision: "approve", decided_by: "U", ...over }),
    REQUESTER,
    {},
    limits,
    now,
    `mut-${approvalId}`,
  );
const statusOf = (r: { verdict: { kind: string } }) => r.verdict.kind;

/** The stream events and dispatches the effects ask for (durable row work shown by `rows`). */
const events = (effects: Effect[]) =>
  effects.flatMap((e) => (e.kind === "emit" ? [`${e.type}`] : e.kind === "dispatch" ? [`dispatch:${e.call.tool_call_id}`] : []));
const rows = (effects: Effect[]) =>
  effects.flatMap((e) =>
    e.kind === "record_intent" ? [`intent:${e.mutation_id}`] : e.kind === "settle_unsent" ? [`unsent:${e.mutation_id}:${e.reason}`] : [],
  );
const fields = (effects: Effect[], type: string) =>
  (effects.find((e) => e.kind === "emit" && e.type === type) as { fields: Record<string, unknown> }).fields;

function counters(): RunCounters {
  return { admitted: 0, used: {} };
}

describe("announce", () => {
  it("asks a person for a budgeted mutating call, showing redacted arguments", () => {
    const c = call(0);
    const calls = turnOf(c);
    const effects = announce(calls, c, shownArguments({ title: "t", api_key: "k-1" }), limits, T0, ids("approval-1"));
    expect(events(effects)).toEqual(["tool_started", "approval_requested"]);
    expect(rows(effects)).toEqual([]);
    expect(fields(effects, "tool_started")).toEqual({ tool_name: c.tool_name, tool_call_id: "call-0", approval_required: true });
    expect(fields(effects, "approval_requested")).toEqual({
      tool_name: c.tool_name,
      tool_call_id: "call-0",
      approval_id: "approval-1",
      level: "approve",
      description: "Create a dashboard.",
      arguments: { title: "t", api_key: "[redacted]" },
      hidden: [{ path: "/api_key", reason: "secret", chars: 5 }],
      expires_at: new Date(T0 + 1_000).toISOString(),
      required: 1,
      approvers: null,
    });
    expect(calls[0]!.state).toBe("awaiting_approval");
  });

  it("carries the tool's annotations on approval_requested as the server gave them, its title redacted; none when it gave none", () => {
    const annotations = {
      title: "Delete ghp_abcdefghijklmnopqrstuvwxyz0123",
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    };
    const c = call(0, { level: "confirm", annotations });
    const requested = fields(announce(turnOf(c), c, NOTHING_SHOWN, limits, T0, ids("approval-1")), "approval_requested");
    expect(requested.annotations).toEqual({ ...annotations, title: "Delete [redacted]" });
    const plain = call(0);
    expect(fields(announce(turnOf(plain), plain, NOTHING_SHOWN, limits, T0, ids("approval-1")), "approval_requested")).not.toHaveProperty(
      "annotations",
    );
  });

  it("ends a mutating call outside the budget right after tool_started, without asking", () => {
    const c = call(0, { tool_name: "mcp__demo__create_kpi" });
    const calls = turnOf(c);
    const effects = announce(calls, c, NOTHING_SHOWN, limits, T0, ids("approval-1"));
    expect(events(effects)).toEqual(["tool_started", "tool_execution", "tool_completed"]);
    expect(fields(effects, "tool_execution")).toEqual({
      tool_name: "mcp__demo__create_kpi",
      tool_call_id: "call-0",
      execution_status: "not_executed",
      reason: "not_in_budget",
    });
    expect(fields(effects, "tool_completed")).toMatchObject({ approved: false });
    expect(rows(effects)).toEqual([]);
    expect(calls[0]).toMatchObject({ state: "done", approved: false });
    expect(calls[0]).not.toHaveProperty("approval");
  });

  it("runs read-only calls with automatic approval and asks human__ask's question", () => {
    const ro = call(0, { tool_name: "mcp__demo__list_dashboards", mutating: false, level: null });
    const calls = turnOf(ro);
    expect(events(announce(calls, ro, NOTHING_SHOWN, limits, T0, ids("a")))).toEqual(["tool_started"]);
    expect(calls[0]).toMatchObject({ state: "awaiting_admission", grant: "automatic", mutation_id: null });
    const ask = call(1, {
      tool_name: "human__ask",
      kind: "human_ask",
      mutating: false,
      level: null,
      arguments: { question: "Which team?" },
    });
    calls.push(ask);
    const effects = announce(calls, ask, NOTHING_SHOWN, limits, T0, ids("a"));
    expect(events(effects)).toEqual(["tool_started", "human_input_requested"]);
    expect(fields(effects, "human_input_requested")).toEqual({
      tool_call_id: "call-1",
      question: "Which team?",
      expires_at: new Date(T0 + 1_000).toISOString(),
    });
  });

  it("asks human__ask with redacted arguments when its question is not text", () => {
    const ask = call(0, {
      tool_name: "human__ask",
      kind: "human_ask",
      mutating: false,
      level: null,
      arguments: { question: 7, api_token: "s3cret" },
    });
    const effects = announce(turnOf(ask), ask, NOTHING_SHOWN, limits, T0, ids("a"));
    expect(fields(effects, "human_input_requested")).toMatchObject({ question: JSON.stringify({ question: 7, api_token: "[redacted]" }) });
  });

  it("records the intent of a mutation that needs nobody's approval when it is announced", () => {
    const auto = call(0, { level: null });
    const calls = turnOf(auto);
    const effects = announce(calls, auto, NOTHING_SHOWN, limits, T0, ids("a"));
    expect(events(effects)).toEqual(["tool_started"]);
    expect(rows(effects)).toEqual(["intent:mut-a"]);
    // The audit fields of the row: nobody decided, approved the moment it was announced.
    expect(effects.find((e) => e.kind === "record_intent")).toMatchObject({ approval_id: null, approved_by: "automatic", approved_at: T0 });
  });
});

describe("decideApproval", () => {
  function pending(level: "approve" | "confirm" = "approve") {
    const c = call(0, { level });
    const calls = turnOf(c);
    announce(calls, c, NOTHING_SHOWN, limits, T0, ids("approval-1"));
    return calls;
  }

  it("approves once: approval_resolved then tool_execution_started and the intent; a repeat is the same answer with no event", () => {
    const calls = pending();
    const first = approve(calls, "approval-1", T0 + 10, { decided_by: "U1" });
    expect(first.verdict).toEqual({ kind: "resolved", approval_id: "approval-1", decision: "approved" });
    expect(events(first.effects)).toEqual(["approval_resolved", "tool_execution_started"]);
    expect(rows(first.effects)).toEqual(["intent:mut-approval-1"]);
    expect(first.effects.find((e) => e.kind === "record_intent")).toMatchObject({ approved_by: "U1", approved_at: T0 + 10 });
    expect(fields(first.effects, "tool_execution_started")).toEqual({
      tool_name: "mcp__demo__create_dashboard",
      tool_call_id: "call-0",
      approval_id: "approval-1",
    });
    const again = approve(calls, "approval-1", T0 + 20, { decided_by: "U2" });
    expect(again.verdict).toEqual(first.verdict);
    expect(again.effects).toEqual([]);
    const conflict = decideApproval(
      calls,
      "approval-1",
      asApi({ decision: "deny", decided_by: "U2" }),
      REQUESTER,
      {},
      limits,
      T0 + 20,
      "m",
    );
    expect(conflict).toMatchObject({ verdict: { kind: "already_resolved", decision: "approved" }, effects: [] });
  });

  it("binds the approval to the tool's digest: approval_requested carries it; a changed tool ends tool_changed with the digest now listed (contract section 23)", () => {
    const approved = `sha256:${"a".repeat(64)}`;
    const now = `sha256:${"b".repeat(64)}`;
    for (const listed of [now, null]) {
      const c = call(0, { tool_digest: approved });
      const calls = turnOf(c);
      expect(fields(announce(calls, c, NOTHING_SHOWN, limits, T0, ids("approval-1")), "approval_requested").tool_digest).toBe(approved);
      approve(calls, "approval-1", T0 + 10);
      const admitted = advanceAdmission(calls, 0, counters(), limits, T0 + 10);
      const dispatched = admitted.find((e) => e.kind === "dispatch");
      if (dispatched?.kind !== "dispatch") throw new Error("not dispatched");
      const ended = refuseDispatch(calls, dispatched.call, "tool_changed", T0 + 20, { tool_digest: listed });
      expect(events(ended)).toEqual(["tool_execution", "tool_completed"]);
      expect(fields(ended, "tool_execution")).toEqual({
        tool_name: c.tool_name,
        tool_call_id: "call-0",
        approval_id: "approval-1",
        execution_status: "not_executed",
        reason: "tool_changed",
        tool_digest: listed,
        mutation_id: "mut-approval-1",
      });
      expect(fields(ended, "tool_completed")).toMatchObject({ approved: true });
    }
    // A tool its server did not list carries none on approval_requested.
    const plain = call(0);
    expect(fields(announce(turnOf(plain), plain, NOTHING_SHOWN, limits, T0, ids("approval-1")), "approval_requested")).not.toHaveProperty(
      "tool_digest",
    );
  });

  it("answers not_found for an approval the run never asked", () => {
    expect(approve(pending(), "approval-x", T0).verdict).toEqual({ kind: "not_found", what: "approval", id: "approval-x" });
  });

  it("denies: the call ends not_executed(denied), approved false, no row", () => {
    const calls = pending();
    const answer = decideApproval(calls, "approval-1", asApi({ decision: "deny", decided_by: "U1" }), REQUESTER, {}, limits, T0 + 10, "m");
    expect(answer.verdict).toEqual({ kind: "resolved", approval_id: "approval-1", decision: "denied" });
    expect(events(answer.effects)).toEqual(["approval_resolved", "tool_execution", "tool_completed"]);
    expect(rows(answer.effects)).toEqual([]);
    expect(fields(answer.effects, "tool_execution")).toMatchObject({
      execution_status: "not_executed",
      reason: "denied",
    });
    expect(fields(answer.effects, "tool_completed")).toMatchObject({ approved: false, duration_ms: 10 });
  });

  it("needs the tool name as confirmation for confirm-level approvals, and leaves the approval pending otherwise", () => {
    const calls = pending("confirm");
    expect(statusOf(approve(calls, "approval-1", T0))).toBe("confirmation_mismatch");
    expect(approve(calls, "approval-1", T0, { confirmation: "create_dashboard" }).verdict).toEqual({
      kind: "confirmation_mismatch",
      tool_name: "mcp__demo__create_dashboard",
    });
    expect(calls[0]!.state).toBe("awaiting_approval");
    expect(statusOf(approve(calls, "approval-1", T0, { confirmation: "mcp__demo__create_dashboard" }))).toBe("resolved");
  });

  it("lets expiry win over a decision that arrives at or after expires_at, and never records it as denied", () => {
    const calls = pending();
    const late = approve(calls, "approval-1", T0 + 1_000, { decided_by: "U1" });
    expect(late.verdict).toEqual({ kind: "expired" });
    expect(events(late.effects)).toEqual(["approval_resolved", "tool_execution", "tool_completed"]);
    expect(fields(late.effects, "approval_resolved")).toMatchObject({ decision: "expired" });
    expect(fields(late.effects, "tool_execution")).toMatchObject({ reason: "expired" });
    expect(rows(late.effects)).toEqual([]);
    const again = decideApproval(
      calls,
      "approval-1",
      asApi({ decision: "deny", decided_by: "U1" }),
      REQUESTER,
      {},
      limits,
      T0 + 2_000,
      "m",
    );
    expect(again).toEqual({ verdict: { kind: "expired" }, effects: [] });
  });
});

describe("ordered admission", () => {
  it("runs calls in the model's order: a later approved call waits for an earlier pending approval", () => {
    const calls = turnOf(call(0), call(1));
    announce(calls, calls[0] as Proposed, NOTHING_SHOWN, limits, T0, ids("approval-0"));
    announce(calls, calls[1] as Proposed, NOTHING_SHOWN, limits, T0, ids("approval-1"));
    const n = counters();
    approve(calls, "approval-1", T0 + 1);
    expect(events(advanceAdmission(calls, 0, n, limits, T0 + 1))).toEqual([]);
    approve(calls, "approval-0", T0 + 2);
    expect(events(advanceAdmission(calls, 0, n, limits, T0 + 2))).toEqual(["dispatch:call-0"]);
    // One call in flight at a time.
    expect(events(advanceAdmission(calls, 0, n, limits, T0 + 3))).toEqual([]);
    const inFlight = calls[0]!;
    if (inFlight.state !== "dispatched") throw new Error("call-0 should be dispatched");
    const settled = settleDispatch(
      calls,
      inFlight,
      { kind: "result", is_error: false, content_bytes: 10, summary: "ok", model_text: "ok", sent: true },
      T0 + 50,
    );
    expect(events(settled)).toEqual(["tool_execution", "tool_completed"]);
    expect(rows(settled)).toEqual([]);
    expect(fields(settled, "tool_execution")).toEqual({
      tool_name: "mcp__demo__create_dashboard",
      tool_call_id: "call-0",
      approval_id: "approval-0",
      execution_status: "executed",
      result: { is_error: false, content_bytes: 10, summary: "ok" },
      mutation_id: "mut-approval-0",
    });
    expect(fields(settled, "tool_completed")).toMatchObject({ approved: true, duration_ms: 50 });
    expect(events(advanceAdmission(calls, 0, n, limits, T0 + 51))).toEqual(["dispatch:call-1"]);
    expect(n).toEqual({ admitted: 2, used: { mcp__demo__create_dashboard: 2 } });
  });

  it("stalls an approved call behind an earlier human__ask until it is answered", () => {
    const ask = call(0, { tool_name: "human__ask", kind: "human_ask", mutating: false, level: null, arguments: { question: "ok?" } });
    const write = call(1);
    const calls = turnOf(ask, write);
    announce(calls, ask, NOTHING_SHOWN, limits, T0, ids("a0"));
    announce(calls, write, NOTHING_SHOWN, limits, T0, ids("a1"));
    approve(calls, "a1", T0 + 1);
    const n = counters();
    expect(events(advanceAdmission(calls, 0, n, limits, T0 + 2))).toEqual([]);
    const answered = answerInput(calls, "call-0", "yes", "U", T0 + 3);
    expect(answered.verdict).toEqual({ kind: "answered", tool_call_id: "call-0" });
    expect(events(answered.effects)).toEqual(["human_input_received"]);
    expect(events(advanceAdmission(calls, 0, n, limits, T0 + 4))).toEqual(["tool_execution", "tool_completed", "dispatch:call-1"]);
    expect(byId(calls, "call-0")).toMatchObject({ state: "done", model_result: "yes", model_is_error: false });
    expect(answerInput(calls, "call-0", "yes", "U", T0 + 5)).toEqual({ verdict: answered.verdict, effects: [] });
    expect(answerInput(calls, "call-0", "no", "U", T0 + 5).verdict).toMatchObject({ kind: "already_resolved", decision: "answered" });
    expect(answerInput(calls, "call-9", "no", "U", T0 + 5).verdict).toMatchObject({ kind: "not_found" });
  });

  it("ends a waiting call at its admission deadline and settles its row unsent", () => {
    const first = call(0);
    const second = call(1);
    const calls = turnOf(first, second);
    announce(calls, first, NOTHING_SHOWN, limits, T0, ids("a0"));
    announce(calls, second, NOTHING_SHOWN, limits, T0, ids("a1"));
    approve(calls, "a1", T0);
    expect(nextDeadline(calls, 0)).toBe(T0 + 1_000); // first's approval expiry comes first
    const effects = advanceAdmission(calls, 0, counters(), limits, T0 + 5_000);
    expect(events(effects)).toEqual(["tool_execution", "tool_completed"]);
    expect(fields(effects, "tool_execution")).toMatchObject({ tool_call_id: "call-1", reason: "expired", mutation_id: "mut-a1" });
    expect(fields(effects, "tool_completed")).toMatchObject({ approved: true });
    expect(rows(effects)).toEqual(["unsent:mut-a1:expired"]);
    // The unsent row carries who approved it and when (the decision, not the expiry).
    expect(effects.find((e) => e.kind === "settle_unsent")).toMatchObject({ approved_at: T0, approved_by: "U" });
  });

  it("applies the call ceiling to waiting calls and the budget at admission", () => {
    const budget: Limits = { ...limits, ceiling: 2, budget: { mcp__demo__create_kpi: 1, mcp__demo__list_dashboards: 0 } };
    const kpi1 = call(0, { tool_name: "mcp__demo__create_kpi" });
    const kpi2 = call(1, { tool_name: "mcp__demo__create_kpi" });
    const read = call(2, { tool_name: "mcp__demo__list_dashboards", mutating: false, level: null });
    const kpi3 = call(3, { tool_name: "mcp__demo__create_kpi" });
    const calls = turnOf(kpi1, kpi2, read, kpi3);
    for (const c of [kpi1, kpi2, read, kpi3]) announce(calls, c, NOTHING_SHOWN, budget, T0, ids(`a-${c.index}`));
    for (const id of ["a-0", "a-1", "a-3"])
      decideApproval(calls, id, asApi({ decision: "approve", decided_by: "U" }), REQUESTER, {}, budget, T0, `mut-${id}`);
    const n = counters();
    expect(events(advanceAdmission(calls, 0, n, budget, T0))).toEqual(["dispatch:call-0"]);
    const first = calls[0]!;
    if (first.state !== "dispatched") throw new Error("call-0 should be dispatched");
    settleDispatch(calls, first, { kind: "result", is_error: false, content_bytes: 1, summary: "", model_text: "", sent: true }, T0);
    const next = advanceAdmission(calls, 0, n, budget, T0);
    // kpi2: over its budget of 1; read: admitted (2 of 2); kpi3: can never be admitted now.
    expect(events(next)).toEqual(["tool_execution", "tool_completed", "dispatch:call-2", "tool_execution", "tool_completed"]);
    expect(fields(next, "tool_execution")).toMatchObject({ tool_call_id: "call-1", reason: "budget_exhausted" });
    const emitted = next.filter((e) => e.kind === "emit");
    expect((emitted[2] as { fields: Record<string, unknown> }).fields).toMatchObject({ tool_call_id: "call-3", reason: "call_ceiling" });
    expect(rows(next)).toEqual(["unsent:mut-a-1:budget_exhausted", "unsent:mut-a-3:call_ceiling"]);
  });
});

describe("expiry and cancellation", () => {
  it("expires approvals and questions by time", () => {
    const write = call(0);
    const ask = call(1, { tool_name: "human__ask", kind: "human_ask", mutating: false, level: null, arguments: { question: "?" } });
    const calls = turnOf(write, ask);
    announce(calls, write, NOTHING_SHOWN, limits, T0, ids("a0"));
    announce(calls, ask, NOTHING_SHOWN, limits, T0, ids("a1"));
    expect(expireDue(calls, 0, T0 + 999)).toEqual([]);
    expect(events(expireDue(calls, 0, T0 + 1_000))).toEqual([
      "approval_resolved",
      "tool_execution",
      "tool_completed",
      "tool_execution",
      "tool_completed",
    ]);
    expect(turnDone(calls, 0)).toBe(true);
    expect(answerInput(calls, "call-1", "late", "U", T0 + 2_000).verdict).toEqual({ kind: "expired" });
  });

  it("cancels everything not yet dispatched and leaves the dispatched call to settle", () => {
    const calls = turnOf(call(0), call(1), call(2));
    for (const c of [...calls] as Proposed[]) announce(calls, c, NOTHING_SHOWN, limits, T0, ids(`a${c.index}`));
    approve(calls, "a0", T0);
    approve(calls, "a1", T0);
    advanceAdmission(calls, 0, counters(), limits, T0);
    const effects = cancelPending(calls, 0, T0 + 5);
    expect(events(effects)).toEqual(["tool_execution", "tool_completed", "approval_resolved", "tool_execution", "tool_completed"]);
    expect(fields(effects, "tool_completed")).toMatchObject({ tool_call_id: "call-1", approved: true });
    expect(fields(effects, "approval_resolved")).toMatchObject({ tool_call_id: "call-2", decision: "cancelled" });
    expect(rows(effects)).toEqual(["unsent:mut-a1:cancelled"]);
    expect(calls[0]!.state).toBe("dispatched");
    expect(
      decideApproval(calls, "a2", asApi({ decision: "approve", decided_by: "U" }), REQUESTER, {}, limits, T0 + 6, "m").verdict,
    ).toMatchObject({
      kind: "already_resolved",
      decision: "cancelled",
    });
  });
});

describe("decideApproval under an approval policy (contract section 19)", () => {
  const twoPerson: ApprovalPolicy = { approvers: ["access:*@example.com"], approvals_required: 2, self_approval: false };
  function pendingUnder(policy: ApprovalPolicy, level: "approve" | "confirm" = "approve") {
    const c = call(0, { level });
    const calls = turnOf(c);
    const effects = announce(calls, c, NOTHING_SHOWN, limits, T0, ids("approval-1"), policy);
    return { calls, effects };
  }
  const person = (who: string, over: Partial<{ confirmation: string; decision: "approve" | "deny" }> = {}) => ({
    decision: over.decision ?? ("approve" as const),
    decided_by: `access:${who}@example.com`,
    decider: {
      via: "api" as const,
      principal_id: `access:${who}@example.com`,
      person: `access:${who}@example.com`,
      has_approver_role: true,
    },
    ...(over.confirmation !== undefined ? { confirmation: over.confirmation } : {}),
  });
  const requester: Requester = { principal_id: "access:req@example.com", person: "access:req@example.com" };
  const decideAs = (calls: ToolCall[], d: Decision, now: number) =>
    decideApproval(calls, "approval-1", d, requester, {}, limits, now, "mut-1");

  it("asks with required and approvers; votes until the Nth, which resolves with every vote and the row's approvals", () => {
    const { calls, effects } = pendingUnder(twoPerson);
    expect(fields(effects, "approval_requested")).toMatchObject({ required: 2, approvers: ["access:*@example.com"] });
    const first = decideAs(calls, person("ann"), T0 + 1);
    expect(first.verdict).toEqual({ kind: "vote_pending", approval_id: "approval-1", votes: 1, required: 2 });
    expect(events(first.effects)).toEqual(["approval_vote"]);
    expect(fields(first.effects, "approval_vote")).toEqual({
      tool_name: "mcp__demo__create_dashboard",
      tool_call_id: "call-0",
      approval_id: "approval-1",
      decided_by: "access:ann@example.com",
      votes: 1,
      required: 2,
    });
    // The first voter retries: the same answer, no event, still one vote.
    const retry = decideAs(calls, person("ann"), T0 + 2);
    expect(retry).toEqual({ verdict: first.verdict, effects: [] });
    const second = decideAs(calls, person("bob"), T0 + 3);
    expect(second.verdict).toEqual({ kind: "resolved", approval_id: "approval-1", decision: "approved" });
    expect(events(second.effects)).toEqual(["approval_resolved", "tool_execution_started"]);
    const approvals = [
      { by: "access:ann@example.com", at: new Date(T0 + 1).toISOString() },
      { by: "access:bob@example.com", at: new Date(T0 + 3).toISOString() },
    ];
    expect(fields(second.effects, "approval_resolved")).toMatchObject({ decided_by: "access:bob@example.com", approvals });
    expect(second.effects.find((e) => e.kind === "record_intent")).toMatchObject({ approved_by: "access:bob@example.com", approvals });
  });

  it("refuses before telling anything: an ineligible principal hears not_an_approver even after the approval resolved", () => {
    const { calls } = pendingUnder(twoPerson);
    const outsider: Decision = {
      decision: "approve",
      decided_by: "token:root",
      decider: { via: "api", principal_id: "token:root", person: null, has_approver_role: true },
    };
    expect(decideAs(calls, outsider, T0 + 1)).toEqual({ verdict: { kind: "refused", error: "not_an_approver" }, effects: [] });
    decideAs(calls, person("ann"), T0 + 1);
    decideAs(calls, person("bob"), T0 + 2);
    expect(decideAs(calls, outsider, T0 + 3).verdict).toEqual({ kind: "refused", error: "not_an_approver" });
  });

  it("refuses the requester's approve under self_approval: false, lets them deny, and one deny ends it", () => {
    const { calls } = pendingUnder(twoPerson);
    expect(decideAs(calls, person("req"), T0 + 1)).toEqual({ verdict: { kind: "refused", error: "self_approval_forbidden" }, effects: [] });
    decideAs(calls, person("ann"), T0 + 1);
    const denied = decideAs(calls, person("req", { decision: "deny" }), T0 + 2);
    expect(denied.verdict).toEqual({ kind: "resolved", approval_id: "approval-1", decision: "denied" });
    expect(fields(denied.effects, "approval_resolved")).toMatchObject({
      decision: "denied",
      approvals: [{ by: "access:ann@example.com", at: new Date(T0 + 1).toISOString() }],
    });
  });

  it("needs the confirmation on every vote of a confirm tool", () => {
    const { calls } = pendingUnder(twoPerson, "confirm");
    expect(decideAs(calls, person("ann"), T0 + 1).verdict.kind).toBe("confirmation_mismatch");
    expect(decideAs(calls, person("ann", { confirmation: "mcp__demo__create_dashboard" }), T0 + 1).verdict.kind).toBe("vote_pending");
    expect(decideAs(calls, person("bob"), T0 + 2).verdict.kind).toBe("confirmation_mismatch");
    expect(decideAs(calls, person("bob", { confirmation: "mcp__demo__create_dashboard" }), T0 + 2).verdict.kind).toBe("resolved");
  });
});
