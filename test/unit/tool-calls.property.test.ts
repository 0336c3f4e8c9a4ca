// Property tests of the call state machine (src/execution/tool-calls.ts):
// random turns of calls of every kind driven by random interleavings of
// approvals, denials, confirmations (right and wrong text), answers, time
// passing (expiry, admission deadlines), cancellation, the call ceiling,
// budgets and dispatch results (ok, tool error, timeout, lost, late
// settlement, refusals), the way the RunObject drives it: every decision is
// followed by an admission pass. The invariants are the contract's
// (sections 4, 6 and 7), checked on the trace of everything the module asked
// for, in order.
//
// Only the "driver" below knows the module's API; the properties read the
// trace it records.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  advanceAdmission,
  announce,
  answerInput,
  cancelPending,
  decideApproval,
  expireDue,
  refuseDispatch,
  settleDispatch,
  turnDone,
  type DispatchOutcome,
  type Effect,
  type Limits,
  type Proposed,
  type RunCounters,
  type ToolCall,
} from "../../src/execution/tool-calls";

const RUNS = 1_000;
const T0 = 1_000_000;
const APPROVAL_TIMEOUT_MS = 100;
const ADMISSION_TIMEOUT_MS = 300;

// ---- the generated scenario ------------------------------------------------

type CallKind = "mutating" | "mutating_small_budget" | "mutating_unbudgeted" | "confirm" | "read_only" | "human_ask";

const TOOL_OF: Record<CallKind, string> = {
  mutating: "mcp__demo__create_dashboard",
  mutating_small_budget: "mcp__demo__create_kpi",
  mutating_unbudgeted: "mcp__demo__delete_everything",
  confirm: "mcp__demo__update_dashboard",
  read_only: "mcp__demo__list_dashboards",
  human_ask: "human__ask",
};

type DispatchResult = "ok" | "tool_error" | "timeout" | "lost" | "late_settlement";
type Refusal = "storage_unavailable" | "replay_blocked" | "prior_outcome_unknown" | "transport_unavailable" | "tool_changed" | "cancelled";

type Action =
  | { t: "approve"; i: number; confirmation: "right" | "wrong" | "none" }
  | { t: "deny"; i: number }
  | { t: "answer"; i: number; text: string }
  | { t: "tick"; ms: number }
  | { t: "settle"; result: DispatchResult }
  | { t: "refuse"; reason: Refusal }
  | { t: "cancel" };

interface Scenario {
  turns: CallKind[][];
  ceiling: number;
  actions: Action[][];
  /** Question arguments of human__ask calls: a string, or something else. */
  questionIsString: boolean;
}

const callKind = fc.constantFrom<CallKind>("mutating", "mutating_small_budget", "mutating_unbudgeted", "confirm", "read_only", "human_ask");
const action = (calls: number): fc.Arbitrary<Action> => {
  const i = fc.nat({ max: Math.max(0, calls - 1) });
  return fc.oneof(
    { weight: 4, arbitrary: fc.record({ t: fc.constant("approve" as const), i, confirmation: fc.constantFrom("right", "wrong", "none") }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant("deny" as const), i }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant("answer" as const), i, text: fc.constantFrom("yes", "no") }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 150 }) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        t: fc.constant("settle" as const),
        result: fc.constantFrom<DispatchResult>("ok", "tool_error", "timeout", "lost", "late_settlement"),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant("refuse" as const),
        reason: fc.constantFrom<Refusal>(
          "storage_unavailable",
          "replay_blocked",
          "prior_outcome_unknown",
          "transport_unavailable",
          "tool_changed",
          "cancelled",
        ),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ t: "cancel" as const }) },
  );
};

const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    turns: fc.array(fc.array(callKind, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 2 }),
    ceiling: fc.integer({ min: 1, max: 6 }),
    questionIsString: fc.boolean(),
  })
  .chain((s) =>
    fc.tuple(...s.turns.map((calls) => fc.array(action(calls.length), { maxLength: 25 }))).map((actions) => ({ ...s, actions })),
  );

// ---- the trace -------------------------------------------------------------

type TraceEntry =
  | { kind: "emit"; type: string; id: string; fields: Record<string, unknown> }
  | { kind: "record_intent"; id: string; mutationId: string }
  | { kind: "settle_unsent"; id: string; mutationId: string }
  | { kind: "dispatch"; id: string; usedBefore: number; admittedBefore: number };

interface CallInfo {
  id: string;
  turn: number;
  index: number;
  kind: CallKind;
  tool: string;
  mutating: boolean;
  /** null: no person approves it (read-only, human__ask). */
  level: "approve" | "confirm" | null;
}

interface Trace {
  entries: TraceEntry[];
  calls: CallInfo[];
  limits: Limits;
  counters: RunCounters;
  cancelledAt: number | undefined;
}

// ---- the driver: the only part that knows the module's API ------------------

const limitsFor = (ceiling: number): Limits => ({
  ceiling,
  budget: { mcp__demo__create_dashboard: 3, mcp__demo__update_dashboard: 3, mcp__demo__create_kpi: 1 },
  approvalTimeoutMs: APPROVAL_TIMEOUT_MS,
  admissionTimeoutMs: ADMISSION_TIMEOUT_MS,
});

function record(info: CallInfo, questionIsString: boolean, now: number): Proposed {
  const isAsk = info.kind === "human_ask";
  return {
    turn: info.turn,
    index: info.index,
    tool_call_id: info.id,
    tool_name: info.tool,
    arguments: isAsk ? (questionIsString ? { question: "Which team?" } : { question: 7, token: "s3cret" }) : { title: info.id },
    arguments_digest: `sha256:${info.id}`,
    kind: isAsk ? "human_ask" : "mcp",
    mutating: info.mutating,
    level: info.level,
    description: `Call ${info.tool}.`,
    started_at: now,
    state: "proposed",
  };
}

function outcomeOf(result: DispatchResult): { outcome: DispatchOutcome; late: boolean } {
  switch (result) {
    case "ok":
      return { outcome: { kind: "result", is_error: false, content_bytes: 2, summary: "ok", model_text: "ok", sent: true }, late: false };
    case "tool_error":
      return {
        outcome: { kind: "result", is_error: true, content_bytes: 4, summary: "boom", model_text: "boom", sent: true },
        late: false,
      };
    case "timeout":
      return { outcome: { kind: "failed", code: "transport_timeout", message: "timed out", sent: true }, late: false };
    case "lost":
      return { outcome: { kind: "failed", code: "transport_error", message: "lost in a restart", sent: true }, late: false };
    case "late_settlement":
      return { outcome: { kind: "result", is_error: false, content_bytes: 2, summary: "ok", model_text: "ok", sent: true }, late: true };
  }
}

function simulate(s: Scenario): Trace {
  const limits = limitsFor(s.ceiling);
  const counters: RunCounters = { admitted: 0, used: {} };
  const trace: Trace = { entries: [], calls: [], limits, counters, cancelledAt: undefined };
  let now = T0;
  let cancelled = false;
  let minted = 0;
  const calls: ToolCall[] = [];

  const take = (effects: Effect[]) => {
    for (const e of effects) {
      if (e.kind === "emit") {
        const id = typeof e.fields.tool_call_id === "string" ? e.fields.tool_call_id : "";
        trace.entries.push({ kind: "emit", type: e.type, id, fields: e.fields });
      } else if (e.kind === "record_intent" || e.kind === "settle_unsent") {
        trace.entries.push(
          e.kind === "record_intent"
            ? { kind: "record_intent", id: e.call.tool_call_id, mutationId: e.mutation_id }
            : { kind: "settle_unsent", id: e.call.tool_call_id, mutationId: e.mutation_id },
        );
      } else {
        const call = e.call;
        // The counters were already moved by the admission; what they were before it is what the budget allowed.
        trace.entries.push({
          kind: "dispatch",
          id: call.tool_call_id,
          usedBefore: (counters.used[call.tool_name] ?? 0) - (call.mutating ? 1 : 0),
          admittedBefore: counters.admitted - 1,
        });
      }
    }
  };

  for (const [turnIndex, kinds] of s.turns.entries()) {
    if (cancelled) break;
    const infos: CallInfo[] = kinds.map((kind, index) => ({
      id: `t${turnIndex}-c${index}`,
      turn: turnIndex,
      index,
      kind,
      tool: TOOL_OF[kind],
      mutating: kind !== "read_only" && kind !== "human_ask",
      level: kind === "read_only" || kind === "human_ask" ? null : kind === "confirm" ? "confirm" : "approve",
    }));
    trace.calls.push(...infos);
    const first = calls.length;
    const proposed = infos.map((info) => record(info, s.questionIsString, now));
    calls.push(...proposed);
    const turnOf = () => calls.slice(first);
    const mint = () => `mut-${++minted}`;
    const advance = () => take(advanceAdmission(calls, turnIndex, counters, limits, now));
    for (const call of proposed) {
      take(
        announce(calls, call, { arguments: { redacted: true }, hidden: [] }, limits, now, {
          approvalId: `approval-${call.tool_call_id}`,
          mutationId: mint(),
        }),
      );
    }
    advance();

    for (const a of s.actions[turnIndex] ?? []) {
      const call = "i" in a ? turnOf()[a.i] : undefined;
      switch (a.t) {
        case "approve":
        case "deny": {
          if (call?.kind !== "mcp") break;
          const confirmation = a.t === "approve" ? { right: call.tool_name, wrong: "nope", none: undefined }[a.confirmation] : undefined;
          take(
            decideApproval(
              calls,
              `approval-${call.tool_call_id}`,
              {
                decision: a.t,
                decided_by: "U1",
                decider: { via: "api", principal_id: "U1", person: "access:u1@example.com", has_approver_role: true },
                ...(confirmation !== undefined ? { confirmation } : {}),
              },
              { principal_id: "token:requester", person: null },
              {},
              limits,
              now,
              mint(),
            ).effects,
          );
          break;
        }
        case "answer": {
          if (call?.kind !== "human_ask") break;
          take(answerInput(calls, call.tool_call_id, a.text, "U2", now).effects);
          break;
        }
        case "tick":
          now += a.ms;
          take(expireDue(calls, turnIndex, now));
          break;
        case "settle":
        case "refuse": {
          const inFlight = turnOf().find((c) => c.state === "dispatched");
          if (inFlight?.state !== "dispatched") break;
          if (a.t === "refuse")
            take(refuseDispatch(calls, inFlight, a.reason, now, a.reason === "tool_changed" ? { tool_digest: null } : {}));
          else {
            const { outcome, late } = outcomeOf(a.result);
            take(settleDispatch(calls, inFlight, outcome, now, late));
          }
          break;
        }
        case "cancel":
          cancelled = true;
          trace.cancelledAt ??= trace.entries.length;
          take(cancelPending(calls, turnIndex, now));
          break;
      }
      if (!cancelled) advance();
    }

    // Play the turn out: results come back, time passes until everything expired or ran.
    for (let step = 0; step < 50 && !turnDone(calls, turnIndex); step++) {
      const inFlight = turnOf().find((c) => c.state === "dispatched");
      if (inFlight?.state === "dispatched") take(settleDispatch(calls, inFlight, outcomeOf("ok").outcome, now));
      now += APPROVAL_TIMEOUT_MS + ADMISSION_TIMEOUT_MS;
      take(expireDue(calls, turnIndex, now));
      if (!cancelled) advance();
    }
    expect(turnDone(calls, turnIndex), `turn ${turnIndex} never ended: ${JSON.stringify(turnOf().map((c) => c.state))}`).toBe(true);
  }
  return trace;
}

// ---- helpers over the trace ------------------------------------------------

const ofCall = (trace: Trace, id: string) => trace.entries.filter((e) => e.id === id);
/** The call's stream events and dispatches (durable row work is checked on its own). */
const names = (entries: TraceEntry[]) =>
  entries.filter((e) => e.kind === "emit" || e.kind === "dispatch").map((e) => (e.kind === "emit" ? e.type : "dispatch"));
const isResolvedApproved = (e: TraceEntry) => e.kind === "emit" && e.type === "approval_resolved" && e.fields.decision === "approved";

describe("the call state machine under random interleavings", () => {
  it("ends every call with exactly one tool_execution then one tool_completed, and nothing after", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const trace = simulate(s);
        for (const call of trace.calls) {
          const seq = names(ofCall(trace, call.id));
          expect(
            seq.filter((n) => n === "tool_execution"),
            call.id,
          ).toHaveLength(1);
          expect(
            seq.filter((n) => n === "tool_completed"),
            call.id,
          ).toHaveLength(1);
          expect(seq.slice(-2), `${call.id}: ${seq.join(",")}`).toEqual(["tool_execution", "tool_completed"]);
          expect(seq[0], call.id).toBe("tool_started");
          expect(
            seq.filter((n) => n === "tool_started"),
            call.id,
          ).toHaveLength(1);
          expect(seq.filter((n) => n === "approval_resolved").length, call.id).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("emits tool_execution_started at most once, only right after a person's approval, never for human__ask, automatic, denied or expired calls", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const trace = simulate(s);
        for (const call of trace.calls) {
          const entries = ofCall(trace, call.id);
          const seq = names(entries);
          const started = seq.indexOf("tool_execution_started");
          expect(seq.filter((n) => n === "tool_execution_started").length, call.id).toBeLessThanOrEqual(1);
          if (call.level === null) {
            expect(seq, call.id).not.toContain("tool_execution_started");
            expect(seq, call.id).not.toContain("approval_requested");
            continue;
          }
          if (started === -1) continue;
          const before = entries[started - 1];
          expect(before && isResolvedApproved(before), `${call.id}: ${seq.join(",")}`).toBe(true);
          expect(before?.kind === "emit" && before.fields.decided_by, call.id).toBe("U1");
          const resolved = entries.find((e) => e.kind === "emit" && e.type === "approval_resolved");
          expect(resolved?.kind === "emit" && resolved.fields.decision, call.id).toBe("approved");
          const completed = entries.find((e) => e.kind === "emit" && e.type === "tool_completed");
          expect(completed?.kind === "emit" && completed.fields.approved, call.id).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("dispatches only approved, budgeted calls within the ceiling, each at most once, in the model's order, and nothing after a cancel", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const trace = simulate(s);
        const dispatched = new Set<string>();
        const completed = new Set<string>();
        const byId = new Map(trace.calls.map((c) => [c.id, c]));
        let admitted = 0;
        for (const [position, entry] of trace.entries.entries()) {
          if (entry.kind === "record_intent" || entry.kind === "settle_unsent") continue;
          if (entry.kind === "emit") {
            expect(completed.has(entry.id) && entry.id !== "", `event after ${entry.id} completed`).toBe(false);
            if (entry.type === "tool_completed") completed.add(entry.id);
            continue;
          }
          const call = byId.get(entry.id)!;
          expect(call.kind, entry.id).not.toBe("human_ask");
          expect(dispatched.has(entry.id), `${entry.id} dispatched twice`).toBe(false);
          expect(completed.has(entry.id), `${entry.id} dispatched after it completed`).toBe(false);
          if (trace.cancelledAt !== undefined) expect(position, `${entry.id} dispatched after cancel`).toBeLessThan(trace.cancelledAt);
          dispatched.add(entry.id);
          // Approval: a person approved it first, unless it needs nobody.
          if (call.level !== null) {
            expect(
              trace.entries.slice(0, position).some((e) => e.id === entry.id && isResolvedApproved(e)),
              `${entry.id} dispatched without approval`,
            ).toBe(true);
          }
          // Budget and ceiling.
          if (call.mutating) {
            expect(entry.usedBefore, entry.id).toBeLessThan(trace.limits.budget[call.tool] ?? 0);
          }
          expect(entry.admittedBefore, entry.id).toBe(admitted);
          admitted += 1;
          expect(admitted, entry.id).toBeLessThanOrEqual(trace.limits.ceiling);
          // Model order: every earlier call of its turn had ended.
          for (const earlier of trace.calls.filter((c) => c.turn === call.turn && c.index < call.index)) {
            expect(completed.has(earlier.id), `${entry.id} admitted before ${earlier.id} ended`).toBe(true);
          }
        }
        // Per tool, never more dispatches than its budget.
        for (const [tool, allowed] of Object.entries(trace.limits.budget)) {
          const count = [...dispatched].filter((id) => byId.get(id)!.tool === tool).length;
          expect(count, tool).toBeLessThanOrEqual(allowed);
        }
        expect([...dispatched].some((id) => byId.get(id)!.kind === "mutating_unbudgeted")).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it("never asks a question with raw arguments", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const trace = simulate(s);
        for (const e of trace.entries) {
          if (e.kind === "emit" && e.type === "human_input_requested") {
            expect(typeof e.fields.question).toBe("string");
            expect(e.fields.question).not.toContain("s3cret");
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("records one intent for every approved mutation before it is dispatched, and settles unsent exactly those that ended unsent", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const trace = simulate(s);
        for (const call of trace.calls) {
          const entries = ofCall(trace, call.id);
          const intents = entries.filter((e) => e.kind === "record_intent");
          const unsent = entries.filter((e) => e.kind === "settle_unsent");
          const execution = entries.find((e) => e.kind === "emit" && e.type === "tool_execution");
          const completed = entries.find((e) => e.kind === "emit" && e.type === "tool_completed");
          const approvedMutation = call.mutating && completed?.kind === "emit" && completed.fields.approved === true;
          expect(intents, call.id).toHaveLength(approvedMutation ? 1 : 0);
          const dispatchAt = entries.findIndex((e) => e.kind === "dispatch");
          if (!approvedMutation) {
            expect(unsent, call.id).toHaveLength(0);
            expect(execution?.kind === "emit" && execution.fields.mutation_id, call.id).toBeUndefined();
            continue;
          }
          const intent = intents[0]!;
          expect(execution?.kind === "emit" && execution.fields.mutation_id, call.id).toBe(intent.mutationId);
          if (dispatchAt !== -1) {
            expect(entries.indexOf(intent), call.id).toBeLessThan(dispatchAt);
            expect(unsent, `${call.id}: a dispatched call's row is the pipeline's`).toHaveLength(0);
          } else {
            expect(unsent, call.id).toHaveLength(1);
            expect(unsent[0]!.mutationId, call.id).toBe(intent.mutationId);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});
