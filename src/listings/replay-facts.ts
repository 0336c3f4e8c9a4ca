// What the runs index keeps of one proposed call for policy replay (contract
// section 24): the facts every check of a candidate policy needs (who asked,
// what the tool is as the classification rule reads it, the digests, the
// verdict at asking, the decisions and the checkpoint), read from the run's
// own call record when an event of the call is appended. Pure: the run's
// observer (src/agent/run-outputs.ts) marks what this returns, and the index
// (src/listings/run-index.ts) writes it to D1 (migration 0034) from the
// object's alarm, with the rest of the index.
import { z } from "zod";
import type { Requester } from "../policy/approval-policy";
import { limitKey } from "../policy/mutation-limits";
import { personOf } from "../policy/persons";
import { approvalOf, HUMAN_ASK_TOOL, type ToolCall } from "../execution/tool-calls";
import type { RunEvent } from "../wire/event-schemas";

/** The `ask` verdicts of contract section 24. */
const ASK_VERDICTS = ["approve", "confirm", "automatic", "not_in_budget", "rate_limited", "halted"] as const;
/** The `checkpoint` verdicts of contract section 24. */
const CHECKPOINT_VERDICTS = ["allowed", "rate_limited", "budget_exhausted"] as const;

/** One call's row of policy_replay_calls, as a mark carries it (later marks of the call add what happened since). */
export const replayCallSchema = z
  .object({
    run_id: z.string(),
    tool_call_id: z.string(),
    proposed_at: z.string(),
    tool_name: z.string(),
    channel_id: z.string(),
    requested_by: z.string(),
    requester_person: z.string().nullable(),
    on_behalf_of: z.string().optional(),
    on_behalf_of_person: z.string().optional(),
    limit_key: z.string(),
    level: z.enum(["approve", "confirm"]).nullable(),
    mutating: z.boolean(),
    trusted_read_only: z.boolean(),
    destructive_hint: z.boolean(),
    tool_digest: z.string().optional(),
    arguments_digest: z.string(),
    ask: z.enum(ASK_VERDICTS),
    halt_id: z.string().optional(),
    approval_id: z.string().optional(),
    approval_status: z.enum(["pending", "approved", "denied", "expired", "cancelled"]).optional(),
    budget_used: z.number().int().min(0).optional(),
    checkpoint: z.enum(CHECKPOINT_VERDICTS).optional(),
    checkpoint_at: z.string().optional(),
  })
  .strip();
export type ReplayCall = z.output<typeof replayCallSchema>;

/** A call's facts as it was proposed: the first mark's stand (the row's INSERT keeps them too; later marks only add). */
export const REPLAY_PROPOSAL_FACTS = [
  "proposed_at",
  "level",
  "mutating",
  "trusted_read_only",
  "destructive_hint",
  "tool_digest",
  "arguments_digest",
  "ask",
] as const;

/** One decision on the call's approval: each counted approve in order, then the deny that ended it. */
export const replayVoteSchema = z
  .object({
    run_id: z.string(),
    tool_call_id: z.string(),
    n: z.number().int().min(1),
    decision: z.enum(["approve", "deny"]),
    principal: z.string(),
    person: z.string().nullable(),
    at: z.string(),
  })
  .strip();
export type ReplayVote = z.output<typeof replayVoteSchema>;

/** What the observer knows beside the call record. */
export interface ReplayContext {
  run_id: string;
  channel_id: string;
  requester: Requester;
  /** The server's readOnlyHint counts (MCP_SERVERS.<server>.trust_annotations). */
  trusted: boolean;
  /** The run's admitted mutations of this call's tool so far (RunCounters.used). */
  used: number;
}

type Approval = {
  approval_id: string;
  level: "approve" | "confirm";
  decision?: string;
  votes?: { by: string; person: string; at: string }[];
  decided_by?: string;
};

/** Reasons a call ends with before anyone is asked (contract section 4: "refused before asking"). */
const REFUSED_AT_ASKING = new Set(["not_in_budget", "rate_limited", "halted"]);

/** The verdict at asking, read back from the record: its approval's level, a refusal before asking, else automatic. */
function askOf(call: ToolCall, approval: Approval | undefined): ReplayCall["ask"] {
  if (approval !== undefined) return approval.level;
  if (call.state === "done" && !call.approved && call.reason !== undefined && REFUSED_AT_ASKING.has(call.reason)) {
    return call.reason as "not_in_budget" | "rate_limited" | "halted";
  }
  return "automatic";
}

/**
 * The call's row for the event just appended, or null for a call replay does
 * not judge (`human__ask`, which no policy governs) or an event that changes
 * nothing replay reads.
 */
export function replayCallOf(event: RunEvent, at: string, call: ToolCall | undefined, context: ReplayContext): ReplayCall | null {
  if (call === undefined || call.kind !== "mcp" || call.tool_name === HUMAN_ASK_TOOL) return null;
  const approval = approvalOf(call);
  const ask = askOf(call, approval);
  const { requester } = context;
  // The row's key for `principal` limits, as the run gives it to its mutation rows (src/agent/run-engine.ts).
  const rowPerson = requester.on_behalf_of !== undefined ? (requester.on_behalf_of_person ?? null) : requester.person;
  const row: ReplayCall = {
    run_id: context.run_id,
    tool_call_id: call.tool_call_id,
    proposed_at: new Date(call.started_at).toISOString(),
    tool_name: call.tool_name,
    channel_id: context.channel_id,
    requested_by: requester.principal_id,
    requester_person: requester.person,
    ...(requester.on_behalf_of !== undefined ? { on_behalf_of: requester.on_behalf_of } : {}),
    ...(typeof requester.on_behalf_of_person === "string" ? { on_behalf_of_person: requester.on_behalf_of_person } : {}),
    limit_key: limitKey(rowPerson, requester.principal_id),
    level: call.level,
    mutating: call.mutating,
    trusted_read_only: context.trusted && call.annotations?.readOnlyHint === true,
    destructive_hint: call.annotations?.destructiveHint === true,
    ...(call.tool_digest !== undefined ? { tool_digest: call.tool_digest } : {}),
    arguments_digest: call.arguments_digest,
    ask,
    ...(ask === "halted" && event.type === "tool_execution" && event.halt_id !== undefined ? { halt_id: event.halt_id } : {}),
    ...(approval !== undefined ? { approval_id: approval.approval_id, approval_status: approvalStatus(approval) } : {}),
  };
  if (event.type === "tool_execution" && call.mutating && !REFUSED_AT_ASKING.has(ask)) {
    const checkpoint = checkpointOf(event);
    if (checkpoint !== undefined) {
      row.checkpoint = checkpoint;
      // Admission counted this call already unless the budget refused it.
      row.budget_used = Math.max(0, checkpoint === "budget_exhausted" ? context.used : context.used - 1);
      if (checkpoint !== "allowed") row.checkpoint_at = at;
    }
  }
  return row;
}

function approvalStatus(approval: Approval): NonNullable<ReplayCall["approval_status"]> {
  const d = approval.decision;
  return d === "approved" || d === "denied" || d === "expired" || d === "cancelled" ? d : "pending";
}

/** The recorded checkpoint of a mutation's terminal event: sent (allowed), or refused by a limit or the budget. */
function checkpointOf(event: Extract<RunEvent, { type: "tool_execution" }>): ReplayCall["checkpoint"] {
  if (event.execution_status === "executed") return "allowed";
  if (event.reason === "rate_limited") return "rate_limited";
  if (event.reason === "budget_exhausted") return "budget_exhausted";
  return undefined;
}

/**
 * The decisions recorded on the call's approval so far: each counted approve
 * (the record's votes, with the person each counted for), then a deny that
 * ended it (its decider's proven person read from the id alone).
 */
export function replayVotesOf(call: ToolCall | undefined, runId: string, at: string): ReplayVote[] {
  if (call === undefined || call.kind !== "mcp") return [];
  const approval = approvalOf(call);
  if (approval === undefined) return [];
  const votes: ReplayVote[] = (approval.votes ?? []).map((v, i) => ({
    run_id: runId,
    tool_call_id: call.tool_call_id,
    n: i + 1,
    decision: "approve",
    principal: v.by,
    person: v.person === v.by && personOf(v.by) === null ? null : v.person,
    at: v.at,
  }));
  if (approval.decision === "denied" && approval.decided_by !== undefined) {
    votes.push({
      run_id: runId,
      tool_call_id: call.tool_call_id,
      n: votes.length + 1,
      decision: "deny",
      principal: approval.decided_by,
      person: personOf(approval.decided_by),
      at,
    });
  }
  return votes;
}

/** The events after which replay's row of the call changes. */
export const REPLAY_EVENT_TYPES: ReadonlySet<RunEvent["type"]> = new Set([
  "tool_started",
  "approval_requested",
  "approval_vote",
  "approval_resolved",
  "tool_execution",
]);
