// The per-call lifecycle of one model turn (contract sections 4, 6, 7 and 8),
// as pure functions over plain, persistable call records. They decide what
// happens, which events say so and which durable row work follows (the
// intent of an approved mutation, the not_executed settlement of one that
// ended before dispatch); the RunObject only applies those effects. Answers
// to people are domain verdicts; src/http/ turns them into statuses.
//
// A call is one of these states, each carrying only its own fields:
//   awaiting_approval ─approve─▶ awaiting_admission ─admit─▶ dispatched ─settle─▶ done
//   awaiting_input ─answer─▶ answered ─admit─▶ done
//   (deny, expiry, cancellation, ceiling, budget: ─▶ done with not_executed)
// Approvals of a turn are all asked at once; admission follows the model's
// order, so a later call waits for every earlier call of the turn to end.
// Transitions replace a call's slot in the run's `calls` array with its next
// state (records are never edited in place), so a caller can tell which
// calls changed by reference.
import { APPROVED_BY_AUTOMATIC } from "../outcomes/mutation-outcomes";
import { redactSecrets, redactText } from "./redaction";
import type { ShownArguments } from "./shown-arguments";
import type { EventType } from "../wire/events";
import type { EventFields } from "../wire/event-schemas";
import type { McpToolAnnotations } from "./mcp-tool-list";
import { decide, type Requester, refusalOf, stillEligible, type Vote } from "../policy/approval-policy";
import type { ApprovalPolicy, Decider, QuestionAnswer, Verdict } from "../wire/run-protocol";

export type ApprovalLevel = "approve" | "confirm";
// The reasons of contract section 4, declared once in the client's wire types (the client ships on its own).
import type { ExecutedErrorCode, NotExecutedReason } from "../client/types";
/**
 * Why an admitted call was stopped before it was sent. transport_unavailable:
 * its MCP server could not be reached, refused the connection or failed the
 * handshake, so it provably received nothing (contract section 7).
 * authorization_required: its OAuth token is missing, lapsed or was refused
 * (401/403), so the server processed nothing (contract section 21).
 * tool_changed: its tool is gone from a fresh listing of its server, or listed with another
 * `tool_digest` than the one approved (contract section 23), so nothing was sent.
 */
export type DispatchRefusal =
  | "storage_unavailable"
  | "replay_blocked"
  | "prior_outcome_unknown"
  | "transport_unavailable"
  | "authorization_required"
  | "tool_changed"
  | "cancelled"
  /** A halt covers it (contract section 23): its checkpoint was refused. */
  | "halted"
  /** A mutation limit's window is full (contract section 23): its checkpoint was refused. */
  | "rate_limited";

export const HUMAN_ASK_TOOL = "human__ask";

/**
 * Whether a halt covers a mutating call (contract section 23), as the run read
 * the active halts for this one action: the oldest covering halt's id, null
 * for none, "unavailable" when D1 did not answer within STORAGE_WAIT_MS.
 */
export type HaltCheck = (call: { tool_name: string }) => string | null | "unavailable";

/** What every call carries from its proposal to its end. */
interface CallBase {
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
  /** The MCP server's tool annotations as it gave them (contract section 21); absent when it gave none. */
  annotations?: McpToolAnnotations;
  /** The tool's `tool_digest` as listed when the call was announced (contract section 23); absent when its server did not list it. */
  tool_digest?: string;
  started_at: number;
}

interface PendingApproval {
  approval_id: string;
  level: ApprovalLevel;
  expires_at: number;
  /** The tool's approval policy when it was asked (contract section 19); absent in records written before it: the default rule. */
  policy?: ApprovalPolicy;
  /** The approves counted so far, in order (section 19); absent means none. */
  votes?: Vote[];
  /** Its reminder and escalation (contract section 24, src/execution/approval-nudges.ts); absent: neither. */
  nudges?: Nudges;
}

/**
 * When a pending approval or MCP question is reminded and escalated (contract section 24), epoch
 * ms, and what happened: `reminded` once its reminder was due (appended or not), `escalated` the
 * escalation it recorded, which stands under later versions of the policy.
 */
export interface Nudges {
  remind_at?: number;
  escalate_at?: number;
  escalate_to: string[];
  reminded?: true;
  escalated?: { at: number; escalated_to: string[] };
}

/** The next moment a reminder or an escalation is due, or undefined when none is left (contract section 24). */
function nudgeDueAt(nudges: Nudges | undefined): number | undefined {
  if (nudges === undefined) return undefined;
  const due = [
    ...(nudges.remind_at !== undefined && nudges.reminded !== true ? [nudges.remind_at] : []),
    ...(nudges.escalate_at !== undefined && nudges.escalated === undefined ? [nudges.escalate_at] : []),
  ];
  return due.length === 0 ? undefined : Math.min(...due);
}

/** The default rule of section 19, for approvals recorded before policies existed. */
const DEFAULT_POLICY: ApprovalPolicy = { approvers: null, approvals_required: 1, self_approval: true };

/** The `approvals` of an event, listing or row: every counted vote, in order, as `{by, at}`. */
function approvalsOf(approval: Pick<PendingApproval, "votes"> | undefined): { by: string; at: string }[] {
  return (approval?.votes ?? []).map((v) => ({ by: v.by, at: v.at }));
}
interface ResolvedApproval extends PendingApproval {
  decision: "approved" | "denied" | "expired" | "cancelled";
  decided_by?: string;
  /** The decider's reason, redacted (contract section 6). */
  reason?: string;
}
/** A person approved it, or (`"automatic"`) nobody needed to. */
export type Grant = (ResolvedApproval & { decision: "approved"; decided_by: string }) | "automatic";

interface PendingQuestion {
  question: string;
  expires_at: number;
}
interface AnsweredQuestion extends PendingQuestion {
  answer: string;
  answered_by: string;
}
interface EndedQuestion extends PendingQuestion {
  status: "answered" | "expired" | "cancelled";
  answer?: string;
  answered_by?: string;
}

interface ResultFacts {
  is_error: boolean;
  content_bytes: number;
  summary?: string;
}

type AwaitingApproval = CallBase & { state: "awaiting_approval"; approval: PendingApproval };
type AwaitingInput = CallBase & { state: "awaiting_input"; input: PendingQuestion };
/**
 * `mutation_id`: the durable outcome row of an approved mutation (its intent
 * is recorded at approval); null for a read-only call. `approved_at`: when
 * the call became approved (the person's decision, or the announce of an
 * automatic one), epoch ms: the row's `approved_at` (contract section 8).
 */
type AwaitingAdmission = CallBase & {
  state: "awaiting_admission";
  grant: Grant;
  approved_at: number;
  admission_deadline: number;
  mutation_id: string | null;
};
type Answered = CallBase & { state: "answered"; input: AnsweredQuestion };
/**
 * One question an MCP tool asked mid-call (contract section 21), kept on its dispatched call
 * (every round's, in order) so repeated answers get their first answer. `expired`: its round
 * ended by expiry before it was answered (it went back to the server as `cancel`).
 */
export interface McpQuestion {
  input_id: string;
  round: number;
  key: string;
  question: string;
  requested_schema: Record<string, unknown>;
  expires_at: number;
  answer?: QuestionAnswer;
  answered_by?: string;
  expired?: true;
  /** Its reminder and escalation (contract section 24), as its call's approval has them; absent: neither. */
  nudges?: Nudges;
}
/**
 * Where a dispatched call's exchange with its server stands once the server first answered
 * `input_required` (contract section 21), kept in the run's storage with the call. `waiting`:
 * nothing is in flight, a person decides (an unload or a restart changes nothing); `sending`: a
 * follow-up was written ahead and may be in flight (a restart now leaves it outcome_unknown).
 * `request_state` is the server's, byte for byte; `sends` counts the tools/call requests so far.
 */
export interface McpConversation {
  phase: "waiting" | "sending";
  round: number;
  sends: number;
  request_state?: string;
}
export type Dispatched = CallBase & {
  state: "dispatched";
  grant: Grant;
  approved_at: number;
  mutation_id: string | null;
  /** The questions the tool asked while in flight (contract section 21); absent when it asked none. */
  questions?: McpQuestion[];
  /** Absent until the server's first answer asked for input. */
  conversation?: McpConversation;
};
export type Done = CallBase & {
  state: "done";
  approved: boolean;
  approval?: ResolvedApproval;
  input?: EndedQuestion;
  reason?: NotExecutedReason;
  mutation_id?: string;
  /** The MCP questions it asked while in flight (contract section 21). */
  questions?: McpQuestion[];
  /** What goes back to the model as this call's result, and whether the model should read it as a failure. */
  model_result: string;
  model_is_error: boolean;
};
/** A call as proposed, before announce decides what it waits for. */
export type Proposed = CallBase & { state: "proposed" };

export type ToolCall = Proposed | AwaitingApproval | AwaitingInput | AwaitingAdmission | Answered | Dispatched | Done;

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

/**
 * What the pure logic asks for: events to append, a call to send through the
 * write-ahead pipeline, the intent row of a newly approved mutation, and the
 * not_executed row of an approved mutation that ended before it was sent.
 */
export type Effect =
  | { kind: "emit"; type: EventType; fields: Record<string, unknown> }
  | { kind: "dispatch"; call: Dispatched }
  | ({ kind: "record_intent"; call: ToolCall } & IntentRow)
  | ({ kind: "settle_unsent"; call: ToolCall; reason: NotExecutedReason } & IntentRow);

/**
 * The facts of an approved mutation's row that its call knows (contract section 8), named as
 * mutation_outcome/v1 names them (src/wire/mutation-outcome-schema.ts): built once, by intentRowOf,
 * for the intent written at approval, the not_executed row of a call never sent, and the
 * pipeline's checkpoint and settlement. The run's fields and the row's times are added where it is
 * written (src/execution/dispatch-pipeline.ts).
 */
export interface IntentRow {
  mutation_id: string;
  /** The policy version that decided the call and its hash (contract section 24), stamped by the engine. */
  policy_version?: number;
  policy_hash?: string;
  tool_call_id: string;
  tool_name: string;
  arguments_digest: string;
  /** null for an automatic approval. */
  approval_id: string | null;
  /** The decision's decided_by (the voter whose vote resolved it), or APPROVED_BY_AUTOMATIC. */
  approved_by: string;
  /** Every counted vote, in order (contract section 19); [] for an automatic approval. */
  approvals: { by: string; at: string }[];
  /** When the call became approved, epoch ms (the row keeps its ISO 8601 form). */
  approved_at: number;
  /** The tool's digest when the call was proposed (contract section 23); absent for a tool its server did not list. */
  tool_digest?: string;
}

/** The row of an approved mutation, from its granted call: the one place its facts are built. */
export function intentRowOf(
  call: Pick<CallBase, "tool_call_id" | "tool_name" | "arguments_digest" | "tool_digest"> & { grant: Grant; approved_at: number },
  mutationId: string,
): IntentRow {
  const { grant } = call;
  return {
    mutation_id: mutationId,
    tool_call_id: call.tool_call_id,
    tool_name: call.tool_name,
    arguments_digest: call.arguments_digest,
    approval_id: grant === "automatic" ? null : grant.approval_id,
    approved_by: grant === "automatic" ? APPROVED_BY_AUTOMATIC : grant.decided_by,
    approvals: grant === "automatic" ? [] : approvalsOf(grant),
    approved_at: call.approved_at,
    ...(call.tool_digest !== undefined ? { tool_digest: call.tool_digest } : {}),
  };
}

export type DispatchOutcome =
  | { kind: "result"; is_error: boolean; content_bytes: number; summary: string; model_text: string; sent: true }
  | {
      kind: "failed";
      code: Exclude<ExecutedErrorCode, "tool_error" | "settlement_timeout">;
      message: string;
      sent: boolean;
      /** With `sent: false`: why nothing ran, when not transport_unavailable (a 401/403 refusal: authorization_required). */
      unsent?: "authorization_required";
    };

/** The one way an emit effect is made: its fields are checked against the event's schema (src/stream/event-schemas.ts). */
const emit = <T extends EventType>(type: T, fields: EventFields<T>): Effect => ({ kind: "emit", type, fields });

const ids = (call: CallBase) => ({ tool_name: call.tool_name, tool_call_id: call.tool_call_id });

/** The approval id of a call, whatever its state (null when nobody approves it). */
function approvalIdOf(call: ToolCall): string | null {
  switch (call.state) {
    case "awaiting_approval":
      return call.approval.approval_id;
    case "awaiting_admission":
    case "dispatched":
      return call.grant === "automatic" ? null : call.grant.approval_id;
    case "done":
      return call.approval?.approval_id ?? null;
    case "proposed":
    case "awaiting_input":
    case "answered":
      return null;
  }
}

const withApproval = (call: ToolCall) => {
  const approvalId = approvalIdOf(call);
  return approvalId === null ? ids(call) : { ...ids(call), approval_id: approvalId };
};

/**
 * The question human__ask shows: its `question` if it is text, else its arguments, with secrets
 * redacted either way (contract section 20: it leaves the engine in events, listings, Slack and D1).
 */
function questionOf(args: Record<string, unknown>): string {
  return typeof args.question === "string" ? redactText(args.question) : JSON.stringify(redactSecrets(args));
}

function place(calls: ToolCall[], call: ToolCall, next: ToolCall): void {
  const at = calls.indexOf(call);
  if (at === -1) throw new Error(`call ${call.tool_call_id} is not in this run's calls`);
  calls[at] = next;
}

/** Identities the caller mints for a transition that may need them (unused ones are simply dropped). */
export interface NewIds {
  approvalId: string;
  /** Minted when the intent is recorded, so rows sort by when their intent was recorded. */
  mutationId: string;
}

/** Announces a proposed call: tool_started, then whatever it waits for first. */
export function announce(
  calls: ToolCall[],
  call: Proposed,
  shown: ShownArguments,
  limits: Limits,
  now: number,
  newIds: NewIds,
  policy: ApprovalPolicy = DEFAULT_POLICY,
  /** The halt covering this call when it was proposed (contract section 23); null or absent: none (or unread). */
  haltId: string | null = null,
  /** A full mutation limit found before asking (contract section 23): the call ends rate_limited with this hint. */
  limited: { retry_after_s: number } | null = null,
): Effect[] {
  const approvalId = newIds.approvalId;
  const { state: _proposed, ...base } = call;
  const effects: Effect[] = [emit("tool_started", { ...ids(call), approval_required: call.level !== null })];
  if (call.kind === "human_ask") {
    const input = { question: questionOf(call.arguments), expires_at: now + limits.approvalTimeoutMs };
    place(calls, call, { ...base, state: "awaiting_input", input });
    effects.push(
      emit("human_input_requested", { tool_call_id: call.tool_call_id, question: input.question, expires_at: iso(input.expires_at) }),
    );
    return effects;
  }
  if (call.mutating && (limits.budget[call.tool_name] ?? 0) <= 0) {
    // Not in the ApprovedMutationBudget: no approval is asked for something that may never run.
    effects.push(
      ...finish(calls, call, {
        now,
        approved: false,
        execution: { execution_status: "not_executed", reason: "not_in_budget" },
        modelResult: "Not executed: this tool is not in the host's mutation budget.",
      }),
    );
    return effects;
  }
  if (call.mutating && haltId !== null) {
    // Contract section 23: proposed while halted, it ends at once: no approval is asked and no row is written.
    effects.push(
      ...finish(calls, call, {
        now,
        approved: false,
        execution: { execution_status: "not_executed", reason: "halted", halt_id: haltId },
        modelResult: "Not executed: mutations are halted by an operator; do not retry until the halt is released.",
      }),
    );
    return effects;
  }
  if (call.mutating && limited !== null) {
    // Contract section 23: a full limit refuses the call before anyone is asked: no approval, no row.
    effects.push(
      ...finish(calls, call, {
        now,
        approved: false,
        execution: { execution_status: "not_executed", reason: "rate_limited", retry_after_s: limited.retry_after_s },
        modelResult: `Not executed: the tool's mutation limit is reached; room again in about ${limited.retry_after_s} seconds.`,
      }),
    );
    return effects;
  }
  if (call.level === null) {
    const next: AwaitingAdmission = {
      ...base,
      state: "awaiting_admission",
      grant: "automatic",
      approved_at: now,
      admission_deadline: now + limits.admissionTimeoutMs,
      mutation_id: call.mutating ? newIds.mutationId : null,
    };
    place(calls, call, next);
    return [...effects, ...intentOf(next)];
  }
  const approval: PendingApproval = {
    approval_id: approvalId,
    level: call.level,
    expires_at: now + limits.approvalTimeoutMs,
    policy,
    votes: [],
  };
  place(calls, call, { ...base, state: "awaiting_approval", approval });
  effects.push(
    emit("approval_requested", {
      ...ids(call),
      approval_id: approvalId,
      level: call.level,
      description: call.description,
      arguments: shown.arguments,
      hidden: shown.hidden,
      expires_at: iso(approval.expires_at),
      required: policy.approvals_required,
      approvers: policy.approvers === null ? null : [...policy.approvers],
      ...(call.annotations ? { annotations: shownAnnotations(call.annotations) } : {}),
      ...(call.tool_digest !== undefined ? { tool_digest: call.tool_digest } : {}),
    }),
  );
  return effects;
}

/** The annotations as the server gave them; the title is the server's text, so it leaves redacted like any (section 20). */
function shownAnnotations(annotations: McpToolAnnotations): McpToolAnnotations {
  return annotations.title === undefined ? annotations : { ...annotations, title: redactText(annotations.title) };
}

/**
 * A decision's reason (contract section 6): a longer one is refused at the
 * route (400), never cut there; redaction may lengthen a short secret into
 * "[redacted]", so the kept text is bounded again after it.
 */
export const MAX_DECISION_REASON_CHARS = 1_000;

export interface Decision {
  decision: "approve" | "deny";
  decided_by: string;
  /** Who decides and by which path, with their person (src/policy/); decided_by is its principal id. */
  decider: Decider;
  /** Why, as the person wrote it; kept redacted on the event, the listing and the Slack update. */
  reason?: string;
  confirmation?: string;
}

/** Kept here too for the modules that read the state machine's verdicts beside it. */
export type { Verdict } from "../wire/run-protocol";

export interface DecisionResult {
  verdict: Verdict;
  effects: Effect[];
}

/**
 * A person's decision on an approval. Expiry is settled first: a decision
 * arriving at or after `expires_at` loses to the expiry even if the alarm has
 * not fired yet, so exactly one of them wins and says so.
 */
export function decideApproval(
  calls: ToolCall[],
  approvalId: string,
  input: Decision,
  requester: Requester,
  groups: Readonly<Record<string, readonly string[]>>,
  limits: Limits,
  now: number,
  mutationId: string,
  haltOf: HaltCheck = () => null,
  /** The tool's policy in the version active now (contract section 24); absent: the one it was asked under. */
  current?: (toolName: string) => ApprovalPolicy,
): DecisionResult {
  const call = calls.find((c) => c.kind === "mcp" && approvalIdOf(c) === approvalId);
  if (!call) return { verdict: { kind: "not_found", what: "approval", id: approvalId }, effects: [] };
  // Contract section 19: eligibility, then self-approval, before anything about the approval's state is told.
  const policy = current?.(call.tool_name) ?? approvalOf(call)?.policy ?? DEFAULT_POLICY;
  // Contract section 24: an escalation the approval recorded widens who may decide it.
  const escalated_to = approvalOf(call)?.nudges?.escalated?.escalated_to;
  const refusal = refusalOf({ policy, escalated_to, groups, decider: input.decider, requester, decision: input.decision });
  if (refusal !== null) return { verdict: { kind: "refused", error: refusal }, effects: [] };
  const wanted = input.decision === "approve" ? "approved" : "denied";
  if (call.state !== "awaiting_approval") {
    const decided =
      call.state === "done"
        ? call.approval?.decision
        : call.state === "awaiting_admission" || call.state === "dispatched"
          ? "approved"
          : undefined;
    if (decided === "expired") return { verdict: { kind: "expired" }, effects: [] };
    if (decided === wanted) return { verdict: { kind: "resolved", approval_id: approvalId, decision: wanted }, effects: [] };
    return { verdict: { kind: "already_resolved", decision: decided ?? "unknown", what: "approval" }, effects: [] };
  }
  if (now >= call.approval.expires_at) return { verdict: { kind: "expired" }, effects: expireApproval(calls, call, now) };
  if (wanted === "approved" && call.mutating) {
    // Contract section 23: after "already resolved", before confirmation; a deny is always taken.
    const halt = haltOf(call);
    if (halt === "unavailable") return { verdict: { kind: "storage_timeout" }, effects: [] };
    if (halt !== null) return { verdict: { kind: "halted", halt_id: halt }, effects: [] };
  }
  if (wanted === "approved" && call.approval.level === "confirm" && input.confirmation !== call.tool_name) {
    return { verdict: { kind: "confirmation_mismatch", tool_name: call.tool_name }, effects: [] };
  }
  const asked = call.approval;
  // Contract section 24: a version changed since the votes were counted drops those of voters no longer eligible.
  const votes = (asked.votes ?? []).filter((v) => stillEligible(policy, groups, v, escalated_to, requester));
  let counted = decide({
    policy,
    escalated_to,
    groups,
    decider: input.decider,
    requester,
    decision: input.decision,
    votes,
    at: iso(now),
  });
  if (counted.kind === "duplicate_vote" && votes.length >= policy.approvals_required) {
    // The counted votes reach the current `required` (it was lowered): this decision resolves it.
    counted = { kind: "approved", approvals: votes, decided_by: input.decided_by };
  }
  switch (counted.kind) {
    case "refused":
      return { verdict: counted, effects: [] };
    case "duplicate_vote":
      if (votes.length !== (asked.votes ?? []).length) place(calls, call, { ...call, approval: { ...asked, votes } });
      return { verdict: { kind: "vote_pending", approval_id: approvalId, votes: counted.votes, required: counted.required }, effects: [] };
    case "vote_recorded":
      place(calls, call, { ...call, approval: { ...asked, votes: [...votes, counted.vote] } });
      return {
        verdict: { kind: "vote_pending", approval_id: approvalId, votes: counted.votes, required: counted.required },
        effects: [
          emit("approval_vote", {
            ...ids(call),
            approval_id: approvalId,
            decided_by: input.decided_by,
            votes: counted.votes,
            required: counted.required,
          }),
        ],
      };
    case "approved":
    case "denied":
      break;
  }
  const approval: PendingApproval = counted.kind === "approved" ? { ...asked, votes: counted.approvals } : asked;
  const reason =
    input.reason === undefined || input.reason === "" ? {} : { reason: redactText(input.reason).slice(0, MAX_DECISION_REASON_CHARS) };
  const resolved = emit("approval_resolved", {
    ...ids(call),
    approval_id: approvalId,
    decision: wanted,
    decided_by: input.decided_by,
    ...reason,
    approvals: approvalsOf(approval),
  });
  const verdict: Verdict = { kind: "resolved", approval_id: approvalId, decision: wanted };
  if (wanted === "denied") {
    const ended: ResolvedApproval = { ...approval, decision: "denied", decided_by: input.decided_by, ...reason };
    return {
      verdict,
      effects: [
        resolved,
        ...finish(calls, call, {
          now,
          approved: false,
          execution: { execution_status: "not_executed", reason: "denied" },
          modelResult: "Not executed: a person denied this call.",
          approval: ended,
        }),
      ],
    };
  }
  return {
    verdict,
    effects: [
      resolved,
      ...grantApproval(
        calls,
        call,
        { ...approval, decision: "approved", decided_by: input.decided_by, ...reason },
        limits,
        now,
        mutationId,
      ),
    ],
  };
}

/** An approval resolved approved: the call waits for admission (its intent recorded first) and its execution starts. */
function grantApproval(
  calls: ToolCall[],
  call: AwaitingApproval,
  grant: Exclude<Grant, "automatic">,
  limits: Limits,
  now: number,
  mutationId: string,
): Effect[] {
  const { state: _awaiting, approval: _asked, ...base } = call;
  const next: AwaitingAdmission = {
    ...base,
    state: "awaiting_admission",
    grant,
    approved_at: now,
    admission_deadline: now + limits.admissionTimeoutMs,
    mutation_id: call.mutating ? mutationId : null,
  };
  place(calls, call, next);
  return [emit("tool_execution_started", { ...ids(next), approval_id: grant.approval_id }), ...intentOf(next)];
}

/**
 * Contract section 24: a pending approval meets the version active now at its alarm (a reminder, an
 * escalation or its expiry). The votes of voters no longer eligible are dropped, and an approval whose
 * counted votes (all cast before expiry) reach the current `required` resolves approved, decided by its
 * last counted voter, unless a halt covers it (it stays pending; a halt refuses decisions, section 23).
 * What is still pending at its expiry then expires, as before: expiry stays its own outcome.
 */
export function rejudgePending(
  calls: ToolCall[],
  turn: number,
  requester: Requester,
  groups: Readonly<Record<string, readonly string[]>>,
  current: (toolName: string) => ApprovalPolicy,
  limits: Limits,
  now: number,
  newMutation: () => string,
  haltOf: HaltCheck = () => null,
): Effect[] {
  const effects: Effect[] = [];
  for (const call of turnCalls(calls, turn)) {
    if (call.state !== "awaiting_approval") continue;
    const asked = call.approval;
    const cast = asked.votes ?? [];
    if (cast.length === 0) continue;
    const policy = current(call.tool_name);
    const escalated_to = asked.nudges?.escalated?.escalated_to;
    const votes = cast.filter((v) => stillEligible(policy, groups, v, escalated_to, requester));
    const last = votes.at(-1);
    if (last === undefined || votes.length < policy.approvals_required || (call.mutating && haltOf(call) !== null)) {
      if (votes.length !== cast.length) place(calls, call, { ...call, approval: { ...asked, votes } });
      continue;
    }
    const approval: PendingApproval = { ...asked, votes };
    effects.push(
      emit("approval_resolved", {
        ...ids(call),
        approval_id: asked.approval_id,
        decision: "approved",
        decided_by: last.by,
        approvals: approvalsOf(approval),
      }),
      ...grantApproval(calls, call, { ...approval, decision: "approved", decided_by: last.by }, limits, now, newMutation()),
    );
  }
  return effects;
}

/** The escalation an approval recorded (contract section 24): the patterns it widened eligibility to; undefined when none. */
export function approvalEscalatedTo(calls: readonly ToolCall[], approvalId: string): string[] | undefined {
  const call = calls.find((c) => c.kind === "mcp" && approvalIdOf(c) === approvalId);
  return call === undefined ? undefined : approvalOf(call)?.nudges?.escalated?.escalated_to;
}

/** The approval policy an approval was asked under (contract section 19); undefined for an approval the run never asked. */
export function approvalPolicyOf(
  calls: readonly ToolCall[],
  approvalId: string,
  /** The policy version active now (contract section 24), which decides instead of the one asked under. */
  current?: (toolName: string) => ApprovalPolicy,
): ApprovalPolicy | undefined {
  const call = calls.find((c) => c.kind === "mcp" && approvalIdOf(c) === approvalId);
  if (call === undefined) return undefined;
  return current?.(call.tool_name) ?? approvalOf(call)?.policy ?? DEFAULT_POLICY;
}

/** The approval record of a call in any state after it was asked (undefined: nobody was asked). */
export function approvalOf(call: ToolCall): (PendingApproval & Partial<Omit<ResolvedApproval, keyof PendingApproval>>) | undefined {
  switch (call.state) {
    case "awaiting_approval":
      return call.approval;
    case "awaiting_admission":
    case "dispatched":
      return call.grant === "automatic" ? undefined : call.grant;
    case "done":
      return call.approval;
    default:
      return undefined;
  }
}

/** A person's answer to human__ask, with the same idempotency and expiry rules as approvals. */
export function answerInput(calls: ToolCall[], toolCallId: string, answer: string, answeredBy: string, now: number): DecisionResult {
  const call = calls.find((c) => c.kind === "human_ask" && c.tool_call_id === toolCallId);
  if (!call) return { verdict: { kind: "not_found", what: "question", id: toolCallId }, effects: [] };
  const answered: Verdict = { kind: "answered", tool_call_id: toolCallId };
  if (call.state === "awaiting_input") {
    if (now >= call.input.expires_at) return { verdict: { kind: "expired" }, effects: expireInput(calls, call, now) };
    const { state: _awaiting, input, ...base } = call;
    place(calls, call, { ...base, state: "answered", input: { ...input, answer, answered_by: answeredBy } });
    return { verdict: answered, effects: [emit("human_input_received", { tool_call_id: toolCallId, answered_by: answeredBy })] };
  }
  const status = call.state === "answered" ? "answered" : call.state === "done" ? call.input?.status : undefined;
  const given = call.state === "answered" ? call.input.answer : call.state === "done" ? call.input?.answer : undefined;
  if (status === "expired") return { verdict: { kind: "expired" }, effects: [] };
  if (status === "answered" && given === answer) return { verdict: answered, effects: [] };
  return { verdict: { kind: "already_resolved", decision: status ?? "unknown", what: "question" }, effects: [] };
}

/** The calls of turn `turn`, in the model's order. */
export function turnCalls(calls: readonly ToolCall[], turn: number): ToolCall[] {
  return calls.filter((c) => c.turn === turn);
}

/** Expires every approval and question of the turn whose time has come. */
export function expireDue(calls: ToolCall[], turn: number, now: number): Effect[] {
  const effects: Effect[] = [];
  for (const call of turnCalls(calls, turn)) {
    if (call.state === "awaiting_approval" && now >= call.approval.expires_at) effects.push(...expireApproval(calls, call, now));
    else if (call.state === "awaiting_input" && now >= call.input.expires_at) effects.push(...expireInput(calls, call, now));
  }
  return effects;
}

/**
 * Ordered admission. Calls waiting anywhere in the turn are checked against
 * the call ceiling and their admission deadline; then the earliest unfinished
 * call is admitted if it is ready. At most one call is dispatched at a time.
 */
export function advanceAdmission(calls: ToolCall[], turn: number, counters: RunCounters, limits: Limits, now: number): Effect[] {
  const effects = sweepWaiting(calls, turn, counters, limits, now);
  for (const call of turnCalls(calls, turn)) {
    if (call.state === "done") continue;
    if (call.state === "answered") {
      const { answer } = call.input;
      effects.push(
        ...finish(calls, call, {
          now,
          approved: true,
          execution: { execution_status: "executed", result: { is_error: false, content_bytes: utf8Length(answer) } },
          modelResult: answer,
        }),
      );
      continue;
    }
    if (call.state !== "awaiting_admission") break; // an earlier call is still waiting or in flight
    if (call.mutating && (counters.used[call.tool_name] ?? 0) >= (limits.budget[call.tool_name] ?? 0)) {
      effects.push(
        ...endApprovedUnsent(calls, call, now, "budget_exhausted", "Not executed: this tool's mutation budget for the run is used up."),
      );
      continue;
    }
    counters.admitted += 1;
    if (call.mutating) counters.used[call.tool_name] = (counters.used[call.tool_name] ?? 0) + 1;
    const { state: _waiting, admission_deadline: _deadline, ...rest } = call;
    const dispatched: Dispatched = { ...rest, state: "dispatched" };
    place(calls, call, dispatched);
    effects.push({ kind: "dispatch", call: dispatched });
    // This admission may have used the last call the ceiling allows.
    effects.push(...sweepWaiting(calls, turn, counters, limits, now));
    break;
  }
  return effects;
}

/** Calls waiting for admission end early when they can never be admitted: ceiling reached or deadline passed. */
function sweepWaiting(calls: ToolCall[], turn: number, counters: RunCounters, limits: Limits, now: number): Effect[] {
  const effects: Effect[] = [];
  for (const call of turnCalls(calls, turn)) {
    if (call.state !== "awaiting_admission") continue;
    if (counters.admitted >= limits.ceiling) {
      effects.push(...endApprovedUnsent(calls, call, now, "call_ceiling", "Not executed: the run reached its tool call ceiling."));
    } else if (now >= call.admission_deadline) {
      effects.push(...endApprovedUnsent(calls, call, now, "expired", "Not executed: it waited too long for its turn to run."));
    }
  }
  return effects;
}

/**
 * The dispatched call's terminal decision: it left this system, whatever came
 * back. `settlementLate`: the response arrived but its durable settlement did
 * not finish within the storage bound (the row stays unresolved until it does).
 */
export function settleDispatch(
  calls: ToolCall[],
  call: Dispatched,
  outcome: DispatchOutcome,
  now: number,
  settlementLate = false,
): Effect[] {
  if (outcome.kind === "failed") {
    return finish(calls, call, {
      now,
      approved: true,
      execution: { execution_status: "executed", error: { code: outcome.code, message: outcome.message } },
      modelResult: `The tool call failed: ${outcome.message}`,
    });
  }
  const result: ResultFacts = { is_error: outcome.is_error, content_bytes: outcome.content_bytes, summary: outcome.summary };
  const error = settlementLate
    ? {
        error: {
          code: "settlement_timeout" as const,
          message: "The response arrived but recording its outcome did not finish in time; query the mutation later.",
        },
      }
    : outcome.is_error
      ? { error: { code: "tool_error" as const, message: outcome.summary || "The tool reported an error." } }
      : {};
  return finish(calls, call, {
    now,
    approved: true,
    execution: { execution_status: "executed", result, ...error },
    modelResult: outcome.model_text,
  });
}

/**
 * An admitted call that storage, replay protection, a halt, a limit or its tool's identity stopped
 * before it was sent (its row is the pipeline's to settle). `extra.tool_digest` (tool_changed): the
 * tool's digest now listed, null when it is gone; `halt_id` (halted); `retry_after_s` (rate_limited)
 * (contract section 23).
 */
export function refuseDispatch(
  calls: ToolCall[],
  call: Dispatched,
  reason: DispatchRefusal,
  now: number,
  extra: { halt_id?: string | undefined; retry_after_s?: number | undefined; tool_digest?: string | null | undefined } = {},
): Effect[] {
  const why = {
    cancelled: "the run was cancelled before it was sent",
    storage_unavailable: "its outcome could not be recorded first (storage unavailable)",
    replay_blocked: "an outcome is already recorded for this call",
    prior_outcome_unknown:
      "an earlier identical call in this channel has not settled (it may still be waiting for an answer) or its outcome is unknown; wait for it, or reconcile it if it is unknown",
    transport_unavailable: "its MCP server could not be reached (nothing was sent)",
    authorization_required: "its MCP server needs authorization; an admin connects it (mcp connect)",
    tool_changed: "the tool's schema changed after it was approved (nothing was sent); propose the call again",
    halted: "mutations are halted by an operator; do not retry until the halt is released",
    rate_limited: `the tool's mutation limit is reached; room again in about ${extra.retry_after_s ?? "some"} seconds`,
  }[reason];
  const changed = reason === "tool_changed" ? { tool_digest: extra.tool_digest ?? null } : {};
  return finish(calls, call, {
    now,
    approved: true,
    execution: {
      execution_status: "not_executed",
      reason,
      ...changed,
      ...(reason === "halted" && extra.halt_id !== undefined ? { halt_id: extra.halt_id } : {}),
      ...(reason === "rate_limited" && extra.retry_after_s !== undefined ? { retry_after_s: extra.retry_after_s } : {}),
    },
    modelResult: `Not executed: ${why}.`,
  });
}

/** Cancellation: every call of the turn not yet dispatched ends now; a dispatched one is left to settle. */
export function cancelPending(calls: ToolCall[], turn: number, now: number): Effect[] {
  const effects: Effect[] = [];
  const cancelled = { execution_status: "not_executed", reason: "cancelled" } as const;
  const message = "Not executed: the run was cancelled.";
  for (const call of turnCalls(calls, turn)) {
    switch (call.state) {
      case "done":
      case "dispatched":
      case "proposed":
        continue;
      case "awaiting_approval":
        effects.push(
          emit("approval_resolved", {
            ...ids(call),
            approval_id: call.approval.approval_id,
            decision: "cancelled",
            approvals: approvalsOf(call.approval),
          }),
        );
        effects.push(
          ...finish(calls, call, {
            now,
            approved: false,
            execution: cancelled,
            modelResult: message,
            approval: { ...call.approval, decision: "cancelled" },
          }),
        );
        continue;
      case "awaiting_input":
        effects.push(
          ...finish(calls, call, {
            now,
            approved: true,
            execution: cancelled,
            modelResult: message,
            input: { ...call.input, status: "cancelled" },
          }),
        );
        continue;
      case "answered":
      case "awaiting_admission":
        effects.push(...finish(calls, call, { now, approved: true, execution: cancelled, modelResult: message }));
        continue;
    }
  }
  return effects;
}

export function turnDone(calls: readonly ToolCall[], turn: number): boolean {
  return turnCalls(calls, turn).every((c) => c.state === "done");
}

export function hasDispatched(calls: readonly ToolCall[], turn: number): boolean {
  return turnCalls(calls, turn).some((c) => c.state === "dispatched");
}

/** The next moment something in the turn expires on its own. */
export function nextDeadline(calls: readonly ToolCall[], turn: number): number | undefined {
  let next: number | undefined;
  const consider = (t: number) => {
    if (next === undefined || t < next) next = t;
  };
  const considerNudge = (nudges: Nudges | undefined) => {
    const at = nudgeDueAt(nudges);
    if (at !== undefined) consider(at);
  };
  for (const call of turnCalls(calls, turn)) {
    if (call.state === "awaiting_approval") {
      consider(call.approval.expires_at);
      considerNudge(call.approval.nudges);
    } else if (call.state === "awaiting_input") consider(call.input.expires_at);
    else if (call.state === "awaiting_admission") consider(call.admission_deadline);
    else if (call.state === "dispatched")
      for (const q of call.questions ?? []) {
        if (!isOpen(q)) continue;
        consider(q.expires_at);
        considerNudge(q.nudges);
      }
  }
  return next;
}

/** An MCP question still waiting for a person (contract section 21). */
export function isOpen(question: McpQuestion): boolean {
  return question.answer === undefined && question.expired !== true;
}

/** The intent row of a call that just became an approved mutation. */
function intentOf(call: AwaitingAdmission): Effect[] {
  if (call.mutation_id === null) return [];
  return [{ kind: "record_intent", call, ...intentRowOf(call, call.mutation_id) }];
}

function expireApproval(calls: ToolCall[], call: AwaitingApproval, now: number): Effect[] {
  return [
    emit("approval_resolved", {
      ...ids(call),
      approval_id: call.approval.approval_id,
      decision: "expired",
      approvals: approvalsOf(call.approval),
    }),
    ...finish(calls, call, {
      now,
      approved: false,
      execution: { execution_status: "not_executed", reason: "expired" },
      modelResult: "Not executed: nobody approved it in time.",
      approval: { ...call.approval, decision: "expired" },
    }),
  ];
}

function expireInput(calls: ToolCall[], call: AwaitingInput, now: number): Effect[] {
  return finish(calls, call, {
    now,
    approved: true,
    execution: { execution_status: "not_executed", reason: "expired" },
    modelResult: "Nobody answered the question in time.",
    input: {
      ...call.input,
      status: "expired",
    },
  });
}

interface ExecutionFields {
  execution_status: "executed" | "not_executed";
  reason?: NotExecutedReason;
  result?: ResultFacts;
  error?: { code: ExecutedErrorCode; message: string };
  /** tool_changed (contract section 23): the tool's digest now listed, null when it is gone. */
  tool_digest?: string | null;
  /** Contract section 23: with halted, the halt; with rate_limited, the hint. */
  halt_id?: string;
  retry_after_s?: number;
}

/**
 * tool_execution then tool_completed: the last two events of every call. An
 * approved mutation that ends here without having been sent settles its row
 * not_executed; a dispatched one's row belongs to the dispatch pipeline.
 */
/** An approved call that ends without being sent (budget, ceiling, admission deadline): not_executed, approved true. */
function endApprovedUnsent(
  calls: ToolCall[],
  call: Exclude<ToolCall, Done>,
  now: number,
  reason: NotExecutedReason,
  message: string,
): Effect[] {
  return finish(calls, call, { now, approved: true, execution: { execution_status: "not_executed", reason }, modelResult: message });
}

/** How a call ends: what `finish` records on its done record and reports on the stream. */
interface CallEnding {
  now: number;
  /** Whether the call was approved (tool_completed.approved). */
  approved: boolean;
  execution: ExecutionFields;
  /** What the model is told about the call. */
  modelResult: string;
  /** The approval as it ended, when it ended here (denied, expired, cancelled). */
  approval?: ResolvedApproval;
  /** The question as it ended, when it ended here (expired, cancelled). */
  input?: EndedQuestion;
}

function finish(calls: ToolCall[], call: Exclude<ToolCall, Done>, ending: CallEnding): Effect[] {
  const { now, approved, execution, modelResult, approval, input } = ending;
  const base: CallBase = {
    turn: call.turn,
    index: call.index,
    tool_call_id: call.tool_call_id,
    tool_name: call.tool_name,
    arguments: call.arguments,
    arguments_digest: call.arguments_digest,
    kind: call.kind,
    mutating: call.mutating,
    level: call.level,
    description: call.description,
    ...(call.tool_digest !== undefined ? { tool_digest: call.tool_digest } : {}),
    started_at: call.started_at,
  };
  const questions = call.state === "dispatched" ? call.questions : undefined;
  // An approved mutation has an intent row, and its id shows on the stream.
  const granted = call.state === "awaiting_admission" || call.state === "dispatched" ? call : undefined;
  const rowId = granted?.mutation_id ?? null;
  const grant = granted?.grant;
  const endedApproval = approval ?? (grant !== undefined && grant !== "automatic" ? grant : undefined);
  const endedInput: EndedQuestion | undefined = input ?? (call.state === "answered" ? { ...call.input, status: "answered" } : undefined);
  const done: Done = {
    ...base,
    state: "done",
    approved,
    ...(endedApproval ? { approval: endedApproval } : {}),
    ...(endedInput ? { input: endedInput } : {}),
    ...(execution.reason !== undefined ? { reason: execution.reason } : {}),
    ...(rowId !== null ? { mutation_id: rowId } : {}),
    ...(questions !== undefined ? { questions } : {}),
    model_result: modelResult,
    model_is_error: execution.execution_status === "not_executed" || execution.error !== undefined || execution.result?.is_error === true,
  };
  place(calls, call, done);
  const effects: Effect[] = [
    emit("tool_execution", { ...withApproval(done), ...execution, ...(rowId !== null ? { mutation_id: rowId } : {}) }),
    emit("tool_completed", { ...withApproval(done), approved, duration_ms: Math.max(0, now - call.started_at) }),
  ];
  if (rowId !== null && granted !== undefined && granted.state !== "dispatched") {
    effects.push({ kind: "settle_unsent", call: done, ...intentRowOf(granted, rowId), reason: execution.reason ?? "cancelled" });
  }
  return effects;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}
