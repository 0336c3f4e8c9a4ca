// The run's own record, kept by its RunObject: who started it, where its
// agent loop stands, and what the summary route shows. Its lifecycle is one
// discriminated union: "running" (with the loop's phase and whether a cancel
// waits on a call in flight) → "completed" | "failed" (with when it ended),
// and nothing leaves a terminal status (terminal fencing).
import type { ScriptTurn } from "../http/trigger-request";
import type { RunCounters } from "../execution/tool-calls";
import type { RunStatus } from "../wire/run-protocol";

export type { CancelResult } from "../wire/run-protocol";
/** GET /runs/{run_id}'s answer, declared once on the wire (src/wire/run-summary.ts). */
export type { RunSummary } from "../wire/run-summary";

/**
 * Where the agent loop of a running run stands between two steps; persisted
 * (the calls as their own rows) so an evicted object resumes where it was.
 *  - thinking: the model is producing turn `turn` (ready at `ready_at` for the scripted provider);
 *  - tools: the calls of turn `turn` are being approved, admitted and run.
 */
type RunPhase = { kind: "thinking"; turn: number; ready_at: number } | { kind: "tools"; turn: number };

/**
 * The run's lifecycle. While running: the loop's phase, and whether a cancel
 * was asked while a dispatched call was in flight (the run ends when it
 * settles). Once ended (the terminal event was appended): how, and when.
 */
export type RunLifecycle =
  | { status: "running"; phase: RunPhase; cancel_requested: boolean }
  | { status: "completed" | "failed"; ended_at: string };

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
  /** The on_behalf_of's person (contract section 19), found at trigger time; absent: read from its text then. */
  on_behalf_of_person?: string;
  delivery_id: string | null;
  /** Where the run came from (absent in records written before it was kept: "api"). */
  source?: RunSource;
  /** The Slack thread of a Slack-started run. */
  slack?: SlackThreadRef;
  max_tool_calls: number | null;
  /** The run's message, redacted and cut (requestPreview); absent in records written before it was kept. */
  request?: string;
  created_at: string;
  lifecycle: RunLifecycle;
  counters: RunCounters;
  /** Calls the model proposed in the run (run_completed.tool_calls). */
  tool_calls: number;
  last_text: string | null;
}

/** A record as written before the lifecycle was one union: four fields for it, side by side. */
type LegacyLifecycleFields = {
  ended_at?: string | null;
  status?: RunStatus;
  phase?: RunPhase | { kind: "ended" };
  cancel_requested?: boolean;
};

/** A stored record, read back: one written before `lifecycle` existed gets it from its four old fields. */
export function storedRunRecord(stored: RunRecord | (Omit<RunRecord, "lifecycle"> & LegacyLifecycleFields)): RunRecord {
  if ("lifecycle" in stored && stored.lifecycle !== undefined) return stored;
  const { ended_at, status, phase, cancel_requested, ...rest } = stored as Omit<RunRecord, "lifecycle"> & LegacyLifecycleFields;
  const lifecycle: RunLifecycle =
    status === "completed" || status === "failed"
      ? { status, ended_at: ended_at ?? rest.created_at }
      : {
          status: "running",
          phase: phase && phase.kind !== "ended" ? phase : { kind: "thinking", turn: 0, ready_at: 0 },
          cancel_requested: cancel_requested ?? false,
        };
  return { ...rest, lifecycle };
}

/** Whether a cancel waits on a call in flight (only while running). */
export function cancelRequested(run: Pick<RunRecord, "lifecycle">): boolean {
  return run.lifecycle.status === "running" && run.lifecycle.cancel_requested;
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
  /** With Slack installations (contract section 26): the installation the run was started in; it posts with its token. */
  installation_id?: string;
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
  /** The on_behalf_of's person (contract section 19), as the Worker found it. */
  on_behalf_of_person?: string;
  delivery_id: string | null;
  message: string;
  max_tool_calls: number | null;
  script: ScriptTurn[] | null;
  /** Absent means "api". */
  source?: RunSource;
  /** Set exactly when source is "slack"; channel_id is then the Slack channel and user_id the Slack user. */
  slack?: SlackThreadRef;
}

/** A new run's record: running, thinking about turn 0 from `readyAt`, nothing counted yet; `request` is the message's preview. */
export function newRunRecord(input: StartRunInput, now: number, readyAt: number, request: string): RunRecord {
  return {
    run_id: input.run_id,
    channel_id: input.channel_id,
    user_id: input.user_id,
    ...(input.requested_by !== undefined ? { requested_by: input.requested_by } : {}),
    ...(input.on_behalf_of !== undefined ? { on_behalf_of: input.on_behalf_of } : {}),
    ...(input.requester_person !== undefined ? { requester_person: input.requester_person } : {}),
    ...(input.on_behalf_of_person !== undefined ? { on_behalf_of_person: input.on_behalf_of_person } : {}),
    delivery_id: input.delivery_id,
    source: input.source ?? "api",
    ...(input.slack ? { slack: input.slack } : {}),
    max_tool_calls: input.max_tool_calls,
    request,
    created_at: new Date(now).toISOString(),
    lifecycle: { status: "running", phase: { kind: "thinking", turn: 0, ready_at: readyAt }, cancel_requested: false },
    counters: { admitted: 0, used: {} },
    tool_calls: 0,
    last_text: null,
  };
}
