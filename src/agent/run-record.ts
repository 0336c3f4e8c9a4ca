// The run's own record, kept by its RunObject: who started it, where its
// agent loop stands, and what the summary route shows. The status is a small
// state machine: "running" → "completed" | "failed", and nothing leaves a
// terminal status (terminal fencing).
import type { ScriptTurn } from "../http/trigger-request";
import type { RunCounters } from "../execution/tool-calls";

export type RunStatus = "running" | "completed" | "failed";

/**
 * Where the agent loop stands between two steps; persisted (the calls as
 * their own rows) so an evicted object resumes where it was.
 *  - thinking: the model is producing turn `turn` (ready at `ready_at` for the scripted provider);
 *  - tools: the calls of turn `turn` are being approved, admitted and run;
 *  - ended: the terminal event was appended.
 */
type RunPhase = { kind: "thinking"; turn: number; ready_at: number } | { kind: "tools"; turn: number } | { kind: "ended" };

export interface RunRecord {
  run_id: string;
  channel_id: string;
  user_id: string;
  /** The principal that triggered it (contract section 18); absent in records written before principals. */
  requested_by?: string;
  /** Set when an adapter triggered it for someone else: that person (also `user_id`). */
  on_behalf_of?: string;
  /**
   * The requester's person (contract section 19: a named token's owner, an
   * Access email, a Slack user's verified email), found at trigger time;
   * null when the requester is nobody (token:root, an ownerless token);
   * absent in records written before it: found from requested_by then.
   */
  requester_person?: string | null;
  delivery_id: string | null;
  /** Where the run came from (absent in records written before it was kept: "api"). */
  source?: RunSource;
  /** The Slack thread of a Slack-started run. */
  slack?: SlackThreadRef;
  max_tool_calls: number | null;
  /** The run's message, redacted and cut (requestPreview); absent in records written before it was kept. */
  request?: string;
  created_at: string;
  ended_at: string | null;
  status: RunStatus;
  phase: RunPhase;
  counters: RunCounters;
  /** Calls the model proposed in the run (run_completed.tool_calls). */
  tool_calls: number;
  last_text: string | null;
  /** Cancel was asked while a dispatched call was in flight; the run ends when it settles. */
  cancel_requested: boolean;
}

interface PendingApproval {
  approval_id: string;
  tool_call_id: string;
  tool_name: string;
  expires_at: string;
}

interface PendingInput {
  tool_call_id: string;
  question: string;
  expires_at: string;
}

export interface RunSummary {
  run_id: string;
  channel_id: string;
  /** The run's requester (StartRunInput.user_id): the Slack app lets this person decide its approvals. */
  user_id?: string;
  /** The run's message, redacted and cut (the runs listing's `request`). */
  request?: string;
  /** The principal that triggered the run (contract section 18). */
  requested_by?: string;
  /** The person an adapter triggered it for. */
  on_behalf_of?: string;
  status: RunStatus;
  last_sequence: number;
  earliest_sequence: number;
  subscribers: number;
  pending_approvals: PendingApproval[];
  pending_inputs: PendingInput[];
  created_at: string;
  ended_at?: string;
  /** Runs started from Slack, while the Slack app is on: posts waiting in the outbox, and posts given up (contract section 14). */
  slack_posts_pending?: number;
  slack_posts_failed?: number;
}

/** Where a run came from: only `slack` runs post to Slack (contract section 14). */
type RunSource = "api" | "slack";

/** The Slack thread a Slack-started run answers in. */
interface SlackThreadRef {
  /** The thread every post goes to: the event's thread_ts, else its ts. */
  thread_ts: string;
  /** The triggering message itself (the working-indicator reaction goes on it). */
  message_ts: string;
  /**
   * The thread's latest earlier run, when the app already ran in this thread:
   * the new run's conversation starts with that run's turns (contract section 14).
   */
  previous_run_id?: string;
  /** The origin the Slack event came to (contract section 13's PUBLIC_URL default): approval messages link to the console there. */
  request_origin?: string;
}

export function isTerminalStatus(status: RunStatus): boolean {
  return status !== "running";
}

/** What the Worker hands a RunObject to start a run (RPC input). */
export interface StartRunInput {
  run_id: string;
  channel_id: string;
  user_id: string;
  /** The trigger's principal (contract section 18). */
  requested_by?: string;
  on_behalf_of?: string;
  /** The requester's person (contract section 19), as the Worker found it. */
  requester_person?: string | null;
  delivery_id: string | null;
  message: string;
  max_tool_calls: number | null;
  script: ScriptTurn[] | null;
  /** Absent means "api". */
  source?: RunSource;
  /** Set exactly when source is "slack"; channel_id is then the Slack channel and user_id the Slack user. */
  slack?: SlackThreadRef;
}

export type CancelResult = { found: false } | { found: true; status: "cancelling" | RunStatus; already_ended: boolean };
