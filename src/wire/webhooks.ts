// The webhook vocabulary (contract section 26): the nine notification types
// and the ids-only `data` of each. Shared by the WEBHOOKS setting (which types
// an endpoint takes), the outboxes that build the bodies and the tests.

/** Every notification type, in the contract's order. */
export const WEBHOOK_TYPES = [
  "approval.requested",
  "approval.expiring",
  "approval.resolved",
  "input.requested",
  "mutation.outcome_unknown",
  "run.failed",
  "halt.engaged",
  "halt.released",
  "policy.proposed",
] as const;

export type WebhookType = (typeof WEBHOOK_TYPES)[number];

/** A notification's `data`: ids only, never arguments, text or results. */
export type WebhookData =
  | { run_id: string; channel_id: string; tool_call_id: string; approval_id: string }
  | { run_id: string; channel_id: string; tool_call_id: string; input_id?: string }
  | { run_id: string; mutation_id: string }
  | { run_id: string; channel_id: string }
  | { halt_id: string }
  | { version: number | string };

/** The body every attempt sends: `{"type","timestamp","data"}`, `timestamp` the notification's ISO-8601 UTC time. */
export interface WebhookBody {
  type: WebhookType;
  timestamp: string;
  data: WebhookData;
}
