// The run's event types and the envelope every event carries (contract section 4).
export const PROTOCOL_VERSION = "v2";

const TERMINAL_EVENT_TYPES = ["run_completed", "run_failed"] as const;

export type EventType =
  | "run_started"
  | "assistant_message"
  | "tool_started"
  | "approval_requested"
  | "approval_vote"
  | "approval_resolved"
  | "approval_reminded"
  | "approval_escalated"
  | "tool_execution_started"
  | "human_input_requested"
  | "human_input_received"
  | "tool_execution"
  | "tool_completed"
  | "heartbeat"
  | "run_completed"
  | "run_failed";

/** One stored event: its sequence, type and the exact JSON that was sent. */
export interface StoredEvent {
  sequence: number;
  type: EventType;
  json: string;
}

export function isTerminalEventType(type: string): boolean {
  return (TERMINAL_EVENT_TYPES as readonly string[]).includes(type);
}
