// Reminders and escalation of what waits for a person (contract section 24),
// as pure transitions over the run's call records, like tool-calls.ts and
// mcp-rounds.ts: when an approval is asked (or its call's MCP questions),
// `nudgesOf` sets when it is reminded (`expires_at - remind_before`) and
// escalated (`escalate_after` after it was asked); at the run's alarm,
// `nudgeDue` appends what is due. A reminder is appended only for an item
// shown in Slack (section 14's external-channel rule: the caller says which),
// and marked done either way, so it never fires twice. An escalation is
// recorded on the item (it stands under later versions of the policy) and
// widens who may decide through the one verdict of src/policy/approval-policy.ts.
// Expiry stays its own outcome: nothing here fires at or after `expires_at`.
import type { NudgePolicy } from "../policy/approval-policy";
import type { EventFields } from "../wire/event-schemas";
import type { ApprovalPolicy } from "../wire/run-protocol";
import { type Effect, isOpen, type Nudges, turnCalls, type ToolCall } from "./tool-calls";

/** What a reminder was for: the approval, or one MCP question of the call, and the policy that names who is told. */
export interface Reminded {
  tool_call_id: string;
  tool_name: string;
  approval_id?: string;
  input_id?: string;
  policy: ApprovalPolicy;
  escalated_to?: string[];
}

/** Whether the item's message is shown in Slack (`approval:<id>` or `input:<input_id>`): only those are reminded. */
export type ShownInSlack = (item: { approval_id?: string; input_id?: string }) => boolean;

/** The reminder and escalation of an item asked at `askedAt` that expires at `expiresAt`; undefined when the policy has neither. */
function nudgesOf(policy: NudgePolicy, askedAt: number, expiresAt: number): Nudges | undefined {
  const remindAt = policy.remind_before_ms === undefined ? undefined : expiresAt - policy.remind_before_ms;
  const escalateAt = policy.escalate_after_ms === undefined ? undefined : askedAt + policy.escalate_after_ms;
  if (remindAt === undefined && escalateAt === undefined) return undefined;
  return {
    ...(remindAt !== undefined ? { remind_at: remindAt } : {}),
    ...(escalateAt !== undefined ? { escalate_at: escalateAt } : {}),
    escalate_to: [...policy.escalate_to],
  };
}

/**
 * Sets the nudges of the call's pending approval, or of its open MCP questions of `round`, as the
 * policy says (the call record is replaced, never edited in place). Returns nothing: the caller saves.
 */
export function armNudges(calls: ToolCall[], toolCallId: string, policy: NudgePolicy, now: number, round?: number): void {
  const at = calls.findIndex((c) => c.tool_call_id === toolCallId && (c.state === "awaiting_approval" || c.state === "dispatched"));
  const call = calls[at];
  if (call?.state === "awaiting_approval") {
    const nudges = nudgesOf(policy, now, call.approval.expires_at);
    if (nudges !== undefined) calls[at] = { ...call, approval: { ...call.approval, nudges } };
  } else if (call?.state === "dispatched" && call.questions !== undefined) {
    const questions = call.questions.map((q) => {
      if (q.round !== round || !isOpen(q) || q.nudges !== undefined) return q;
      const nudges = nudgesOf(policy, now, q.expires_at);
      return nudges === undefined ? q : { ...q, nudges };
    });
    calls[at] = { ...call, questions };
  }
}

/**
 * Every reminder and escalation of the turn due at `now` (before expiry): the events to append, and
 * what was reminded (its Slack users are told directly by the caller). The escalation of an item
 * comes before its reminder when both are due, so the reminder tells the widened set.
 */
export function nudgeDue(
  calls: ToolCall[],
  turn: number,
  now: number,
  shown: ShownInSlack,
  policyOf: (call: ToolCall) => ApprovalPolicy,
): { effects: Effect[]; reminded: Reminded[] } {
  const effects: Effect[] = [];
  const reminded: Reminded[] = [];
  for (const call of turnCalls(calls, turn)) {
    const ids = { tool_name: call.tool_name, tool_call_id: call.tool_call_id };
    const policy = policyOf(call);
    if (call.state === "awaiting_approval") {
      const { approval } = call;
      if (approval.nudges === undefined || now >= approval.expires_at) continue;
      const item = { approval_id: approval.approval_id };
      const step = nudgeOne(approval.nudges, now, approval.expires_at, policy, shown(item));
      if (step === undefined) continue;
      replaceCall(calls, call, { ...call, approval: { ...approval, nudges: step.nudges } });
      effects.push(...step.events.map((e) => emitNudge(e, { ...ids, ...item })));
      if (step.remind) reminded.push({ ...ids, ...item, policy, ...escalatedOf(step.nudges) });
    } else if (call.state === "dispatched" && call.questions !== undefined) {
      let changed = false;
      const questions = call.questions.map((q) => {
        if (q.nudges === undefined || !isOpen(q) || now >= q.expires_at) return q;
        const item = { input_id: q.input_id };
        const step = nudgeOne(q.nudges, now, q.expires_at, policy, shown(item));
        if (step === undefined) return q;
        changed = true;
        effects.push(...step.events.map((e) => emitNudge(e, { ...ids, ...item })));
        if (step.remind) reminded.push({ ...ids, ...item, policy, ...escalatedOf(step.nudges) });
        return { ...q, nudges: step.nudges };
      });
      if (changed) replaceCall(calls, call, { ...call, questions });
    }
  }
  return { effects, reminded };
}

type NudgeEvent =
  | { type: "approval_escalated"; approvers: string[] | null; escalated_to: string[] }
  | { type: "approval_reminded"; expires_at: string };

/** One item's due steps: its nudges as they now stand, the events, and whether a reminder went out. */
function nudgeOne(
  nudges: Nudges,
  now: number,
  expiresAt: number,
  policy: ApprovalPolicy,
  shown: boolean,
): { nudges: Nudges; events: NudgeEvent[]; remind: boolean } | undefined {
  let next = nudges;
  const events: NudgeEvent[] = [];
  let remind = false;
  if (next.escalate_at !== undefined && next.escalated === undefined && now >= next.escalate_at) {
    next = { ...next, escalated: { at: now, escalated_to: [...next.escalate_to] } };
    events.push({
      type: "approval_escalated",
      approvers: policy.approvers === null ? null : [...policy.approvers],
      escalated_to: [...next.escalate_to],
    });
  }
  if (next.remind_at !== undefined && next.reminded !== true && now >= next.remind_at) {
    next = { ...next, reminded: true };
    // Contract section 24: nothing is reminded for an item not shown in Slack.
    if (shown) {
      events.push({ type: "approval_reminded", expires_at: new Date(expiresAt).toISOString() });
      remind = true;
    }
  }
  return next === nudges ? undefined : { nudges: next, events, remind };
}

function escalatedOf(nudges: Nudges): { escalated_to?: string[] } {
  return nudges.escalated === undefined ? {} : { escalated_to: nudges.escalated.escalated_to };
}

function emitNudge(event: NudgeEvent, ids: { tool_name: string; tool_call_id: string; approval_id?: string; input_id?: string }): Effect {
  if (event.type === "approval_reminded") {
    const fields: EventFields<"approval_reminded"> = { ...ids, expires_at: event.expires_at };
    return { kind: "emit", type: "approval_reminded", fields };
  }
  const fields: EventFields<"approval_escalated"> = { ...ids, approvers: event.approvers, escalated_to: event.escalated_to };
  return { kind: "emit", type: "approval_escalated", fields };
}

function replaceCall(calls: ToolCall[], call: ToolCall, next: ToolCall): void {
  const at = calls.indexOf(call);
  if (at === -1) throw new Error(`call ${call.tool_call_id} is not in this run's calls`);
  calls[at] = next;
}
