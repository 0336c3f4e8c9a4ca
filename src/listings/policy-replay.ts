// Policy replay's judgment (contract section 24): one recorded call judged
// again by a candidate policy alone, check by check, against what was
// recorded, with no cascade (each check reads what happened, not what the
// candidate would have made happen). Pure, and no second copy of any rule:
// the tool's classification is src/execution/tool-policy.ts toolRule, who may
// decide and when a quorum is met src/policy/approval-policy.ts (refusalOf,
// decide), the limits a call is under src/policy/mutation-limits.ts limitsFor;
// the limit windows are counted in D1 by the checkpoint's own window
// (src/outcomes/mutation-limits.ts replayWindowCounts) and handed in here.
import type { PolicyDocument } from "../config/policy-document";
import { toolRule } from "../execution/tool-policy";
import { decide, effectivePolicy, refusalOf, type Requester, type Vote } from "../policy/approval-policy";
import { limitsFor, type MutationLimit } from "../policy/mutation-limits";
import { checkpointVerdict } from "../policy/shadow-verdicts";
import type { Decider } from "../wire/run-protocol";
import type { ReplayCall, ReplayVote } from "./replay-facts";

type ReplayCheck = "ask" | "decider" | "quorum" | "checkpoint";

/** One check whose verdict the candidate changes (contract section 24's `changed` item). */
export interface ReplayChange {
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  check: ReplayCheck;
  recorded: string;
  candidate: string;
  /** With `decider`: whose decision it judges. */
  principal?: string;
}

/** What was read for one call beside its row: its decisions, in order, and each limit window's count. */
export interface RecordedCall {
  call: ReplayCall;
  votes: readonly ReplayVote[];
  /**
   * The rows a candidate limit's window held, when asked and at the checkpoint
   * (undefined: the limit does not apply, or no checkpoint was recorded).
   */
  windows: (limit: MutationLimit) => { asked?: number | undefined; checkpoint?: number | undefined };
}

export interface ReplayRules {
  /** Whether a Slack principal is listed in SLACK_APPROVERS (the default rule's second way in, a setting, not policy). */
  slackListed: (principalId: string) => boolean;
}

/** Every limit of the candidate's document a mutation of `toolName` is under. */
export function candidateLimits(candidate: PolicyDocument, toolName: string): MutationLimit[] {
  return limitsFor(candidate.tools, toolName);
}

function requesterOf(call: ReplayCall): Requester {
  return {
    principal_id: call.requested_by,
    person: call.requester_person,
    ...(call.on_behalf_of !== undefined ? { on_behalf_of: call.on_behalf_of } : {}),
    ...(call.on_behalf_of_person !== undefined ? { on_behalf_of_person: call.on_behalf_of_person } : {}),
  };
}

/**
 * The decider a recorded decision stands for: a Slack user by their principal
 * id; anyone else came through the API, console or CLI, where deciding at all
 * took the `approver` role (a recorded decision proves it was held).
 */
function deciderOf(vote: ReplayVote, rules: ReplayRules): Decider {
  return vote.principal.startsWith("slack:")
    ? { via: "slack", principal_id: vote.principal, person: vote.person, listed_in_slack_approvers: rules.slackListed(vote.principal) }
    : { via: "api", principal_id: vote.principal, person: vote.person, has_approver_role: true };
}

/** The candidate's verdict at asking. */
function askVerdict(candidate: PolicyDocument, recorded: RecordedCall): string {
  const { call } = recorded;
  const entry = Object.hasOwn(candidate.tools, call.tool_name) ? candidate.tools[call.tool_name] : undefined;
  const annotations = { readOnlyHint: call.trusted_read_only, destructiveHint: call.destructive_hint };
  const rule = toolRule(entry, annotations, true);
  if (rule.mutating) {
    if ((candidate.budget[call.tool_name] ?? 0) <= 0) return "not_in_budget";
    // A halt is no policy: it covered the call as recorded, whatever the candidate says.
    if (call.ask === "halted") return "halted";
    for (const limit of candidateLimits(candidate, call.tool_name)) {
      const held = recorded.windows(limit).asked;
      if (held !== undefined && held >= limit.max) return "rate_limited";
    }
  }
  return rule.level ?? "automatic";
}

/** The candidate's checkpoint verdict for a call that recorded one: the run's budget, then every limit's window. */
function candidateCheckpoint(candidate: PolicyDocument, recorded: RecordedCall): string {
  const { call } = recorded;
  const full = candidateLimits(candidate, call.tool_name).some((limit) => {
    const held = recorded.windows(limit).checkpoint;
    return held !== undefined && held >= limit.max;
  });
  return checkpointVerdict(candidate.budget, call.tool_name, call.budget_used ?? 0, full);
}

/** A quorum's verdict words: `resolved`, or `pending:<n>` with the approves counted. */
const pending = (counted: number) => `pending:${counted}`;

/** Every check of one recorded call the candidate decides otherwise, in the order the checks ran. */
export function judgeCall(candidate: PolicyDocument, recorded: RecordedCall, rules: ReplayRules): ReplayChange[] {
  const { call } = recorded;
  const changes: ReplayChange[] = [];
  const change = (check: ReplayCheck, was: string, now: string, principal?: string) => {
    if (was === now) return;
    changes.push({
      run_id: call.run_id,
      tool_call_id: call.tool_call_id,
      tool_name: call.tool_name,
      check,
      recorded: was,
      candidate: now,
      ...(principal !== undefined ? { principal } : {}),
    });
  };
  change("ask", call.ask, askVerdict(candidate, recorded));

  if (call.approval_id !== undefined) {
    const policy = effectivePolicy(candidate.tools, call.tool_name);
    const requester = requesterOf(call);
    const counted: Vote[] = [];
    let resolved = false;
    for (const vote of recorded.votes) {
      const decider = deciderOf(vote, rules);
      const refusal = refusalOf({ policy, groups: candidate.groups, decider, requester, decision: vote.decision });
      change("decider", "eligible", refusal ?? "eligible", vote.principal);
      if (vote.decision !== "approve" || resolved) continue;
      const verdict = decide({ policy, groups: candidate.groups, decider, requester, decision: "approve", votes: counted, at: vote.at });
      if (verdict.kind === "vote_recorded") counted.push(verdict.vote);
      else if (verdict.kind === "approved") {
        counted.splice(0, counted.length, ...verdict.approvals);
        resolved = true;
      }
    }
    const approves = recorded.votes.filter((v) => v.decision === "approve").length;
    const was = call.approval_status === "approved" ? "resolved" : pending(approves);
    // Still pending as recorded: the candidate's count says only where it stands too.
    change("quorum", was, resolved ? "resolved" : pending(counted.length));
  }

  if (call.checkpoint !== undefined) change("checkpoint", call.checkpoint, candidateCheckpoint(candidate, recorded));
  return changes;
}
