// The agent loop of one run (contract sections 3, 4, 6 and 7): asks the model
// source for a turn, announces its calls, applies people's decisions, admits
// calls in order and hands them to the dispatch pipeline, then gives the
// results back to the model, until the model is done or the run is
// cancelled. Decisions live in the pure call state machine
// (src/execution/tool-calls.ts); this class applies its effects: appends to
// the run's stream, starts dispatches and durable row work, saves what
// changed and sets deadlines. The RunObject persists, schedules and delegates.
import type { HostConfig } from "../config/config";
import { DispatchPipeline, type CallSession, type PipelineDecision, type PipelineLedger } from "../execution/dispatch-pipeline";
import { argumentsDigest } from "../execution/arguments-digest";
import { redactText } from "../execution/redaction";
import { shownArguments } from "../execution/shown-arguments";
import type { ToolCatalog } from "../execution/tool-catalog";
import {
  advanceAdmission,
  rejudgePending,
  announce,
  approvalEscalatedTo,
  approvalPolicyOf,
  answerInput,
  cancelPending,
  decideApproval,
  expireDue,
  hasDispatched,
  isOpen,
  nextDeadline,
  refuseDispatch,
  settleDispatch,
  turnCalls,
  turnDone,
  type Decision,
  type Dispatched,
  type Done,
  type Effect,
  type HaltCheck,
  type Limits,
  type McpQuestion,
  type Proposed,
  type ToolCall,
  type Verdict,
} from "../execution/tool-calls";
import { classifyTool, parseMcpToolName } from "../execution/tool-policy";
import { armNudges, nudgeDue, type Reminded, type ShownInSlack } from "../execution/approval-nudges";
import { type ActiveHalt, coveringHalt, type HaltSubject } from "../policy/halt-scope";
import { limitsFor, type MutationLimit } from "../policy/mutation-limits";
import type { QuestionAnswer } from "../execution/mcp-questions";
import {
  answerQuestion,
  askRound,
  cancelQuestions,
  expireQuestions,
  findQuestion,
  keepConversation,
  openQuestions,
  roundOpen,
  roundResponses,
} from "../execution/mcp-rounds";
import {
  answerRefusal,
  askAnswerRefusal,
  type ApprovalPolicy,
  type Decider,
  effectivePolicy,
  nudgePolicy,
  type Requester,
  runRequester,
  slackUsersToRemind,
} from "../policy/approval-policy";
import { newApprovalId, newToolCallId } from "../ids";
import { newMutationId } from "../outcomes/mutation-outcomes";
import type { AlarmSchedule } from "../schedule/alarm-schedule";
import type { EventType, StoredEvent } from "../wire/events";
import type { ActionVerdict, PersonAction } from "../wire/run-protocol";
import type { EventFields, RunEvent } from "../wire/event-schemas";
import type { RunStream } from "../stream/run-stream";
import type { WatchRequest } from "../stream/watcher-sockets";
import type { ModelSource, ProposedCall } from "./model-source";
import { cancelRequested, type CancelResult, type RunLifecycle, type RunRecord, type RunSummary } from "./run-record";
import type { RunStore } from "./run-store";
import { TurnDriver } from "./turn-driver";
import { logger } from "../operate/logger";
import { settingsDocument } from "../config/policy-document";
import type { PolicySnapshot } from "../outcomes/policy-store";
import type { ShadowDifference } from "../listings/run-index";
import { checkpointVerdict, deciderVerdict, quorumVerdict } from "../policy/shadow-verdicts";
import { askVerdict } from "./shadow-ask";
import { stillEligible, type Vote } from "../policy/approval-policy";

/** The events that carry the deciding policy version and hash (contract sections 4, 24). */
const POLICY_STAMPED = new Set<EventType>([
  "approval_requested",
  "approval_vote",
  "approval_resolved",
  "approval_reminded",
  "approval_escalated",
  "tool_execution",
]);

const MS_PER_SECOND = 1_000;

export interface EngineDeps {
  config: HostConfig;
  /**
   * The policy version in force (contract section 24): the object's per-isolate snapshot, brought
   * up to the pointer every check reads (folded into the halts read); absent: the settings.
   */
  policy?: { current(): PolicySnapshot; shadow?(): PolicySnapshot | undefined; followVersion(version: number): Promise<void> };
  store: RunStore;
  stream: RunStream;
  schedule: AlarmSchedule;
  ledger: PipelineLedger;
  /** Opens a call's MCP session before its checkpoint (contract section 7). */
  open: (call: Dispatched) => Promise<CallSession>;
  source: ModelSource;
  catalog: ToolCatalog;
  /** What the object does beside the stream on each append and in the summary (the run index, the Slack outbox). */
  observer?: EngineObserver;
  /** The active halts from D1, uncached, within STORAGE_WAIT_MS (contract section 23); absent: none are read. */
  halts?: () => Promise<readonly ActiveHalt[] | "unavailable">;
  /**
   * The check of a mutation's limits before anyone is asked (contract section 23), within
   * STORAGE_WAIT_MS: the hint of a full limit, null when there is room, "unavailable" (ask as usual).
   */
  limitRoom?: (
    limits: readonly MutationLimit[],
    call: { tool_name: string; channel_id: string; requester_person: string | null | undefined; requested_by: string },
  ) => Promise<{ retry_after_s: number } | null | "unavailable">;
}

/**
 * The object's hooks on the run's append path and summary. `appended` runs
 * synchronously right after each stored append (same storage turn: a mark or
 * an outbox item is never lost and never made for an event not stored); it
 * must not touch the network. `deadline` is the alarm taking the object's own
 * deadlines (index, slack), which the engine does not act on.
 */
export interface EngineObserver {
  appended(event: RunEvent, now: number): void;
  summaryExtras(): Partial<RunSummary>;
  /**
   * MCP questions (contract section 21) that ended without an answer: their round expired
   * (`expired`), the run was cancelled, or the call ended while they were open (`cancelled`).
   * No event says so (the follow-up carries them as cancel), so the engine tells the observer
   * (the run index); synchronous and storage-only, like `appended`.
   */
  questionsEnded?(ended: { tool_call_id: string; input_id: string }[], status: "expired" | "cancelled", now: number): void;
  /** Contract section 24: whether an approval's (or MCP question's) message is shown in Slack; only those are reminded. */
  shownInSlack?: ShownInSlack;
  /** Contract section 24: a reminder was appended; `users` (of the run's installation, eligible by exact id) are told directly. */
  reminded?(item: Reminded, users: string[], now: number): void;
  /** Where the shadow version's verdict at a check differed (contract section 24): a pending index mark; storage-only. */
  shadowDiffered?(difference: Omit<ShadowDifference, "run_id" | "at">, now: number): void;
}

export class RunEngine {
  readonly #deps: EngineDeps;
  readonly #run: RunRecord;
  /** Every call of the run, kept so repeated decisions get their first answer. */
  readonly #calls: ToolCall[];
  readonly #pipeline: DispatchPipeline;
  readonly #driver = new TurnDriver(
    () => this.#drive(),
    (err: unknown) => this.#fail("internal_error", `The run stopped on an unexpected error: ${(err as Error).message}`, true),
  );
  /** Aborts the model call in flight when the run is cancelled. */
  #modelCall: AbortController | undefined;

  constructor(deps: EngineDeps, run: RunRecord, calls: ToolCall[]) {
    this.#deps = deps;
    this.#run = run;
    this.#calls = calls;
    this.#pipeline = new DispatchPipeline({
      ledger: deps.ledger,
      open: deps.open,
      run: () => {
        const { run_id, channel_id, delivery_id } = this.#run;
        return {
          run_id,
          channel_id,
          delivery_id,
          cancel_requested: cancelRequested(this.#run),
          ...this.#pipelineRun(),
        };
      },
      // A call's conversation with its server (contract section 21) is on disk before the follow-up it announces leaves.
      writeAhead: (call, conversation) => {
        const current = this.#current(call);
        if (current?.state !== "dispatched") return;
        keepConversation(this.#calls, current, conversation);
        this.#save();
      },
      maxInputRounds: deps.config.MCP_MAX_INPUT_ROUNDS,
      limitsOf: (toolName) => limitsFor(this.#policy().document.tools, toolName),
      // Contract section 24: the shadow's limits ride on the checkpoint's statement as a result column;
      // its budget is judged against the run's admitted mutations before this one (admission counted it).
      shadowCheckpoint: (call) => {
        const shadow = deps.policy?.shadow?.();
        if (shadow === undefined) return undefined;
        return {
          limits: limitsFor(shadow.document.tools, call.tool_name),
          seen: (active, limited) => {
            const usedBefore = Math.max(0, this.mutationsUsed(call.tool_name) - 1);
            this.#shadowCheckpoint(shadow, call, active, checkpointVerdict(shadow.document.budget, call.tool_name, usedBefore, limited));
          },
        };
      },
      ...(deps.policy !== undefined
        ? { policy: { version: () => deps.policy!.current().version, follow: (version) => deps.policy!.followVersion(version) } }
        : {}),
    });
  }

  get run(): Readonly<RunRecord> {
    return this.#run;
  }

  /** The first event of the run, then the loop. */
  start(message: string): void {
    this.#deps.source.begin(message);
    const { user_id, requested_by, on_behalf_of } = this.#run;
    this.append("run_started", {
      user_id,
      ...(requested_by !== undefined ? { requested_by } : {}),
      ...(on_behalf_of !== undefined ? { on_behalf_of } : {}),
    });
    this.#driver.kick();
  }

  /** A run that was mid-turn when the object went away picks up where it was. */
  resume(): void {
    if (this.#running()) this.#driver.kick();
  }

  summary(): RunSummary {
    const { stream } = this.#deps;
    const run = this.#run;
    const { lifecycle } = run;
    const pendingApprovals: RunSummary["pending_approvals"] = [];
    const pendingInputs: RunSummary["pending_inputs"] = [];
    for (const c of this.#calls) {
      if (c.state === "awaiting_approval") {
        const { approval_id, expires_at } = c.approval;
        pendingApprovals.push({ approval_id, tool_call_id: c.tool_call_id, tool_name: c.tool_name, expires_at: iso(expires_at) });
      } else if (c.state === "awaiting_input") {
        pendingInputs.push({ tool_call_id: c.tool_call_id, question: c.input.question, expires_at: iso(c.input.expires_at) });
      }
    }
    for (const { call, question } of openQuestions(this.#calls)) {
      pendingInputs.push({
        tool_call_id: call.tool_call_id,
        question: question.question,
        expires_at: iso(question.expires_at),
        input_id: question.input_id,
        // Parsed from the server's JSON answer, so JSON all through.
        requested_schema: question.requested_schema as NonNullable<RunSummary["pending_inputs"][number]["requested_schema"]>,
      });
    }
    return {
      run_id: run.run_id,
      channel_id: run.channel_id,
      user_id: run.user_id,
      ...(run.request !== undefined ? { request: run.request } : {}),
      ...(run.requested_by !== undefined ? { requested_by: run.requested_by } : {}),
      ...(run.on_behalf_of !== undefined ? { on_behalf_of: run.on_behalf_of } : {}),
      status: lifecycle.status,
      last_sequence: stream.lastSequence,
      earliest_sequence: stream.earliestSequence,
      subscribers: stream.subscriberCount,
      watchers: stream.watcherCounts(),
      pending_approvals: pendingApprovals,
      pending_inputs: pendingInputs,
      created_at: run.created_at,
      ...(lifecycle.status !== "running" ? { ended_at: lifecycle.ended_at } : {}),
      ...this.#deps.observer?.summaryExtras(),
    };
  }

  /**
   * A person's action, entered once (the run protocol, src/wire/run-protocol.ts): judged here
   * and answered with one verdict a surface renders as it is.
   */
  act(action: PersonAction, halts: readonly ActiveHalt[] | "unavailable" = []): ActionVerdict {
    const haltOf = this.#haltCheck(halts);
    switch (action.kind) {
      case "approve":
      case "deny":
        return this.#decide(action, haltOf);
      case "answer": {
        const refusal = askAnswerRefusal(action.actor, this.#run.requested_by);
        if (refusal !== null) return this.#refusedAnswer(refusal);
        return this.#answerInput(action.tool_call_id, action.answer, action.actor.principal_id);
      }
      case "answer_form":
        return this.#answerMcpInput(action.input_id, action.answer, action.actor.principal_id, action.actor, haltOf);
      case "cancel":
        return { kind: "cancel", result: this.cancel() };
    }
  }

  /** A refusal with the rule in force (and its escalation) and the run's requester, so a surface can name who may decide. */
  #refused(error: "not_an_approver" | "self_approval_forbidden", policy: ApprovalPolicy, escalatedTo?: string[]): ActionVerdict {
    const { requested_by, user_id } = this.#run;
    const requester = { ...(requested_by !== undefined ? { requested_by } : {}), user_id };
    return { kind: "refused", error, policy, ...(escalatedTo !== undefined ? { escalated_to: escalatedTo } : {}), requester };
  }

  /** A human__ask answer refused (no approval policy governs it): told with the run's requester. */
  #refusedAnswer(error: "not_an_approver"): ActionVerdict {
    const { requested_by, user_id } = this.#run;
    return { kind: "refused", error, requester: { ...(requested_by !== undefined ? { requested_by } : {}), user_id } };
  }

  /** Whether a halt covers one of this run's calls (contract section 23), from the halts read for this action. */
  #haltCheck(halts: readonly ActiveHalt[] | "unavailable"): HaltCheck {
    return (call) => {
      if (halts === "unavailable") return "unavailable";
      return coveringHalt(halts, this.#haltSubject(call.tool_name))?.halt_id ?? null;
    };
  }

  /** The run and one of its calls as a halt sees them: the same fields the row gives the checkpoint's statement. */
  #haltSubject(toolName: string): HaltSubject {
    const run = this.#pipelineRun();
    return {
      requested_by: run.requested_by ?? "",
      on_behalf_of: run.on_behalf_of,
      persons: [run.requester_person],
      call: { tool_name: toolName, server: parseMcpToolName(toolName)?.server },
    };
  }

  #pipelineRun() {
    const requester = this.#requester();
    return {
      requested_by: requester.principal_id,
      on_behalf_of: requester.on_behalf_of,
      requester_person: requester.on_behalf_of !== undefined ? (requester.on_behalf_of_person ?? null) : requester.person,
    };
  }

  /** Each mutating tool of a turn whose limit is full before anyone is asked (contract section 23); a failed read asks as usual. */
  async #limitsBeforeAsking(tools: { tool_name: string; mutating: boolean }[]): Promise<Map<string, { retry_after_s: number }>> {
    const full = new Map<string, { retry_after_s: number }>();
    const check = this.#deps.limitRoom;
    if (check === undefined) return full;
    const run = this.#pipelineRun();
    for (const name of new Set(tools.filter((t) => t.mutating).map((t) => t.tool_name))) {
      const limits = limitsFor(this.#policy().document.tools, name);
      if (limits.length === 0) continue;
      const room = await check(limits, {
        tool_name: name,
        channel_id: this.#run.channel_id,
        requester_person: run.requester_person,
        requested_by: run.requested_by,
      });
      if (room !== null && room !== "unavailable") full.set(name, room);
    }
    return full;
  }

  #decide(action: Extract<PersonAction, { kind: "approve" | "deny" }>, haltOf: HaltCheck): ActionVerdict {
    const { approval_id: approvalId, actor, prompt } = action;
    const waiting = this.#calls.some((c) => c.state === "awaiting_approval" && c.approval.approval_id === approvalId);
    const verdict = this.#decideApproval(
      approvalId,
      {
        decision: action.kind,
        decided_by: actor.principal_id,
        decider: actor,
        ...(action.reason !== undefined ? { reason: action.reason } : {}),
        ...(action.kind === "approve" && action.confirmation !== undefined ? { confirmation: action.confirmation } : {}),
      },
      haltOf,
    );
    // Refused only for an approval the run asked: its policy is there.
    const { tools } = this.#policy().document;
    const policy = approvalPolicyOf(this.#calls, approvalId, (toolName) => effectivePolicy(tools, toolName));
    if (verdict.kind === "refused" && policy !== undefined)
      return this.#refused(verdict.error, policy, approvalEscalatedTo(this.#calls, approvalId));
    if (verdict.kind === "refused" || prompt !== true) return verdict;
    // A surface with its own steps: a click on an approval no longer waiting is stale; a confirm step opens when nothing was typed.
    if (!waiting) return { kind: "stale", approval_id: approvalId };
    if (verdict.kind === "confirmation_mismatch" && action.kind === "approve" && action.confirmation === undefined)
      return { kind: "needs_confirmation", approval_id: approvalId, tool_name: verdict.tool_name };
    return verdict;
  }

  cancel(): CancelResult {
    const { lifecycle } = this.#run;
    if (lifecycle.status !== "running") return { found: true, status: lifecycle.status, already_ended: true };
    lifecycle.cancel_requested = true;
    this.#deps.schedule.clear("turn");
    this.#modelCall?.abort();
    const turn = lifecycle.phase.kind === "tools" ? lifecycle.phase.turn : undefined;
    if (turn !== undefined) {
      this.#apply(cancelPending(this.#calls, turn, Date.now()));
      // A call waiting for answers mid-call (contract section 21) gets cancel for them now; its settlement is still recorded.
      for (const closed of cancelQuestions(this.#calls, turn)) this.#closeRound(closed.tool_call_id, "cancelled");
    }
    this.#save();
    // A dispatched call is not abandoned: the run ends once its result is reported.
    if (turn === undefined || !hasDispatched(this.#calls, turn)) this.#endCancelled();
    return { found: true, status: "cancelling", already_ended: false };
  }

  #decideApproval(approvalId: string, decision: Decision, haltOf: HaltCheck): Verdict {
    const { tools, groups } = this.#policy().document;
    const now = Date.now();
    const asked = this.#calls.find((c) => c.state === "awaiting_approval" && c.approval.approval_id === approvalId);
    const castVotes = asked?.state === "awaiting_approval" ? [...(asked.approval.votes ?? [])] : [];
    // Contract section 24: each decision is judged by the version active now, the votes already counted included.
    const result = decideApproval(
      this.#calls,
      approvalId,
      decision,
      this.#requester(),
      groups,
      this.#limits(),
      now,
      newMutationId(),
      haltOf,
      (toolName) => effectivePolicy(tools, toolName),
    );
    // Appended at `now`: a vote's `at` in approvals is its approval_vote's `at`.
    this.#applyAndAdvance(result.effects, false, now);
    if (asked !== undefined) this.#shadowDecision(asked, decision, castVotes, result.verdict, now);
    return result.verdict;
  }

  /**
   * Contract section 24, Shadow: the shadow version judges the same decision (the `decider` check) and,
   * for an approve the active version counted, the votes actually cast (the `quorum` check), with the
   * same functions; where its verdict differs, the run records it as a pending index mark.
   */
  #shadowDecision(call: ToolCall, decision: Decision, castVotes: Vote[], verdict: Verdict, now: number): void {
    const shadow = this.#deps.policy?.shadow?.();
    const observer = this.#deps.observer;
    if (shadow === undefined || observer?.shadowDiffered === undefined) return;
    const differ = (check: "decider" | "quorum", active: string, shadowVerdict: string) => {
      if (active === shadowVerdict) return;
      observer.shadowDiffered?.(
        { version: shadow.version, tool_call_id: call.tool_call_id, tool_name: call.tool_name, check, active, shadow: shadowVerdict },
        now,
      );
    };
    const input = { decider: decision.decider, requester: this.#requester(), decision: decision.decision };
    const active = verdict.kind === "refused" ? verdict.error : "eligible";
    differ("decider", active, deciderVerdict(shadow.document, call.tool_name, input));
    if (decision.decision !== "approve") return;
    let activeQuorum: string;
    let counted: number;
    if (verdict.kind === "vote_pending") {
      activeQuorum = `pending:${verdict.required - verdict.votes}`;
      counted = verdict.votes;
    } else if (verdict.kind === "resolved" && verdict.decision === "approved") {
      // The votes the active version counted when it resolved: those still eligible, and this one.
      const policy = effectivePolicy(this.#policy().document.tools, call.tool_name);
      const groups = this.#policy().document.groups;
      const escalatedTo = call.state === "awaiting_approval" ? call.approval.nudges?.escalated?.escalated_to : undefined;
      const still = castVotes.filter((v) => stillEligible(policy, groups, v, escalatedTo, this.#requester()));
      activeQuorum = "resolved";
      counted = Math.max(policy.approvals_required, still.length + 1);
    } else return;
    differ("quorum", activeQuorum, quorumVerdict(shadow.document, call.tool_name, counted));
  }

  /** Contract section 24: where the shadow's `checkpoint` verdict differs from the active one's, a pending index mark. */
  #shadowCheckpoint(shadow: PolicySnapshot, call: Pick<ToolCall, "tool_call_id" | "tool_name">, active: string, inShadow: string): void {
    if (active === inShadow) return;
    this.#deps.observer?.shadowDiffered?.(
      {
        version: shadow.version,
        tool_call_id: call.tool_call_id,
        tool_name: call.tool_name,
        check: "checkpoint",
        active,
        shadow: inShadow,
      },
      Date.now(),
    );
  }

  /**
   * Contract section 24: a call the active version's budget refused at admission never reaches the
   * checkpoint's statement, so the shadow is judged here: its budget against the same count, then, where
   * that has room, its limits by the bounded read made before asking (nothing is recorded if D1 does not answer).
   */
  #shadowAdmission(effects: readonly Effect[]): void {
    const shadow = this.#deps.policy?.shadow?.();
    if (shadow === undefined || this.#deps.observer?.shadowDiffered === undefined) return;
    for (const effect of effects) {
      if (effect.kind !== "settle_unsent" || effect.reason !== "budget_exhausted") continue;
      const call = effect.call;
      const used = this.mutationsUsed(call.tool_name);
      if (checkpointVerdict(shadow.document.budget, call.tool_name, used, false) === "budget_exhausted") continue;
      const limits = limitsFor(shadow.document.tools, call.tool_name);
      const check = this.#deps.limitRoom;
      if (limits.length === 0 || check === undefined) {
        this.#shadowCheckpoint(shadow, call, "budget_exhausted", "allowed");
        continue;
      }
      const { requested_by, requester_person } = this.#pipelineRun();
      void check(limits, { tool_name: call.tool_name, channel_id: this.#run.channel_id, requested_by, requester_person }).then((room) => {
        if (room === "unavailable") return;
        this.#shadowCheckpoint(
          shadow,
          call,
          "budget_exhausted",
          checkpointVerdict(shadow.document.budget, call.tool_name, used, room !== null),
        );
      });
    }
  }

  /** A row stamped with the policy version in force now (contract sections 8, 24). */
  #stamped<T extends object>(row: T): T & { policy_version?: number; policy_hash?: string } {
    const policy = this.#deps.policy?.current();
    return policy === undefined ? row : { ...row, policy_version: policy.version, policy_hash: policy.hash };
  }

  /** The policy version in force now (contract section 24): the object's snapshot, else the settings as version 0. */
  #policy(): Pick<PolicySnapshot, "document"> {
    return this.#deps.policy?.current() ?? { document: settingsDocument(this.#deps.config) };
  }

  /** The run's requester as section 19 compares it: its principal, its person, and the on_behalf_of it named. */
  #requester(): Requester {
    return runRequester(this.#run);
  }

  #answerInput(toolCallId: string, answer: string, answeredBy: string): Verdict {
    const result = answerInput(this.#calls, toolCallId, answer, answeredBy, Date.now());
    this.#applyAndAdvance(result.effects);
    return result.verdict;
  }

  /**
   * A person's answer to an MCP tool's question mid-call (contract section 21). Only a principal
   * eligible to approve the call may answer (section 19's rule, checked before anything else is
   * told); when it closes the round, the follow-up tools/call goes out.
   */
  #answerMcpInput(inputId: string, answer: QuestionAnswer, answeredBy: string, decider: Decider, haltOf: HaltCheck): ActionVerdict {
    const found = findQuestion(this.#calls, inputId);
    if (found === undefined) return { kind: "not_found", what: "question", id: inputId };
    const { call } = found;
    // Contract section 24: the version active now decides who may answer, as for a vote.
    const { tools, groups } = this.#policy().document;
    const policy = effectivePolicy(tools, call.tool_name);
    // Whoever may approve the call answers; under self_approval: false its requester may only decline or cancel (section 21).
    const refusal = answerRefusal({
      policy,
      // Contract section 24: the question's escalation widens who may answer it.
      escalated_to: found.question.nudges?.escalated?.escalated_to,
      groups,
      decider,
      requester: this.#requester(),
      action: answer.action,
    });
    if (refusal !== null) return this.#refused(refusal, policy, found.question.nudges?.escalated?.escalated_to);
    if (answer.action === "accept" && call.mutating && call.state === "dispatched" && isOpen(found.question)) {
      // Contract section 23: an accept while a halt covers the call is refused and changes nothing; decline and cancel are taken.
      const halt = haltOf(call);
      if (halt === "unavailable") return { kind: "storage_timeout" };
      if (halt !== null) return { kind: "halted", halt_id: halt };
    }
    const result = answerQuestion(this.#calls, inputId, answer, answeredBy, Date.now());
    this.#apply(result.effects);
    if (result.closed) this.#closeRound(result.closed.tool_call_id, "expired");
    if (result.effects.length > 0 || result.closed) {
      this.#armDeadlineOfPhase();
      this.#save();
    }
    return result.verdict;
  }

  /**
   * The server asked a round of questions (contract section 21): they go on the stream and the
   * round is kept with the call in storage; nothing is in flight until the round closes. A run
   * cancelled meanwhile asks nobody: the questions go back as cancel at once.
   */
  #ask(call: Dispatched, decision: Extract<PipelineDecision, { kind: "ask" }>): void {
    const { conversation, questions } = decision;
    if (cancelRequested(this.#run)) {
      const next = keepConversation(this.#calls, call, conversation);
      this.#followUp(next, Object.fromEntries(questions.map((q) => [q.key, { action: "cancel" as const }])));
      return;
    }
    // One clock reading: each question's expires_at is its event's `at` plus APPROVAL_TIMEOUT_MS exactly.
    const now = Date.now();
    this.#apply(askRound(this.#calls, call, conversation, questions, now, this.#deps.config.APPROVAL_TIMEOUT_MS), now);
    // Contract section 24: the call's MCP questions are reminded and escalated as its approval is.
    armNudges(this.#calls, call.tool_call_id, nudgePolicy(this.#policy().document.tools, call.tool_name), now, conversation.round);
    this.#armDeadlineOfPhase();
    this.#save();
  }

  /**
   * The round of this call closed: its answers go to the server in the follow-up. The round's
   * questions closed unanswered (by expiry, or a cancel: `unanswered`) are told to the observer.
   */
  #closeRound(toolCallId: string, unanswered: "expired" | "cancelled"): void {
    const call = this.#calls.find((c) => c.tool_call_id === toolCallId && c.state === "dispatched");
    if (call?.state !== "dispatched") return;
    const questions = call.questions ?? [];
    const latest = questions.reduce((max, q) => Math.max(max, q.round), 0);
    const ended = questions.filter((q) => q.round === latest && q.expired === true && q.answer === undefined);
    this.#questionsEnded(toolCallId, ended, unanswered);
    if (call.conversation?.phase === "waiting") this.#followUp(call, roundResponses(call));
  }

  /** Sends a closed round's answers (the pipeline writes the follow-up ahead first). */
  #followUp(call: Dispatched, inputResponses: Record<string, QuestionAnswer>): void {
    this.#pipeline.followUp(call, inputResponses, (decision) => this.#decided(call, decision));
  }

  /** The run's record of `call` as it is now (the pure transitions replace records). */
  #current(call: Dispatched): ToolCall | undefined {
    return this.#calls.find((c) => c.turn === call.turn && c.tool_call_id === call.tool_call_id);
  }

  #questionsEnded(toolCallId: string, questions: readonly McpQuestion[], status: "expired" | "cancelled", now = Date.now()): void {
    if (questions.length === 0) return;
    this.#deps.observer?.questionsEnded?.(
      questions.map((q) => ({ tool_call_id: toolCallId, input_id: q.input_id })),
      status,
      now,
    );
  }

  /** The name of the tool call `toolCallId` of the run (the latest one of that id), for the run index. */
  toolNameOf(toolCallId: string): string | undefined {
    for (let i = this.#calls.length - 1; i >= 0; i--) {
      const call = this.#calls[i];
      if (call?.tool_call_id === toolCallId) return call.tool_name;
    }
    return undefined;
  }

  /** The run's record of the tool call `toolCallId` (the latest one of that id), for the replay index (contract section 24). */
  callOf(toolCallId: string): ToolCall | undefined {
    for (let i = this.#calls.length - 1; i >= 0; i--) if (this.#calls[i]?.tool_call_id === toolCallId) return this.#calls[i];
    return undefined;
  }

  /** The run's admitted mutations of `toolName` so far (the budget's count). */
  mutationsUsed(toolName: string): number {
    return this.#run.counters.used[toolName] ?? 0;
  }

  #armDeadlineOfPhase(): void {
    const phase = this.#phase();
    if (phase?.kind === "tools") this.#armCallDeadline(phase.turn);
  }

  /** The SSE route; a new subscriber may start the heartbeat. */
  subscribe(after: number, clientKey: string | undefined): Response {
    const response = this.#deps.stream.subscribe(after, clientKey);
    if (this.heartbeatDueAt() !== undefined) this.#deps.schedule.rearm();
    return response;
  }

  /** A watcher on a hibernatable socket (contract section 27); an SSE one may start the heartbeat, each has a STREAM_MAX_SECONDS. */
  watch(request: WatchRequest): Response {
    const response = this.#deps.stream.watch(request);
    this.#deps.schedule.rearm();
    return response;
  }

  /** When the next heartbeat is due: while running with at least one SSE watcher (WebSocket watchers ping instead). */
  heartbeatDueAt(): number | undefined {
    const { stream, config } = this.#deps;
    if (!this.#running() || stream.watcherCounts().sse === 0) return undefined;
    return stream.lastAppendAt + config.HEARTBEAT_INTERVAL_MS;
  }

  /** The stream's next wake-up: a heartbeat, or a watcher's stream to close at its STREAM_MAX_SECONDS. */
  streamDueAt(): number | undefined {
    const heartbeat = this.heartbeatDueAt();
    const watchers = this.#deps.stream.watchersDueAt();
    return heartbeat === undefined ? watchers : watchers === undefined ? heartbeat : Math.min(heartbeat, watchers);
  }

  /**
   * Contract section 24: the checks an alarm due for a pending approval with votes (its reminder,
   * escalation or expiry) reads first, the halts with the policy pointer in one bounded statement
   * (`halts`, which brings the version to the pointer), for `alarm` to re-judge those votes under the
   * version active now; undefined (nothing read) for any other alarm.
   */
  async alarmChecks(now: number): Promise<readonly ActiveHalt[] | "unavailable" | undefined> {
    const phase = this.#phase();
    if (phase?.kind !== "tools") return undefined;
    const due = nextDeadline(this.#calls, phase.turn);
    if (due === undefined || due > now) return undefined;
    const voted = turnCalls(this.#calls, phase.turn).some((c) => c.state === "awaiting_approval" && (c.approval.votes?.length ?? 0) > 0);
    return voted ? this.#deps.halts?.() : undefined;
  }

  /**
   * The alarm fired. Returns true when the run's retention ended (the object deletes it). `halts`: the
   * checks read for it (`alarmChecks`); absent or unavailable, no pending approval is re-judged.
   */
  alarm(now: number, halts?: readonly ActiveHalt[] | "unavailable"): { purge: boolean } {
    const { schedule } = this.#deps;
    let purge = false;
    for (const name of schedule.fired(now)) {
      switch (name) {
        case "retention":
          purge = true;
          break;
        case "calls": {
          const phase = this.#phase();
          if (phase?.kind === "tools") {
            // Contract section 24: votes re-judged under the version active now, then reminders and escalations, before anything expires.
            if (halts !== undefined && halts !== "unavailable") this.#rejudge(phase.turn, now, halts);
            this.#nudge(phase.turn, now);
            // A round of MCP questions past its time closes as cancel, and its follow-up goes out (contract section 21).
            for (const closed of expireQuestions(this.#calls, phase.turn, now)) this.#closeRound(closed.tool_call_id, "expired");
            this.#applyAndAdvance(expireDue(this.#calls, phase.turn, now), true);
          }
          break;
        }
        case "turn":
          this.#driver.kick();
          break;
        case "index":
        case "slack":
        case "rows":
        case "webhooks":
          // The object's own work (index flush, outbox drains, kept row writes), done by the object after this step.
          break;
      }
    }
    const heartbeatAt = this.heartbeatDueAt();
    if (heartbeatAt !== undefined && now >= heartbeatAt) this.append("heartbeat", {});
    this.#deps.stream.sweepWatchers(now);
    if (!purge) schedule.rearm();
    return { purge };
  }

  /** Retention ended: every event deleted, every response ended (the object then deletes the rest). */
  closeStream(): void {
    this.#deps.stream.purge();
  }

  /**
   * Appends one event to the run's stream (nothing after the terminal event)
   * and, for the terminal one, ends the run. The one append path, also for
   * the benchmark's synthetic events.
   */
  append<T extends EventType>(type: T, fields: EventFields<T>, now = Date.now()): StoredEvent | null {
    return this.#appendChecked(type, fields, now);
  }

  /** The effects' path: their fields were checked against the schema where the effect was made (tool-calls.ts's `emit`). */
  #appendChecked(type: EventType, fields: Record<string, unknown>, now = Date.now()): StoredEvent | null {
    if (POLICY_STAMPED.has(type) && this.#deps.policy !== undefined) {
      const { version, hash } = this.#deps.policy.current();
      fields = { ...fields, policy_version: version, policy_hash: hash };
    }
    const event = this.#deps.stream.append(type, fields, now);
    if (event) this.#deps.observer?.appended(event.event, now);
    if (event && this.#deps.stream.terminal && this.#running()) this.#ended(type === "run_completed" ? "completed" : "failed", now);
    return event;
  }

  // ---- the loop --------------------------------------------------------------

  async #drive(): Promise<void> {
    const run = this.#run;
    for (let phase = this.#phase(); phase !== undefined; phase = this.#phase()) {
      this.#driver.iterating();
      if (phase.kind === "thinking") {
        if (Date.now() < phase.ready_at) {
          // The model is still thinking; the alarm resumes the loop, even after eviction.
          this.#deps.schedule.set("turn", phase.ready_at);
          return;
        }
        const abort = new AbortController();
        this.#modelCall = abort;
        const step = await this.#deps.source.next(phase.turn, abort.signal).finally(() => {
          this.#modelCall = undefined;
        });
        if (!this.#running()) return;
        if (step.kind === "failed") {
          this.#fail("model_error", step.message);
          return;
        }
        if (step.kind === "finished") {
          this.#complete();
          return;
        }
        if (step.text !== undefined && step.text !== "") {
          // Redacted where it leaves the engine (contract section 17); the model's conversation keeps the raw text.
          const text = redactText(step.text);
          this.append("assistant_message", { text });
          run.last_text = text;
        }
        if (step.tool_calls.length > 0) await this.#startToolTurn(phase.turn, step.tool_calls);
        else if (step.final) {
          this.#complete();
          return;
        } else this.#nextModelTurn(phase.turn + 1);
        continue;
      }
      await this.#recoverLostDispatches(phase.turn);
      if (!this.#running()) return;
      if (cancelRequested(run) && !hasDispatched(this.#calls, phase.turn)) {
        // Cancelled while a call was in flight, and that call was lost to a restart: the cancel completes now.
        this.#endCancelled();
        return;
      }
      const admitted = advanceAdmission(this.#calls, phase.turn, run.counters, this.#limits(), Date.now());
      this.#apply(admitted);
      this.#shadowAdmission(admitted);
      if (turnDone(this.#calls, phase.turn)) {
        // Every call of the turn ended: their results go back to the model.
        this.#deps.source.toolResults(turnCalls(this.#calls, phase.turn) as Done[]);
        this.#nextModelTurn(phase.turn + 1);
        continue;
      }
      this.#armCallDeadline(phase.turn);
      this.#save();
      return;
    }
  }

  /** Announces every call of the turn and asks every approval at once. */
  async #startToolTurn(turn: number, proposals: ProposedCall[]): Promise<void> {
    const { catalog, config } = this.#deps;
    const listed = [];
    for (const proposed of proposals) {
      const info = await catalog.info(proposed.tool_name);
      // Contract section 23: the tool's identity as listed, which its approval is bound to.
      const toolDigest = await catalog.digest(proposed.tool_name, info);
      listed.push({ proposed, info, digest: await argumentsDigest(proposed.arguments), toolDigest });
    }
    // Contract section 23: a mutation proposed while a halt covers it ends at once; a failed read asks as usual (the checkpoint still guards).
    // Contract section 24: the same statement reads the policy pointer, so the version active now classifies and asks.
    const halts = listed.some(({ proposed }) => parseMcpToolName(proposed.tool_name) !== undefined)
      ? await this.#deps.halts?.()
      : undefined;
    const rules = { TOOL_POLICY: this.#policy().document.tools, MCP_SERVERS: config.MCP_SERVERS };
    // Contract section 24: the shadow version (if any) classifies the same listing beside it.
    const shadow = this.#deps.policy?.shadow?.();
    const shadowRules = shadow === undefined ? undefined : { TOOL_POLICY: shadow.document.tools, MCP_SERVERS: config.MCP_SERVERS };
    const prepared = listed.map(({ proposed, info, digest, toolDigest }) => ({
      proposed,
      tool: classifyTool(proposed.tool_name, info, rules),
      shadowTool: shadowRules === undefined ? undefined : classifyTool(proposed.tool_name, info, shadowRules),
      digest,
      toolDigest,
    }));
    const haltOf = this.#haltCheck(halts === undefined || halts === "unavailable" ? [] : halts);
    const limited = await this.#limitsBeforeAsking(
      prepared.map(({ proposed, tool }) => ({ tool_name: proposed.tool_name, mutating: tool.mutating })),
    );
    if (!this.#running()) return; // cancelled while the tool lists were fetched
    // Taken after the tool listing: a slow listing takes nothing from a person's time to decide.
    const now = Date.now();
    const calls: Proposed[] = prepared.map(({ proposed, tool, digest, toolDigest }, index) => ({
      turn,
      index,
      tool_call_id: proposed.tool_call_id ?? newToolCallId(),
      tool_name: proposed.tool_name,
      arguments: proposed.arguments,
      arguments_digest: digest,
      ...tool,
      ...(toolDigest !== undefined ? { tool_digest: toolDigest } : {}),
      started_at: now,
      state: "proposed",
    }));
    this.#setPhase({ kind: "tools", turn });
    this.#calls.push(...calls);
    this.#run.tool_calls += calls.length;
    const limits = this.#limits();
    for (const [index, call] of calls.entries()) {
      const ids = { approvalId: newApprovalId(), mutationId: newMutationId() };
      // Appended at `now`, the moment their expiry counts from.
      const policy = effectivePolicy(this.#policy().document.tools, call.tool_name);
      const halt = call.mutating ? haltOf(call) : null;
      this.#apply(
        announce(
          this.#calls,
          call,
          shownArguments(call.arguments),
          limits,
          now,
          ids,
          policy,
          halt === "unavailable" ? null : halt,
          limited.get(call.tool_name) ?? null,
        ),
        now,
      );
      armNudges(this.#calls, call.tool_call_id, nudgePolicy(this.#policy().document.tools, call.tool_name), now);
      const shadowTool = prepared[index]?.shadowTool;
      if (shadow !== undefined && shadowTool !== undefined) {
        const covering = haltOf(call);
        const found = { halted: covering !== null && covering !== "unavailable", rateLimited: limited.has(call.tool_name) };
        const active = askVerdict(call, call.tool_name, limits.budget, found);
        const inShadow = askVerdict(shadowTool, call.tool_name, shadow.document.budget, found);
        if (active !== null && inShadow !== null && active !== inShadow) {
          this.#deps.observer?.shadowDiffered?.(
            { version: shadow.version, tool_call_id: call.tool_call_id, tool_name: call.tool_name, check: "ask", active, shadow: inShadow },
            now,
          );
        }
      }
    }
    this.#save();
  }

  /** Contract section 24: the turn's pending approvals meet the version active now (their votes re-counted) at the alarm. */
  #rejudge(turn: number, now: number, halts: readonly ActiveHalt[]): void {
    const { tools, groups } = this.#policy().document;
    const effects = rejudgePending(
      this.#calls,
      turn,
      this.#requester(),
      groups,
      (toolName) => effectivePolicy(tools, toolName),
      this.#limits(),
      now,
      newMutationId,
      this.#haltCheck(halts),
    );
    if (effects.length > 0) this.#applyAndAdvance(effects, false, now);
    else this.#save();
  }

  /**
   * Contract section 24: the reminders and escalations of the turn due at `now`. A reminder of an
   * item shown in Slack is appended and its Slack users eligible by exact id are told directly.
   */
  #nudge(turn: number, now: number): void {
    const due = nudgeDue(
      this.#calls,
      turn,
      now,
      (item) => this.#deps.observer?.shownInSlack?.(item) ?? false,
      (call) => this.#policyOf(call),
    );
    if (due.effects.length === 0 && due.reminded.length === 0) return;
    this.#apply(due.effects, now);
    const { config } = this.#deps;
    const team = /^slack:([TE][A-Z0-9]{1,30}):/.exec(this.#run.requested_by ?? "")?.[1];
    for (const item of due.reminded) {
      const users =
        team === undefined
          ? []
          : slackUsersToRemind({
              policy: item.policy,
              escalated_to: item.escalated_to,
              groups: config.APPROVER_GROUPS,
              requester: this.#requester(),
              slack_approvers: config.SLACK_APPROVERS,
              team,
            });
      this.#deps.observer?.reminded?.(item, users, now);
    }
    this.#save();
  }

  /** The rule in force for a call's approval or its MCP questions: as asked, else the tool's policy now. */
  #policyOf(call: ToolCall): ApprovalPolicy {
    const grant =
      call.state === "awaiting_approval"
        ? call.approval
        : call.state === "dispatched" || call.state === "awaiting_admission"
          ? call.grant
          : undefined;
    return (
      (grant !== undefined && grant !== "automatic" ? grant.policy : undefined) ??
      effectivePolicy(this.#deps.config.TOOL_POLICY, call.tool_name)
    );
  }

  #nextModelTurn(turn: number): void {
    this.#setPhase({ kind: "thinking", turn, ready_at: Date.now() + this.#deps.source.delayMs(turn) });
    this.#save();
  }

  #applyAndAdvance(effects: Effect[], always = false, at?: number): void {
    if (effects.length === 0 && !always) return;
    this.#apply(effects, at);
    this.#save();
    this.#driver.kick();
  }

  /** Appends the events the pure logic decided on, starts the dispatches it admitted and the row work it asked for. */
  #apply(effects: Effect[], at?: number): void {
    for (const effect of effects) {
      switch (effect.kind) {
        case "emit":
          this.#appendChecked(effect.type, effect.fields, at);
          break;
        case "dispatch":
          this.#dispatch(effect.call);
          break;
        case "record_intent":
          this.#pipeline.recordIntent(this.#stamped(effect));
          break;
        case "settle_unsent":
          this.#pipeline.settleUnsent(this.#stamped(effect), effect.reason);
          break;
      }
    }
  }

  /** Sends one admitted call through the pipeline; its result is reported even if the run was cancelled meanwhile. */
  #dispatch(call: Dispatched): void {
    this.#save(); // "dispatched" is on disk before anything leaves
    this.#pipeline.start(call, (decision) => this.#decided(call, decision));
  }

  /** Applies the pipeline's decision, once, only if the call is still in flight. */
  #decided(call: Dispatched, decision: PipelineDecision): void {
    const current = this.#current(call);
    if (current?.state !== "dispatched") return;
    if (decision.kind === "ask") {
      this.#ask(current, decision);
      return;
    }
    this.#applyDecision(current, decision);
    this.#save();
    if (cancelRequested(this.#run) && !hasDispatched(this.#calls, call.turn)) this.#endCancelled();
    else this.#driver.kick();
  }

  #applyDecision(call: Dispatched, decision: Extract<PipelineDecision, { kind: "settle" | "refuse" }>): void {
    const now = Date.now();
    // Questions still open when the call ends (it was lost to a restart while a person decided) can never be answered now.
    this.#questionsEnded(call.tool_call_id, (call.questions ?? []).filter(isOpen), "cancelled", now);
    this.#apply(
      decision.kind === "settle"
        ? settleDispatch(this.#calls, call, decision.outcome, now, decision.settlementLate)
        : refuseDispatch(this.#calls, call, decision.reason, now, {
            tool_digest: decision.tool_digest,
            halt_id: decision.halt_id,
            retry_after_s: decision.retry_after_s,
          }),
    );
  }

  /** Calls marked dispatched that this instance is not running were in flight when the object restarted. */
  async #recoverLostDispatches(turn: number): Promise<void> {
    for (const call of turnCalls(this.#calls, turn)) {
      if (call.state !== "dispatched" || this.#pipeline.isInFlight(call.tool_call_id)) continue;
      const decision = await this.#pipeline.recover(call);
      const current = this.#current(call);
      if (current?.state !== "dispatched" || this.#pipeline.isInFlight(call.tool_call_id)) continue; // handled while we read
      switch (decision.kind) {
        case "wait":
          // Its round waits for people in storage (contract section 21); one that closed while nothing ran is sent now.
          if (!roundOpen(current)) this.#followUp(current, roundResponses(current));
          break;
        case "ask":
          this.#ask(current, decision);
          break;
        case "retry_later":
          // Try again after one storage bound; until then the call stays in flight.
          this.#deps.schedule.set("calls", Date.now() + this.#deps.config.STORAGE_WAIT_MS);
          break;
        case "resume":
          this.#dispatch(current);
          break;
        case "settle":
        case "refuse":
          this.#applyDecision(current, decision);
          break;
      }
    }
  }

  #armCallDeadline(turn: number): void {
    const next = nextDeadline(this.#calls, turn);
    if (next === undefined) this.#deps.schedule.clear("calls");
    else this.#deps.schedule.set("calls", next);
    this.#deps.schedule.rearm();
  }

  #limits(): Limits {
    const { config } = this.#deps;
    const fromTrigger = this.#run.max_tool_calls;
    return {
      ceiling: fromTrigger === null ? config.MAX_TOOL_CALLS : Math.min(config.MAX_TOOL_CALLS, fromTrigger),
      budget: this.#policy().document.budget,
      approvalTimeoutMs: config.APPROVAL_TIMEOUT_MS,
      admissionTimeoutMs: config.ADMISSION_TIMEOUT_MS,
    };
  }

  // ---- the terminal events, each appended from here only ------------------------------

  #complete(): void {
    const run = this.#run;
    this.append("run_completed", { ...(run.last_text !== null ? { text: run.last_text } : {}), tool_calls: run.tool_calls });
  }

  #endCancelled(): void {
    this.append("run_failed", { error: { code: "cancelled", message: "The run was cancelled." } });
  }

  #fail(code: "model_error" | "internal_error", raw: string, log = false): void {
    // A provider's or an exception's message may quote what it was sent: redacted before it leaves.
    const message = redactText(raw);
    if (log) logger.error("run failed", { run_id: this.#run.run_id, code, error: message });
    this.append("run_failed", { error: { code, message } });
  }

  #ended(status: "completed" | "failed", now: number): void {
    this.#run.lifecycle = { status, ended_at: iso(now) };
    this.#save();
    const { schedule, config } = this.#deps;
    schedule.clear("turn");
    schedule.clear("calls");
    schedule.set("retention", now + config.RUN_RETENTION_SECONDS * MS_PER_SECOND);
  }

  // ---- the lifecycle ------------------------------------------------------------------

  #running(): boolean {
    return this.#run.lifecycle.status === "running";
  }

  /** Where the loop stands, or undefined once the run ended. */
  #phase(): Extract<RunLifecycle, { status: "running" }>["phase"] | undefined {
    const { lifecycle } = this.#run;
    return lifecycle.status === "running" ? lifecycle.phase : undefined;
  }

  /** The loop moved on; a run that ended meanwhile stays ended. */
  #setPhase(phase: Extract<RunLifecycle, { status: "running" }>["phase"]): void {
    const { lifecycle } = this.#run;
    if (lifecycle.status === "running") lifecycle.phase = phase;
  }

  #save(): void {
    this.#deps.store.save(this.#run, this.#calls);
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
