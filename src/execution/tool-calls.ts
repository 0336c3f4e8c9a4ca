// The per-call lifecycle of one model turn (contract sections 4, 6 and 7), as
// pure functions over plain, persistable records. They decide what happens
// and which events say so; the RunObject appends the events, persists the
// records, arms the alarm and performs the dispatches they ask for.
//
// A call moves through a small state machine:
//   awaiting_approval ─approve─▶ awaiting_admission ─admit─▶ dispatched ─settle─▶ done
//   awaiting_input ─answer─▶ awaiting_admission ─admit─▶ done
//   (deny, expiry, cancellation, ceiling, budget: ─▶ done with not_executed)
// Approvals of a turn are all asked at once; admission follows the model's
// order, so a later call waits for every earlier call of the turn to end.
import type { EventType } from "../stream/events";

export type ApprovalLevel = "approve" | "confirm";
export type CallState = "awaiting_approval" | "awaiting_input" | "awaiting_admission" | "dispatched" | "done";
export type NotExecutedReason =
  | "denied"
  | "expired"
  | "cancelled"
  | "call_ceiling"
  | "not_in_budget"
  | "budget_exhausted"
  | "storage_unavailable"
  | "replay_blocked"
  | "prior_outcome_unknown";
export type ExecutedErrorCode = "transport_timeout" | "transport_error" | "tool_error" | "response_too_large" | "settlement_timeout";

export const HUMAN_ASK_TOOL = "human__ask";

export interface ApprovalRecord {
  approval_id: string;
  level: ApprovalLevel;
  expires_at: number;
  decision?: "approved" | "denied" | "expired" | "cancelled";
  decided_by?: string;
}

export interface InputRecord {
  question: string;
  expires_at: number;
  status: "pending" | "answered" | "expired" | "cancelled";
  answer?: string;
  answered_by?: string;
}

export interface ResultFacts {
  is_error: boolean;
  content_bytes: number;
  summary?: string;
}

export interface ToolCallRecord {
  /** The model turn that proposed it, and its place in that turn's order. */
  turn: number;
  index: number;
  tool_call_id: string;
  tool_name: string;
  arguments: Record<string, unknown>;
  arguments_digest: string;
  kind: "mcp" | "human_ask";
  mutating: boolean;
  /** null: runs without a person's approval (read-only tools, policy, human__ask). */
  level: ApprovalLevel | null;
  description: string;
  state: CallState;
  started_at: number;
  approved: boolean;
  approval?: ApprovalRecord;
  input?: InputRecord;
  admission_deadline?: number;
  /** What goes back to the model as this call's result, and whether the model should read it as a failure. */
  model_result?: string;
  model_is_error?: boolean;
  /** The durable outcome row of an approved mutation (its intent is written at approval). */
  mutation_id?: string;
  /** Set once the dispatch pipeline owns the row's settlement; otherwise a call ending early settles it not_executed. */
  row_owned_by_dispatch?: boolean;
  /** Why it was not executed, when it was not. */
  reason?: NotExecutedReason;
}

export interface TurnState {
  calls: ToolCallRecord[];
}

/** Per-run counters behind the call ceiling and the ApprovedMutationBudget. */
export interface RunCounters {
  admitted: number;
  used: Record<string, number>;
}

export interface Limits {
  ceiling: number;
  budget: Record<string, number>;
  approvalTimeoutMs: number;
  admissionTimeoutMs: number;
}

export type Effect = { kind: "emit"; type: EventType; fields: Record<string, unknown> } | { kind: "dispatch"; call: ToolCallRecord };

export type DispatchOutcome =
  | { kind: "result"; is_error: boolean; content_bytes: number; summary: string; model_text: string }
  | { kind: "failed"; code: Exclude<ExecutedErrorCode, "tool_error" | "settlement_timeout">; message: string };

const emit = (type: EventType, fields: Record<string, unknown>): Effect => ({ kind: "emit", type, fields });

const ids = (call: ToolCallRecord) => ({ tool_name: call.tool_name, tool_call_id: call.tool_call_id });
const withApproval = (call: ToolCallRecord) => (call.approval ? { ...ids(call), approval_id: call.approval.approval_id } : ids(call));

function isBudgeted(call: ToolCallRecord, limits: Limits): boolean {
  return !call.mutating || (limits.budget[call.tool_name] ?? 0) > 0;
}

/** Announces a call: tool_started, then whatever it waits for first. */
export function announce(call: ToolCallRecord, redactedArguments: unknown, limits: Limits, now: number, approvalId: string): Effect[] {
  const effects: Effect[] = [emit("tool_started", { ...ids(call), approval_required: call.level !== null })];
  if (call.kind === "human_ask") {
    const question = typeof call.arguments.question === "string" ? call.arguments.question : JSON.stringify(call.arguments);
    call.approved = true;
    call.state = "awaiting_input";
    call.input = { question, expires_at: now + limits.approvalTimeoutMs, status: "pending" };
    effects.push(emit("human_input_requested", { tool_call_id: call.tool_call_id, question, expires_at: iso(call.input.expires_at) }));
    return effects;
  }
  if (!isBudgeted(call, limits)) {
    // Not in the ApprovedMutationBudget: no approval is asked for something that may never run.
    return [
      ...effects,
      ...finish(
        call,
        now,
        false,
        { execution_status: "not_executed", reason: "not_in_budget" },
        "Not executed: this tool is not in the host's mutation budget.",
      ),
    ];
  }
  if (call.level === null) {
    call.approved = true;
    call.state = "awaiting_admission";
    call.admission_deadline = now + limits.admissionTimeoutMs;
    return effects;
  }
  call.state = "awaiting_approval";
  call.approval = { approval_id: approvalId, level: call.level, expires_at: now + limits.approvalTimeoutMs };
  effects.push(
    emit("approval_requested", {
      ...ids(call),
      approval_id: approvalId,
      level: call.level,
      description: call.description,
      arguments: redactedArguments,
      expires_at: iso(call.approval.expires_at),
    }),
  );
  return effects;
}

export type DecisionAnswer =
  | { status: 200; body: { approval_id: string; decision: "approved" | "denied"; status: "resolved" }; effects: Effect[] }
  | { status: 400; body: { error: "confirmation_mismatch"; message: string } }
  | { status: 409; body: { error: "already_resolved"; decision: string; message: string } }
  | { status: 410; body: { error: "expired"; message: string }; effects: Effect[] };

export interface Decision {
  decision: "approve" | "deny";
  decided_by: string;
  confirmation?: string;
}

/**
 * A person's decision on a pending approval. Expiry is settled first: a
 * decision arriving at or after `expires_at` loses to the expiry even if the
 * alarm has not fired yet, so exactly one of them wins and says so.
 */
export function decideApproval(call: ToolCallRecord, input: Decision, limits: Limits, now: number): DecisionAnswer {
  const approval = call.approval!;
  const wanted = input.decision === "approve" ? "approved" : "denied";
  if (approval.decision === undefined && now >= approval.expires_at) {
    return { status: 410, body: expiredBody(), effects: expireApproval(call, now) };
  }
  if (approval.decision !== undefined) {
    if (approval.decision === "expired") return { status: 410, body: expiredBody(), effects: [] };
    if (approval.decision === wanted) return { status: 200, body: resolvedBody(approval.approval_id, wanted), effects: [] };
    return {
      status: 409,
      body: {
        error: "already_resolved",
        decision: approval.decision,
        message: `This approval was already resolved as ${approval.decision}.`,
      },
    };
  }
  if (wanted === "approved" && approval.level === "confirm" && input.confirmation !== call.tool_name) {
    return {
      status: 400,
      body: {
        error: "confirmation_mismatch",
        message: `Approving this call needs "confirmation" set to the tool name, ${call.tool_name}.`,
      },
    };
  }
  approval.decision = wanted;
  approval.decided_by = input.decided_by;
  const resolved = emit("approval_resolved", { ...withApproval(call), decision: wanted, decided_by: input.decided_by });
  if (wanted === "denied") {
    return {
      status: 200,
      body: resolvedBody(approval.approval_id, wanted),
      effects: [
        resolved,
        ...finish(call, now, false, { execution_status: "not_executed", reason: "denied" }, "Not executed: a person denied this call."),
      ],
    };
  }
  call.approved = true;
  call.state = "awaiting_admission";
  call.admission_deadline = now + limits.admissionTimeoutMs;
  return {
    status: 200,
    body: resolvedBody(approval.approval_id, wanted),
    effects: [resolved, emit("tool_execution_started", withApproval(call))],
  };
}

export type InputAnswer =
  | { status: 200; body: { tool_call_id: string; status: "answered" }; effects: Effect[] }
  | { status: 409; body: { error: "already_resolved"; decision: string; message: string } }
  | { status: 410; body: { error: "expired"; message: string }; effects: Effect[] };

/** A person's answer to human__ask, with the same idempotency and expiry rules as approvals. */
export function answerInput(call: ToolCallRecord, answer: string, answeredBy: string, now: number): InputAnswer {
  const input = call.input!;
  if (input.status === "pending" && now >= input.expires_at) {
    return { status: 410, body: expiredBody(), effects: expireInput(call, now) };
  }
  if (input.status === "expired") return { status: 410, body: expiredBody(), effects: [] };
  if (input.status === "answered" && input.answer === answer) {
    return { status: 200, body: { tool_call_id: call.tool_call_id, status: "answered" }, effects: [] };
  }
  if (input.status !== "pending") {
    return {
      status: 409,
      body: { error: "already_resolved", decision: input.status, message: `This question was already ${input.status}.` },
    };
  }
  input.status = "answered";
  input.answer = answer;
  input.answered_by = answeredBy;
  call.state = "awaiting_admission";
  return {
    status: 200,
    body: { tool_call_id: call.tool_call_id, status: "answered" },
    effects: [emit("human_input_received", { tool_call_id: call.tool_call_id, answered_by: answeredBy })],
  };
}

/** Expires every approval and question whose time has come. */
export function expireDue(turn: TurnState, now: number): Effect[] {
  const effects: Effect[] = [];
  for (const call of turn.calls) {
    if (call.state === "awaiting_approval" && now >= call.approval!.expires_at) effects.push(...expireApproval(call, now));
    else if (call.state === "awaiting_input" && now >= call.input!.expires_at) effects.push(...expireInput(call, now));
  }
  return effects;
}

/**
 * Ordered admission. Calls waiting anywhere in the turn are checked against
 * the call ceiling and their admission deadline; then the earliest unfinished
 * call is admitted if it is ready. At most one call is dispatched at a time.
 */
export function advanceAdmission(turn: TurnState, counters: RunCounters, limits: Limits, now: number): Effect[] {
  const effects = sweepWaiting(turn, counters, limits, now);
  for (const call of turn.calls) {
    if (call.state === "done") continue;
    if (call.state !== "awaiting_admission") break; // an earlier call is still waiting or in flight
    if (call.kind === "human_ask") {
      const answer = call.input!.answer ?? "";
      effects.push(
        ...finish(
          call,
          now,
          true,
          { execution_status: "executed", result: { is_error: false, content_bytes: utf8Length(answer) } },
          answer,
        ),
      );
      continue;
    }
    if (call.mutating && (counters.used[call.tool_name] ?? 0) >= (limits.budget[call.tool_name] ?? 0)) {
      effects.push(
        ...finish(
          call,
          now,
          call.approved,
          { execution_status: "not_executed", reason: "budget_exhausted" },
          "Not executed: this tool's mutation budget for the run is used up.",
        ),
      );
      continue;
    }
    counters.admitted += 1;
    if (call.mutating) counters.used[call.tool_name] = (counters.used[call.tool_name] ?? 0) + 1;
    call.state = "dispatched";
    effects.push({ kind: "dispatch", call });
    // This admission may have used the last call the ceiling allows.
    effects.push(...sweepWaiting(turn, counters, limits, now));
    break;
  }
  return effects;
}

/** Calls waiting for admission end early when they can never be admitted: ceiling reached or deadline passed. */
function sweepWaiting(turn: TurnState, counters: RunCounters, limits: Limits, now: number): Effect[] {
  const effects: Effect[] = [];
  for (const call of turn.calls) {
    if (call.state !== "awaiting_admission" || call.kind === "human_ask") continue;
    if (counters.admitted >= limits.ceiling) {
      effects.push(
        ...finish(
          call,
          now,
          call.approved,
          { execution_status: "not_executed", reason: "call_ceiling" },
          "Not executed: the run reached its tool call ceiling.",
        ),
      );
    } else if (call.admission_deadline !== undefined && now >= call.admission_deadline) {
      effects.push(
        ...finish(
          call,
          now,
          call.approved,
          { execution_status: "not_executed", reason: "expired" },
          "Not executed: it waited too long for its turn to run.",
        ),
      );
    }
  }
  return effects;
}

/**
 * The dispatched call's terminal decision: it left this system, whatever came
 * back. `settlementLate`: the response arrived but its durable settlement did
 * not finish within the storage bound (the row stays unresolved until it does).
 */
export function settleDispatch(call: ToolCallRecord, outcome: DispatchOutcome, now: number, settlementLate = false): Effect[] {
  if (outcome.kind === "failed") {
    return finish(
      call,
      now,
      true,
      { execution_status: "executed", error: { code: outcome.code, message: outcome.message } },
      `The tool call failed: ${outcome.message}`,
    );
  }
  const result: ResultFacts = { is_error: outcome.is_error, content_bytes: outcome.content_bytes, summary: outcome.summary };
  const error = settlementLate
    ? {
        error: {
          code: "settlement_timeout",
          message: "The response arrived but recording its outcome did not finish in time; query the mutation later.",
        },
      }
    : outcome.is_error
      ? { error: { code: "tool_error", message: outcome.summary || "The tool reported an error." } }
      : {};
  return finish(call, now, true, { execution_status: "executed", result, ...error }, outcome.model_text);
}

/** An admitted call that storage or replay protection stopped before it was sent. */
export function refuseDispatch(
  call: ToolCallRecord,
  reason: "storage_unavailable" | "replay_blocked" | "prior_outcome_unknown" | "cancelled",
  now: number,
): Effect[] {
  const why = {
    cancelled: "the run was cancelled before it was sent",
    storage_unavailable: "its outcome could not be recorded first (storage unavailable)",
    replay_blocked: "an outcome is already recorded for this call",
    prior_outcome_unknown: "an earlier identical call in this channel has an unknown outcome; reconcile it first",
  }[reason];
  return finish(call, now, call.approved, { execution_status: "not_executed", reason }, `Not executed: ${why}.`);
}

/** Cancellation: every call not yet dispatched ends now; a dispatched one is left to settle. */
export function cancelPending(turn: TurnState, now: number): Effect[] {
  const effects: Effect[] = [];
  for (const call of turn.calls) {
    if (call.state === "done" || call.state === "dispatched") continue;
    if (call.state === "awaiting_approval") {
      call.approval!.decision = "cancelled";
      effects.push(emit("approval_resolved", { ...withApproval(call), decision: "cancelled" }));
    }
    if (call.state === "awaiting_input") call.input!.status = "cancelled";
    effects.push(
      ...finish(
        call,
        now,
        call.approved,
        { execution_status: "not_executed", reason: "cancelled" },
        "Not executed: the run was cancelled.",
      ),
    );
  }
  return effects;
}

export function turnDone(turn: TurnState): boolean {
  return turn.calls.every((c) => c.state === "done");
}

export function hasDispatched(turn: TurnState): boolean {
  return turn.calls.some((c) => c.state === "dispatched");
}

/** The next moment something in the turn expires on its own. */
export function nextDeadline(turn: TurnState): number | undefined {
  let next: number | undefined;
  const consider = (t: number | undefined) => {
    if (t !== undefined && (next === undefined || t < next)) next = t;
  };
  for (const call of turn.calls) {
    if (call.state === "awaiting_approval") consider(call.approval!.expires_at);
    else if (call.state === "awaiting_input") consider(call.input!.expires_at);
    else if (call.state === "awaiting_admission" && call.kind === "mcp") consider(call.admission_deadline);
  }
  return next;
}

function expireApproval(call: ToolCallRecord, now: number): Effect[] {
  call.approval!.decision = "expired";
  return [
    emit("approval_resolved", { ...withApproval(call), decision: "expired" }),
    ...finish(call, now, false, { execution_status: "not_executed", reason: "expired" }, "Not executed: nobody approved it in time."),
  ];
}

function expireInput(call: ToolCallRecord, now: number): Effect[] {
  call.input!.status = "expired";
  return finish(call, now, true, { execution_status: "not_executed", reason: "expired" }, "Nobody answered the question in time.");
}

interface ExecutionFields {
  execution_status: "executed" | "not_executed";
  reason?: NotExecutedReason;
  result?: ResultFacts;
  error?: { code: string; message: string };
}

/** tool_execution then tool_completed: the last two events of every call. */
function finish(call: ToolCallRecord, now: number, approved: boolean, execution: ExecutionFields, modelResult: string): Effect[] {
  call.state = "done";
  call.approved = approved;
  call.model_result = modelResult;
  call.model_is_error =
    execution.execution_status === "not_executed" || execution.error !== undefined || execution.result?.is_error === true;
  if (execution.reason !== undefined) call.reason = execution.reason;
  return [
    emit("tool_execution", { ...withApproval(call), ...execution, ...(call.mutation_id ? { mutation_id: call.mutation_id } : {}) }),
    emit("tool_completed", { ...withApproval(call), approved, duration_ms: Math.max(0, now - call.started_at) }),
  ];
}

function resolvedBody(approvalId: string, decision: "approved" | "denied") {
  return { approval_id: approvalId, decision, status: "resolved" as const };
}

function expiredBody() {
  return { error: "expired" as const, message: "The time to decide has passed; the call was not executed." };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}
