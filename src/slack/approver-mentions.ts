// Which Slack users an approval message mentions (contract section 19,
// "Telling the approvers"): the Slack users the tool's policy names by exact
// id (`slack:<team>:<user>` or `slack:<user>`, directly or through a
// `group:` of APPROVER_GROUPS). A pattern with `*` names nobody in
// particular, so it mentions nobody. Pure: the outbox asks it per
// approval_requested, with the host's policy.
import { effectivePolicy, type ApprovalPolicyFields } from "../policy/approval-policy";
import { expandApprovers } from "../policy/approver-patterns";

/** `slack:U1`, `slack:T1:U1`: an exact Slack principal id and its user id. */
const EXACT_SLACK_USER = /^slack:(?:[A-Z0-9]{1,32}:)?([UW][A-Z0-9]{1,30})$/;

export interface ApproverPolicySource {
  TOOL_POLICY: Readonly<Record<string, ApprovalPolicyFields>>;
  APPROVER_GROUPS: Readonly<Record<string, readonly string[]>>;
}

/** The Slack user id an exact Slack principal pattern names (`slack:U1`, `slack:T1:U1`), else undefined. */
export function exactSlackUser(pattern: string): string | undefined {
  return EXACT_SLACK_USER.exec(pattern)?.[1];
}

/** The Slack user ids the tool's policy names exactly, in the order named, each once; none under the default rule. */
export function slackApproversNamed(source: ApproverPolicySource, toolName: string): string[] {
  const { approvers } = effectivePolicy(source.TOOL_POLICY, toolName);
  return approvers === null ? [] : slackUsersNamed(approvers, source.APPROVER_GROUPS);
}

/**
 * The Slack user ids patterns name exactly (groups expanded), in the order named, each once (an
 * escalation's, contract section 24); with `team`, only users of that installation's team.
 */
export function slackUsersNamed(patterns: readonly string[], groups: ApproverPolicySource["APPROVER_GROUPS"], team?: string): string[] {
  const users: string[] = [];
  for (const pattern of expandApprovers(patterns, groups)) {
    const user = exactSlackUser(pattern);
    const ofTeam = /^slack:([A-Z0-9]{1,32}):/.exec(pattern)?.[1];
    if (team !== undefined && ofTeam !== undefined && ofTeam !== team) continue;
    if (user !== undefined && !users.includes(user)) users.push(user);
  }
  return users;
}
