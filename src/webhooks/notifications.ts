// Which run events are webhook notifications (contract section 26), and the
// ids-only body of each: `{"type","timestamp","data"}`. Pure: the run's
// outbox calls it on the append path and stores what it returns. Never an
// argument, a question, an answer, a text or a result: only ids.
import { ulid } from "ulidx";
import type { RunEvent } from "../wire/event-schemas";
import type { WebhookBody, WebhookData, WebhookType } from "../wire/webhooks";

/** Error codes of an executed mutation whose durable outcome is outcome_unknown (contract sections 7 and 8). */
const OUTCOME_KNOWN_ERRORS = new Set(["tool_error", "settlement_timeout"]);

/** A notification: its type and ids. */
export interface Notification {
  type: WebhookType;
  data: WebhookData;
}

/** `msg_<ULID>`: one notification's webhook-id, the same on every attempt. */
export function newMessageId(): string {
  return `msg_${ulid()}`;
}

/** The body of a notification made at `at` (ISO-8601 UTC). */
export function webhookBody(notification: Notification, at: string): string {
  return JSON.stringify({ type: notification.type, timestamp: at, data: notification.data } satisfies WebhookBody);
}

/** The notification an appended event makes, or null. */
export function notificationOf(event: RunEvent): Notification | null {
  const run = { run_id: event.run_id, channel_id: event.channel_id };
  switch (event.type) {
    case "approval_requested":
    case "approval_resolved":
      return {
        type: event.type === "approval_requested" ? "approval.requested" : "approval.resolved",
        data: { ...run, tool_call_id: event.tool_call_id, approval_id: event.approval_id },
      };
    case "human_input_requested":
      return {
        type: "input.requested",
        data: { ...run, tool_call_id: event.tool_call_id, ...(event.input_id === undefined ? {} : { input_id: event.input_id }) },
      };
    case "tool_execution":
      if (
        event.execution_status === "executed" &&
        event.mutation_id !== undefined &&
        event.error !== undefined &&
        !OUTCOME_KNOWN_ERRORS.has(event.error.code)
      )
        return { type: "mutation.outcome_unknown", data: { run_id: event.run_id, mutation_id: event.mutation_id } };
      return null;
    case "run_failed":
      return { type: "run.failed", data: run };
    case "approval_reminded":
      // Contract section 24's reminder (at `remind_before`) of an approval; an MCP question's (input_id) is no approval.
      return event.approval_id === undefined
        ? null
        : { type: "approval.expiring", data: { ...run, tool_call_id: event.tool_call_id, approval_id: event.approval_id } };
    default:
      return null;
  }
}
