// One run's events folded into what the console shows (contract sections 4
// and 16): the run's status, one card per tool call whose stage moves only
// forward through the states its events show, and the timeline: each
// assistant message and each call in the order of its first event, the final
// answer once. Pure: no DOM, no fetch, so it is unit-tested
// (test/unit/console-call-cards.test.ts).
import type { EngineEvent, ErrorFacts, ExecutionResult, HiddenValue, NotExecutedReason } from "../../client/types";

type CallStage = "announced" | "waiting_for_approval" | "waiting_for_answer" | "approved" | "answered" | "executed" | "not_executed";

export interface PendingApproval {
  approval_id: string;
  level: "approve" | "confirm";
  description: string;
  /** Redacted by the engine; only shown. The listing types them as any JSON value. */
  arguments: unknown;
  /** What the engine withheld from `arguments` as secrets (contract section 19); absent from older events and listings. */
  hidden?: HiddenValue[];
  expires_at: string;
  /** The server gave the tool `destructiveHint: true` (contract section 21): the card marks it "Destructive". */
  destructive?: boolean;
  /** Contract section 19: distinct persons that must approve (1 from older servers), the approvers patterns (null: the default rule), the votes so far. */
  required: number;
  approvers: string[] | null;
  votes: { by: string; at: string }[];
  /** Contract section 24: a reminder went out (approval_reminded); absent until then. */
  reminded?: true;
  /** Contract section 24: escalated (approval_escalated): these patterns may decide too. Absent until then. */
  escalated_to?: string[];
}

export interface CallCard {
  tool_call_id: string;
  tool_name: string;
  stage: CallStage;
  approval_required: boolean;
  approval?: PendingApproval;
  decision?: {
    decision: "approved" | "denied" | "expired" | "cancelled";
    decided_by?: string;
    reason?: string;
    /** Every person who approved, in order (approval_resolved's `approvals`, else the votes and the decider). */
    approved_by?: string[];
  };
  question?: { text: string; expires_at: string };
  /** An MCP server's questions mid-call (contract section 21), in the order asked; each answered once. */
  form_questions?: AskedFormQuestion[];
  answered_by?: string;
  reason?: NotExecutedReason;
  result?: ExecutionResult;
  error?: ErrorFacts;
  mutation_id?: string;
  completed: boolean;
  duration_ms?: number;
}

/** One question an MCP server asked during a call, with its form's schema, and who answered it how. */
interface AskedFormQuestion {
  input_id: string;
  question: string;
  requested_schema: unknown;
  expires_at: string;
  answered_by?: string;
  action?: "accept" | "decline" | "cancel";
}

/** The section 21 fields of human_input_requested/received, present on an MCP server's question only. */
function formFieldsOf(event: object): { input_id?: string; requested_schema?: unknown; action?: AskedFormQuestion["action"] } {
  const { input_id, requested_schema, action } = event as { input_id?: unknown; requested_schema?: unknown; action?: unknown };
  return {
    ...(typeof input_id === "string" && input_id !== "" ? { input_id } : {}),
    ...(requested_schema !== undefined ? { requested_schema } : {}),
    ...(action === "accept" || action === "decline" || action === "cancel" ? { action } : {}),
  };
}

/** One line of the run's timeline, in event order; a call's entry stands where its first event did. */
type TimelineEntry =
  | { kind: "message"; sequence: number; text: string; final: boolean }
  | { kind: "call"; sequence: number; tool_call_id: string };

/** A run that ended with run_failed(cancelled) is `cancelled`, not `failed`. */
export type RunViewStatus = "running" | "completed" | "failed" | "cancelled";

export interface RunView {
  run_id: string;
  status: RunViewStatus;
  last_sequence: number;
  messages: { sequence: number; text: string }[];
  cards: CallCard[];
  timeline: TimelineEntry[];
  /** Who started the run, from run_started: `requested_by` where the server sends it (contract section 18), else `user_id`. */
  requester?: { by: string; on_behalf_of?: string };
  /** run_completed's text (shown once: as the last message marked final, or as its own final entry). */
  final_text?: string;
  error?: ErrorFacts;
}

export function emptyRun(runId: string): RunView {
  return { run_id: runId, status: "running", last_sequence: 0, messages: [], cards: [], timeline: [] };
}

/** The deny reason of approval_resolved, from servers that send it (contract section 6); older ones do not. */
function reasonOf(event: object): string | undefined {
  const reason = (event as { reason?: unknown }).reason;
  return typeof reason === "string" && reason !== "" ? reason : undefined;
}

/** Every person who approved a call: approval_resolved's `approvals` (contract section 19), else the votes seen and the decider. */
function approvedBy(event: object, card: CallCard): string[] {
  const listed = (event as { approvals?: unknown }).approvals;
  const named = Array.isArray(listed) ? listed.flatMap((v: { by?: unknown }) => (typeof v?.by === "string" ? [v.by] : [])) : [];
  const seen = named.length > 0 ? named : (card.approval?.votes ?? []).map((v) => v.by);
  const last = (event as { decided_by?: unknown }).decided_by;
  return typeof last === "string" && last !== "" && !seen.includes(last) ? [...seen, last] : seen;
}

/** The timeline with run_completed's text shown once: the last message becomes final when it says the same. */
function withFinal(timeline: TimelineEntry[], sequence: number, text: string | undefined): TimelineEntry[] {
  if (text === undefined || text === "") return timeline;
  const last = timeline[timeline.length - 1];
  if (last?.kind === "message" && last.text === text) return [...timeline.slice(0, -1), { ...last, final: true }];
  return [...timeline, { kind: "message", sequence, text, final: true }];
}

/** Folds one event into the view (a new object; the input is not changed). Events at or below last_sequence are ignored. */
export function applyEvent(view: RunView, event: EngineEvent): RunView {
  if (event.sequence <= view.last_sequence) return view;
  const next: RunView = { ...view, last_sequence: event.sequence, cards: view.cards };
  const update = (toolCallId: string, change: (card: CallCard) => CallCard) => {
    next.cards = next.cards.map((c) => (c.tool_call_id === toolCallId ? change(c) : c));
  };
  switch (event.type) {
    case "run_started": {
      const extra = event as { requested_by?: unknown; on_behalf_of?: unknown };
      const by = typeof extra.requested_by === "string" && extra.requested_by !== "" ? extra.requested_by : event.user_id;
      next.requester = { by, ...(typeof extra.on_behalf_of === "string" ? { on_behalf_of: extra.on_behalf_of } : {}) };
      return next;
    }
    case "heartbeat":
      return next;
    case "assistant_message":
      next.messages = [...view.messages, { sequence: event.sequence, text: event.text }];
      next.timeline = [...view.timeline, { kind: "message", sequence: event.sequence, text: event.text, final: false }];
      return next;
    case "tool_started":
      if (view.cards.some((c) => c.tool_call_id === event.tool_call_id)) return next;
      next.timeline = [...view.timeline, { kind: "call", sequence: event.sequence, tool_call_id: event.tool_call_id }];
      next.cards = [
        ...view.cards,
        {
          tool_call_id: event.tool_call_id,
          tool_name: event.tool_name,
          stage: "announced",
          approval_required: event.approval_required,
          completed: false,
        },
      ];
      return next;
    case "approval_requested":
      update(event.tool_call_id, (c) => ({
        ...c,
        stage: "waiting_for_approval",
        approval: {
          approval_id: event.approval_id,
          level: event.level,
          description: event.description,
          arguments: event.arguments,
          hidden: event.hidden ?? [],
          expires_at: event.expires_at,
          ...(event.annotations?.destructiveHint === true ? { destructive: true } : {}),
          required: event.required ?? 1,
          approvers: event.approvers ?? null,
          votes: [],
        },
      }));
      return next;
    case "approval_vote":
      update(event.tool_call_id, (c) =>
        c.approval ? { ...c, approval: { ...c.approval, votes: [...c.approval.votes, { by: event.decided_by, at: event.at }] } } : c,
      );
      return next;
    case "approval_reminded":
      if (event.approval_id !== undefined)
        update(event.tool_call_id, (c) => (c.approval ? { ...c, approval: { ...c.approval, reminded: true } } : c));
      return next;
    case "approval_escalated":
      if (event.approval_id !== undefined)
        update(event.tool_call_id, (c) => (c.approval ? { ...c, approval: { ...c.approval, escalated_to: [...event.escalated_to] } } : c));
      return next;
    case "approval_resolved":
      update(event.tool_call_id, (c) => ({
        ...c,
        stage: event.decision === "approved" ? "approved" : c.stage,
        decision: {
          decision: event.decision,
          decided_by: event.decided_by,
          reason: reasonOf(event),
          ...(event.decision === "approved" ? { approved_by: approvedBy(event, c) } : {}),
        },
      }));
      return next;
    case "tool_execution_started":
      return next; // approved already; nothing new to show until the terminal decision
    case "human_input_requested": {
      const form = formFieldsOf(event);
      if (form.input_id !== undefined && form.requested_schema !== undefined) {
        const asked: AskedFormQuestion = {
          input_id: form.input_id,
          question: event.question,
          requested_schema: form.requested_schema,
          expires_at: event.expires_at,
        };
        update(event.tool_call_id, (c) =>
          c.form_questions?.some((q) => q.input_id === asked.input_id)
            ? c
            : { ...c, stage: "waiting_for_answer", form_questions: [...(c.form_questions ?? []), asked] },
        );
        return next;
      }
      update(event.tool_call_id, (c) => ({
        ...c,
        stage: "waiting_for_answer",
        question: { text: event.question, expires_at: event.expires_at },
      }));
      return next;
    }
    case "human_input_received": {
      const form = formFieldsOf(event);
      if (form.input_id !== undefined) {
        const answered = { answered_by: event.answered_by, ...(form.action ? { action: form.action } : {}) };
        update(event.tool_call_id, (c) => {
          const questions = (c.form_questions ?? []).map((q) => (q.input_id === form.input_id ? { ...q, ...answered } : q));
          const waiting = questions.some((q) => q.answered_by === undefined);
          return { ...c, form_questions: questions, stage: waiting ? c.stage : "answered", answered_by: event.answered_by };
        });
        return next;
      }
      update(event.tool_call_id, (c) => ({ ...c, stage: "answered", answered_by: event.answered_by }));
      return next;
    }
    case "tool_execution":
      update(event.tool_call_id, (c) => ({
        ...c,
        stage: event.execution_status,
        reason: event.reason,
        result: event.result,
        error: event.error,
        mutation_id: event.mutation_id,
      }));
      return next;
    case "tool_completed":
      update(event.tool_call_id, (c) => ({ ...c, completed: true, duration_ms: event.duration_ms }));
      return next;
    case "run_completed":
      next.status = "completed";
      next.final_text = event.text;
      next.timeline = withFinal(view.timeline, event.sequence, event.text);
      return next;
    case "run_failed":
      next.status = event.error.code === "cancelled" ? "cancelled" : "failed";
      next.error = event.error;
      return next;
    default: {
      // Exhaustive at compile time; an event type from a newer server changes nothing shown.
      const unknown: never = event;
      void unknown;
      return next;
    }
  }
}

/** Whole seconds until `expiresAt`, never below 0. */
export function secondsLeft(expiresAt: string, now: number): number {
  return Math.max(0, Math.ceil((Date.parse(expiresAt) - now) / 1_000));
}

/** "4m 05s", "12s", "expired". */
export function formatTimeLeft(seconds: number): string {
  if (seconds <= 0) return "expired";
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  return m > 0 ? `${m}m ${String(s).padStart(2, "0")}s` : `${s}s`;
}
