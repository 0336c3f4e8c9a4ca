// The verdict words of contract section 24's checks, as a shadow policy
// version is compared with the active one: `decider` (eligible,
// not_an_approver, self_approval_forbidden) and `quorum` (resolved,
// pending:<n>, n the approvals still missing). Pure, and judged by the same
// functions the active version decides with (approval-policy.ts): the shadow
// is only ever another document handed to them, against what actually
// happened (the votes actually counted), never a tally of its own.
import { type DecisionInput, effectivePolicy, refusalOf } from "./approval-policy";
import type { ApprovalPolicyFields } from "./approval-policy";

/** The part of a policy document a decider or quorum check reads. */
export interface ShadowRules {
  tools: Readonly<Record<string, ApprovalPolicyFields>>;
  groups: Readonly<Record<string, readonly string[]>>;
}

export type DeciderVerdict = "eligible" | "not_an_approver" | "self_approval_forbidden";

/** The `decider` check's verdict under `rules` for this decision on a call of `toolName`. */
export function deciderVerdict(
  rules: ShadowRules,
  toolName: string,
  input: Pick<DecisionInput, "decider" | "requester" | "decision">,
): DeciderVerdict {
  return refusalOf({ ...input, policy: effectivePolicy(rules.tools, toolName), groups: rules.groups }) ?? "eligible";
}

/**
 * The `quorum` check's verdict under `rules`: the votes that actually counted (this decision's
 * included; who may vote is the decider check's) against the `approvals_required` of `rules`.
 */
export function quorumVerdict(rules: ShadowRules, toolName: string, counted: number): string {
  const required = effectivePolicy(rules.tools, toolName).approvals_required;
  return counted >= required ? "resolved" : `pending:${required - counted}`;
}

export type CheckpointVerdict = "allowed" | "rate_limited" | "budget_exhausted";

/**
 * The `checkpoint` check's verdict under `budget`: the run's budget first (`usedBefore`, the run's
 * admitted mutations of the tool before this call), then whether one of the version's limit windows
 * was already full. One function for the shadow (against what actually happened) and replay.
 */
export function checkpointVerdict(
  budget: Readonly<Record<string, number>>,
  toolName: string,
  usedBefore: number,
  limitFull: boolean,
): CheckpointVerdict {
  if (usedBefore >= (budget[toolName] ?? 0)) return "budget_exhausted";
  return limitFull ? "rate_limited" : "allowed";
}
