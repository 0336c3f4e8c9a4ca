// What the Slack app posts for each event of a Slack-started run (contract
// section 14): a pure function from one appended event and
// a small memory of the run so far to zero or more outbox items, in order.
// The event is the wire's typed RunEvent (src/wire/event-schemas.ts), handed
// over by the append path: nothing is parsed again here.
// The memory is what the next event needs: the shown approvals (to update
// them without buttons), the questions asked, the calls a person or the
// policy approved, and the last assistant text (so the final text is not
// posted twice). It is plain JSON, persisted by the outbox beside its items.
import type { RunEvent } from "../wire/event-schemas";
import {
  type ApprovalView,
  approvalEscalated,
  approvalRequest,
  approvalResolved,
  argumentsPreview,
  assistantText,
  inputAnswered,
  inputRequest,
  mutationFailed,
  mutationNotExecuted,
  mutationOutcomeUnknown,
  mutationSucceeded,
  type RenderedMessage,
  reminderDirect,
  runFailed,
} from "./blocks";
import { formFields } from "../client/requested-form";
import { formQuestionAnswered, formQuestionRequest, type FormQuestionView } from "./question-form";

/** One thing the outbox sends, in the run's thread. */
export type OutboxItem =
  /** chat.postMessage; `key` names a post a later update needs the ts of. */
  | { kind: "post"; key?: string; message: RenderedMessage }
  /** chat.update of the post named `ref`. */
  | { kind: "update"; ref: string; message: RenderedMessage }
  /** reactions.add on the triggering message (the working indicator). */
  | { kind: "reaction"; name: string }
  /** Contract section 24: a direct message to one Slack user of the installation (conversations.open, then chat.postMessage). */
  | { kind: "direct"; user: string; message: RenderedMessage };

export interface PostsMemory {
  approvals: Record<string, ApprovalView>;
  questions: Record<string, string>;
  /** An MCP server's questions (contract section 21) by `input_id`: their text, for the answered form. Absent in older memory. */
  form_questions?: Record<string, string>;
  /** The same questions' messages as shown, so a reminder or an escalation can show them again (contract section 24). */
  form_views?: Record<string, FormQuestionView>;
  /** tool_call_ids approved by a person or automatically (tool_started approval_required: false). */
  approved_calls: string[];
  last_assistant_text: string | null;
  /** The origin the console is reached at (PUBLIC_URL, else the Slack request's origin): approval messages link to it. */
  console_origin?: string;
}

export const emptyMemory = (): PostsMemory => ({ approvals: {}, questions: {}, approved_calls: [], last_assistant_text: null });

/**
 * An approval in the console: its run's page, scrolled to the approval (the console's route
 * `#/runs/<run_id>/approvals/<approval_id>`, src/console/app/router.ts).
 */
function consoleApprovalUrl(origin: string, runId: string, approvalId: string): string {
  return `${origin}/console#/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(approvalId)}`;
}

/** The reaction put on the triggering message as soon as the run starts, and the ones at its end. */
const WORKING_REACTION = "eyes";
const DONE_REACTION = "white_check_mark";
const FAILED_REACTION = "x";
/** Transport errors after dispatch: the durable outcome is outcome_unknown (contract sections 7 and 8). */
const OUTCOME_UNKNOWN_ERROR_CODES = new Set(["transport_timeout", "transport_error"]);
/** Reasons already shown by the approval message's own update: no second post. */
const SHOWN_BY_APPROVAL_UPDATE = new Set(["denied"]);

export interface PostsForEvent {
  items: OutboxItem[];
  memory: PostsMemory;
}

/** What the host says about an event beyond the event itself. */
export interface PostsContext {
  /** The Slack user ids the tool's approval policy names (src/slack/approver-mentions.ts). */
  approversOf?: (toolName: string) => string[];
  /** The Slack user ids patterns name by exact id, groups expanded (an escalation's `escalated_to`, contract section 24). */
  slackUsersNamed?: (patterns: readonly string[]) => string[];
}

/** The items one event adds to the outbox; `memory` is not mutated. */
export function postsForEvent(event: RunEvent, memory: PostsMemory, context: PostsContext = {}): PostsForEvent {
  switch (event.type) {
    // Announcements, heartbeats and the per-call bookkeeping never post: the same memory comes back (no write).
    case "tool_execution_started":
    case "tool_completed":
    case "heartbeat":
      return { items: [], memory };
  }
  const next: PostsMemory = structuredClone(memory);
  switch (event.type) {
    case "run_started":
      return { items: [{ kind: "reaction", name: WORKING_REACTION }], memory: next };
    case "assistant_message": {
      if (event.text.trim() === "") return { items: [], memory: next };
      next.last_assistant_text = event.text;
      return { items: [{ kind: "post", message: assistantText(event.text) }], memory: next };
    }
    case "tool_started":
      if (!event.approval_required) next.approved_calls.push(event.tool_call_id);
      return { items: [], memory: next };
    case "approval_requested": {
      const view: ApprovalView = {
        run_id: event.run_id,
        approval_id: event.approval_id,
        tool_name: event.tool_name,
        level: event.level,
        ...argumentsPreview(event.arguments),
        hidden: (event.hidden ?? []).map((h) => ({ path: h.path, chars: h.chars })),
        approver_mentions: context.approversOf?.(event.tool_name) ?? [],
        ...(next.console_origin === undefined
          ? {}
          : { console_url: consoleApprovalUrl(next.console_origin, event.run_id, event.approval_id) }),
        expires_at: event.expires_at,
        ...(event.annotations?.destructiveHint === true ? { destructive: true } : {}),
        ...(event.required !== undefined && event.required > 1 ? { required: event.required, votes: [] } : {}),
      };
      next.approvals[event.approval_id] = view;
      return { items: [{ kind: "post", key: approvalKey(event.approval_id), message: approvalRequest(view) }], memory: next };
    }
    case "approval_vote": {
      // Contract section 19: each vote updates the message ("1 of 2: <@U…>") and keeps its buttons.
      const view = next.approvals[event.approval_id];
      if (!view) return { items: [], memory: next };
      view.votes = [...(view.votes ?? []), event.decided_by];
      return { items: [{ kind: "update", ref: approvalKey(event.approval_id), message: approvalRequest(view) }], memory: next };
    }
    case "approval_resolved": {
      if (event.decision === "approved") next.approved_calls.push(event.tool_call_id);
      const view = next.approvals[event.approval_id];
      if (!view) return { items: [], memory: next };
      return {
        items: [
          {
            kind: "update",
            ref: approvalKey(event.approval_id),
            message: approvalResolved(view, event.decision, event.decided_by, event.reason),
          },
        ],
        memory: next,
      };
    }
    case "human_input_requested":
      if (event.input_id !== undefined && event.requested_schema !== undefined) {
        next.form_questions = { ...next.form_questions, [event.input_id]: event.question };
        const view = {
          run_id: event.run_id,
          tool_call_id: event.tool_call_id,
          input_id: event.input_id,
          question: event.question,
          expires_at: event.expires_at,
          answerable: formFields(event.requested_schema) !== null,
        };
        next.form_views = { ...next.form_views, [event.input_id]: view };
        return { items: [{ kind: "post", key: inputKey(event.input_id), message: formQuestionRequest(view) }], memory: next };
      }
      next.questions[event.tool_call_id] = event.question;
      return {
        items: [
          {
            kind: "post",
            key: inputKey(event.tool_call_id),
            message: inputRequest(event.run_id, event.tool_call_id, event.question, event.expires_at),
          },
        ],
        memory: next,
      };
    case "approval_reminded":
    case "approval_escalated":
      return { items: nudgeItems(event, next, context), memory: next };
    case "human_input_received": {
      const formQuestion = event.input_id === undefined ? undefined : next.form_questions?.[event.input_id];
      if (event.input_id !== undefined && formQuestion !== undefined) {
        const message = formQuestionAnswered(formQuestion, event.answered_by, event.action);
        return { items: [{ kind: "update", ref: inputKey(event.input_id), message }], memory: next };
      }
      const question = next.questions[event.tool_call_id] ?? "";
      return {
        items: [{ kind: "update", ref: inputKey(event.tool_call_id), message: inputAnswered(question, event.answered_by) }],
        memory: next,
      };
    }
    case "tool_execution":
      return { items: executionItems(event, next), memory: next };
    case "run_completed": {
      const items: OutboxItem[] = [];
      const text = event.text?.trim() ? event.text : undefined;
      if (text !== undefined && text !== next.last_assistant_text) items.push({ kind: "post", message: assistantText(text) });
      items.push({ kind: "reaction", name: DONE_REACTION });
      return { items, memory: next };
    }
    case "run_failed":
      return {
        items: [
          { kind: "post", message: runFailed(event.error.code, event.error.message) },
          { kind: "reaction", name: FAILED_REACTION },
        ],
        memory: next,
      };
  }
}

type NudgeEvent = Extract<RunEvent, { type: "approval_reminded" | "approval_escalated" }>;

/**
 * Contract section 24: a reminder updates the waiting message to say how long is left; an
 * escalation updates it to mention who it went to, and posts in the thread so they are notified
 * (an edited message notifies nobody). `memory` is the next memory, updated in place.
 */
function nudgeItems(event: NudgeEvent, memory: PostsMemory, context: PostsContext): OutboxItem[] {
  const nudge =
    event.type === "approval_reminded"
      ? { reminded_at: event.at }
      : { escalated_mentions: context.slackUsersNamed?.(event.escalated_to) ?? [] };
  if (event.approval_id !== undefined) {
    const view = memory.approvals[event.approval_id];
    if (!view) return [];
    Object.assign(view, nudge);
    const update: OutboxItem = { kind: "update", ref: approvalKey(event.approval_id), message: approvalRequest(view) };
    return event.type === "approval_escalated" ? [update, { kind: "post", message: approvalEscalated(view) }] : [update];
  }
  const form = event.input_id === undefined ? undefined : memory.form_views?.[event.input_id];
  if (event.input_id === undefined || form === undefined) return [];
  Object.assign(form, nudge);
  return [{ kind: "update", ref: inputKey(event.input_id), message: formQuestionRequest(form) }];
}

/**
 * Contract section 24: the direct messages of one reminder, one per Slack user told (the caller
 * chose them: eligible by exact id, of the run's installation), naming where it waits and how long is left.
 */
export function reminderDirects(
  memory: PostsMemory,
  reminded: { tool_name: string; approval_id?: string; input_id?: string },
  users: readonly string[],
  channelId: string,
  remindedAt: string,
): OutboxItem[] {
  const approval = reminded.approval_id === undefined ? undefined : memory.approvals[reminded.approval_id];
  const form = reminded.input_id === undefined ? undefined : memory.form_views?.[reminded.input_id];
  const expiresAt = approval?.expires_at ?? form?.expires_at;
  if (expiresAt === undefined) return [];
  const message = reminderDirect({
    what: approval !== undefined ? "approval" : "question",
    tool_name: reminded.tool_name,
    channel_id: channelId,
    expires_at: expiresAt,
    reminded_at: remindedAt,
    ...(approval?.console_url !== undefined ? { console_url: approval.console_url } : {}),
  });
  return users.map((user) => ({ kind: "direct", user, message }));
}

type ExecutionEvent = Extract<RunEvent, { type: "tool_execution" }>;

/** How an approved call ended; calls nobody approved (denied, not in budget) were already told or never asked. */
function executionItems(event: ExecutionEvent, memory: PostsMemory): OutboxItem[] {
  if (event.tool_name === "human__ask") return [];
  const approved = memory.approved_calls.includes(event.tool_call_id);
  if (event.execution_status === "not_executed") {
    const reason = event.reason ?? "unknown";
    if (!approved && reason !== "not_in_budget") return [];
    if (SHOWN_BY_APPROVAL_UPDATE.has(reason)) return [];
    return [{ kind: "post", message: mutationNotExecuted(event.tool_name, reason) }];
  }
  if (event.error) {
    if (event.mutation_id !== undefined && OUTCOME_UNKNOWN_ERROR_CODES.has(event.error.code)) {
      return [{ kind: "post", message: mutationOutcomeUnknown(event.tool_name, event.mutation_id, event.error.code) }];
    }
    return [{ kind: "post", message: mutationFailed(event.tool_name, event.error.code) }];
  }
  return event.mutation_id !== undefined ? [{ kind: "post", message: mutationSucceeded(event.tool_name) }] : [];
}

const approvalKey = (approvalId: string) => `approval:${approvalId}`;
const inputKey = (toolCallId: string) => `input:${toolCallId}`;
