// The audit entries of changes made in a run's Durable Object (contract
// section 18), derived from the events that record them: run_started
// (run.trigger), a person's approval_vote and approval_resolved (approval.decide: expiries,
// cancellations and a resolution at the alarm are no one's vote; with the deciding policy
// version and hash, section 24) and human_input_received (input.answer).
// Pure: the run's outputs put each entry in the run index's pending marks.
// The id is the run and the event's sequence, so a replayed flush writes
// nothing twice.
import type { RunEvent } from "../wire/event-schemas";
import type { ActionOrigin } from "../wire/run-protocol";
import type { AuditEntry } from "./audit-log";

export interface RunAuditContext {
  run_id: string;
  user_id: string;
  source: "api" | "slack";
  requested_by?: string;
}

/**
 * `origin`: where the person's action that appended `event` came from (the API, the console,
 * Slack, with the client's address where known); absent outside an action (an expiry, the engine).
 */
export function auditOfEvent(context: RunAuditContext, event: RunEvent, at: string, origin?: ActionOrigin): AuditEntry | null {
  const id = `aud_${context.run_id}_${event.sequence}`;
  // Where it came from (contract section 25): a Slack-started run's entries came through Slack.
  const via = context.source === "slack" ? ("slack" as const) : ("api" as const);
  switch (event.type) {
    case "run_started": {
      const principal = context.requested_by ?? (context.source === "slack" ? `slack:${context.user_id}` : context.user_id);
      const onBehalfOf = event.on_behalf_of;
      return {
        id,
        at,
        principal,
        action: "run.trigger",
        target: context.run_id,
        result: "ok",
        // The trigger's own origin where the surface gave one (the API or console, with the client's address).
        ...(origin ?? { via }),
        ...(onBehalfOf !== undefined ? { details: { on_behalf_of: onBehalfOf } } : {}),
      };
    }
    case "approval_vote":
    case "approval_resolved": {
      const decidedBy = event.decided_by;
      if (decidedBy === undefined) return null;
      // Resolved outside any person's action: the run's alarm found the votes already counted enough under
      // the version active now (section 24). Each of those votes has its entry; one per vote (section 19).
      if (event.type === "approval_resolved" && origin === undefined) return null;
      const reason = event.type === "approval_resolved" ? event.reason : undefined;
      return {
        id,
        at,
        principal: decidedBy,
        action: "approval.decide",
        target: `${context.run_id}/approvals/${event.approval_id}`,
        result: "ok",
        ...(origin ?? { via: decidedBy.startsWith("slack:") ? "slack" : "api" }),
        // Contract section 24: the policy version that judged the decision, as its event carries it.
        ...(event.policy_version !== undefined ? { policy_version: event.policy_version } : {}),
        ...(event.policy_hash !== undefined ? { policy_hash: event.policy_hash } : {}),
        details: {
          // A vote before the Nth (contract section 19: one approval.decide per vote) is an approve.
          decision: event.type === "approval_vote" ? "approved" : event.decision,
          tool_name: event.tool_name,
          ...(event.type === "approval_vote" ? { votes: event.votes, required: event.required } : {}),
          ...(reason !== undefined ? { reason } : {}),
        },
      };
    }
    case "human_input_received": {
      const answeredBy = event.answered_by;
      if (answeredBy === undefined) return null;
      return {
        id,
        at,
        principal: answeredBy,
        action: "input.answer",
        // An MCP question (contract section 21) is answered at its input_id, and says how.
        target: `${context.run_id}/inputs/${event.input_id ?? event.tool_call_id}`,
        result: "ok",
        ...(origin ?? { via: answeredBy.startsWith("slack:") ? "slack" : "api" }),
        ...(event.action !== undefined ? { details: { action: event.action, tool_call_id: event.tool_call_id } } : {}),
      };
    }
    default:
      return null;
  }
}
