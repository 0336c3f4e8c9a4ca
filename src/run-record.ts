// The run's own record, kept by its RunObject: who started it, where it is in
// its lifecycle, and what the summary route shows. The status is a small
// state machine: "running" → "completed" | "failed", and nothing leaves a
// terminal status (terminal fencing).
export type RunStatus = "running" | "completed" | "failed";

/** Where the agent loop stands between two steps; persisted so an eviction resumes it. */
export type RunPhase =
  | { kind: "thinking"; turn: number; ready_at: number }
  | { kind: "ended" };

export interface RunRecord {
  run_id: string;
  channel_id: string;
  user_id: string;
  delivery_id: string | null;
  max_tool_calls: number | null;
  created_at: string;
  ended_at: string | null;
  status: RunStatus;
  phase: RunPhase;
  tool_calls: number;
  last_text: string | null;
}

export interface RunSummary {
  run_id: string;
  channel_id: string;
  status: RunStatus;
  last_sequence: number;
  earliest_sequence: number;
  subscribers: number;
  pending_approvals: unknown[];
  pending_inputs: unknown[];
  created_at: string;
  ended_at?: string;
}

export function isTerminalStatus(status: RunStatus): boolean {
  return status !== "running";
}
