// Who may decide a tool's approvals (contract section 19): the effective
// policy of one tool (its TOOL_POLICY entry over the `"*"` defaults, field by
// field) and the one verdict every path (HTTP, console, CLI, Slack) asks for:
// eligibility first (an ineligible principal learns nothing), then
// self-approval, then the vote. Pure: no I/O; the caller supplies persons
// (src/policy/persons.ts) and the votes so far, and stores what comes back.
import { durationSeconds } from "../config/durations";
import { POLICY_DEFAULTS_KEY } from "../config/policy-words";
import { expandApprovers, matchesApprovers, normalisePrincipalId } from "./approver-patterns";
import { onBehalfOfPerson, onBehalfOfPrincipal, restrictingPersonOf } from "./persons";
import type { ApprovalPolicy, Decider, Person } from "../wire/run-protocol";

/** The policy in force and the decider are the run protocol's words (src/wire/run-protocol.ts). */
export type { ApprovalPolicy, Decider };

/** Defaults of contract section 19. */
const DEFAULT_APPROVALS_REQUIRED = 1;
const DEFAULT_SELF_APPROVAL = true;

/** The three fields of a TOOL_POLICY entry that section 19 adds, and section 24's three (all optional as configured). */
export interface ApprovalPolicyFields {
  approvers?: readonly string[] | undefined;
  approvals_required?: number | undefined;
  self_approval?: boolean | undefined;
  remind_before?: string | undefined;
  escalate_after?: string | undefined;
  escalate_to?: readonly string[] | undefined;
}

/**
 * Contract section 24: when a pending approval (and its call's MCP questions) is reminded and
 * escalated, and to whom: the tool's entry over `"*"`, field by field; absent fields: never.
 */
export interface NudgePolicy {
  remind_before_ms?: number;
  escalate_after_ms?: number;
  /** The patterns eligible once escalated, beside the rule in force ([] when none are named). */
  escalate_to: readonly string[];
}

/** A tool's reminder and escalation (contract section 24), from its entry over the `"*"` entry. */
export function nudgePolicy(toolPolicy: Readonly<Record<string, ApprovalPolicyFields>>, toolName: string): NudgePolicy {
  const own = Object.hasOwn(toolPolicy, toolName) ? toolPolicy[toolName] : undefined;
  const defaults = Object.hasOwn(toolPolicy, POLICY_DEFAULTS_KEY) ? toolPolicy[POLICY_DEFAULTS_KEY] : undefined;
  const ms = (text: string | undefined) => {
    const seconds = text === undefined ? undefined : durationSeconds(text);
    return seconds === undefined ? undefined : seconds * 1000;
  };
  const remind = ms(own?.remind_before ?? defaults?.remind_before);
  const escalate = ms(own?.escalate_after ?? defaults?.escalate_after);
  return {
    ...(remind !== undefined ? { remind_before_ms: remind } : {}),
    ...(escalate !== undefined ? { escalate_after_ms: escalate } : {}),
    escalate_to: [...(own?.escalate_to ?? defaults?.escalate_to ?? [])],
  };
}

/** A tool's entry over the `"*"` entry, field by field, over the contract's defaults. */
export function effectivePolicy(toolPolicy: Readonly<Record<string, ApprovalPolicyFields>>, toolName: string): ApprovalPolicy {
  const own = Object.hasOwn(toolPolicy, toolName) ? toolPolicy[toolName] : undefined;
  const defaults = Object.hasOwn(toolPolicy, POLICY_DEFAULTS_KEY) ? toolPolicy[POLICY_DEFAULTS_KEY] : undefined;
  return {
    approvers: own?.approvers ?? defaults?.approvers ?? null,
    approvals_required: own?.approvals_required ?? defaults?.approvals_required ?? DEFAULT_APPROVALS_REQUIRED,
    self_approval: own?.self_approval ?? defaults?.self_approval ?? DEFAULT_SELF_APPROVAL,
  };
}

/** The run's requester: its principal, its person, and the `on_behalf_of` it named (and that one's person). */
export interface Requester {
  principal_id: string;
  person: Person;
  on_behalf_of?: string | undefined;
  on_behalf_of_person?: Person | undefined;
}

/** What a run records of who asked for it (its record, or the runs index). */
export interface RunRequesterFacts {
  user_id: string;
  requested_by?: string | undefined;
  source?: "api" | "slack" | undefined;
  /** The person found when the run started; absent: not looked up (the principal's own person), null: nobody. */
  requester_person?: Person | undefined;
  on_behalf_of?: string | undefined;
  /** The on_behalf_of's person found when the run started (src/policy/persons.ts onBehalfOfPerson); absent: read from its text. */
  on_behalf_of_person?: string | undefined;
}

/** The run's requester as section 19 compares it: its principal, its person, and the on_behalf_of it named (and that one's person). */
export function runRequester(run: RunRequesterFacts): Requester {
  const principalId = run.requested_by ?? (run.source === "slack" ? `slack:${run.user_id}` : run.user_id);
  return {
    principal_id: principalId,
    person: run.requester_person !== undefined ? run.requester_person : restrictingPersonOf(principalId),
    ...(run.on_behalf_of !== undefined
      ? {
          on_behalf_of: run.on_behalf_of,
          on_behalf_of_person: run.on_behalf_of_person ?? onBehalfOfPerson(run.on_behalf_of, slackTeamOfRequester(principalId)),
        }
      : {}),
  };
}

/** A Slack-started run's requester names the installation's team, the one a bare Slack user id belongs to. */
function slackTeamOfRequester(principalId: string): string | undefined {
  return /^slack:([TE][A-Z0-9]+):/.exec(principalId)?.[1];
}

/** One counted approve: `by` is the principal that voted, `person` the human it counted for. */
export interface Vote {
  by: string;
  person: string;
  at: string;
}

export interface DecisionInput {
  policy: ApprovalPolicy;
  /** Contract section 24: the escalation the approval recorded (its `escalate_to` patterns); absent: not escalated. */
  escalated_to?: readonly string[] | undefined;
  groups: Readonly<Record<string, readonly string[]>>;
  decider: Decider;
  requester: Requester;
  decision: "approve" | "deny";
  /** The approves counted so far, in order. */
  votes: readonly Vote[];
  /** When this decision is made (ISO 8601). */
  at: string;
}

export type Verdict =
  | { kind: "refused"; error: "not_an_approver" }
  | { kind: "refused"; error: "self_approval_forbidden" }
  /** The same person approved already: the same answer as before, nothing changes. */
  | { kind: "duplicate_vote"; votes: number; required: number }
  /** Counted, not yet enough: append `approval_vote`. */
  | { kind: "vote_recorded"; vote: Vote; votes: number; required: number }
  /** The Nth distinct person approved: resolve with every vote, in order. */
  | { kind: "approved"; approvals: Vote[]; decided_by: string }
  /** One eligible deny ends it. */
  | { kind: "denied"; decided_by: string };

/**
 * Eligibility alone: may this decider decide this tool's approvals at all?
 * With `approvers`, the principal must match (and an API principal also hold
 * `approver`); without, an API principal needs `approver`, a Slack user must
 * be the requester or listed. A principal that is no person never counts
 * towards a quorum, so with `approvals_required` > 1 it is not an approver.
 */
export function isEligible(
  policy: ApprovalPolicy,
  groups: Readonly<Record<string, readonly string[]>>,
  decider: Decider,
  requester: Pick<Requester, "principal_id">,
  escalatedTo?: readonly string[],
): boolean {
  if (decider.via === "api" && !decider.has_approver_role) return false;
  // Contract section 24: once escalated, a match of `escalate_to` is eligible beside the rule in force.
  const escalated = escalatedTo !== undefined && matchesApprovers(escalatedTo, groups, decider.principal_id);
  if (!escalated && !eligibleByRule(policy, groups, decider, requester)) return false;
  return !(policy.approvals_required > 1 && decider.person === null);
}

/** The rule in force alone: `approvers` when set, else the default rule (a Slack user: the requester or listed). */
function eligibleByRule(
  policy: ApprovalPolicy,
  groups: Readonly<Record<string, readonly string[]>>,
  decider: Decider,
  requester: Pick<Requester, "principal_id">,
): boolean {
  if (policy.approvers !== null) return matchesApprovers(policy.approvers, groups, decider.principal_id);
  if (decider.via !== "slack") return true;
  const isRequester = normalisePrincipalId(decider.principal_id) === normalisePrincipalId(requester.principal_id);
  return isRequester || decider.listed_in_slack_approvers;
}

/** True when the decider is (or stands for) the run's requester or its `on_behalf_of`. */
function isRequesterOf(decider: Pick<Decider, "principal_id" | "person">, requester: Requester): boolean {
  const ids = new Set<string>();
  const relayed = requester.on_behalf_of;
  const relayedPrincipal = relayed === undefined ? undefined : onBehalfOfPrincipal(relayed, slackTeamOfRequester(requester.principal_id));
  for (const id of [requester.principal_id, relayed, relayedPrincipal]) if (id) ids.add(normalisePrincipalId(id));
  for (const person of [requester.person, requester.on_behalf_of_person]) if (person) ids.add(person);
  if (ids.has(normalisePrincipalId(decider.principal_id))) return true;
  return decider.person !== null && ids.has(decider.person);
}

/**
 * The refusal of section 19 for this decider, or null: eligibility first,
 * then (for an approve) self-approval. Asked before anything about the
 * approval's state is told, so a refused principal learns nothing.
 */
export function refusalOf(
  input: Pick<DecisionInput, "policy" | "escalated_to" | "groups" | "decider" | "requester" | "decision">,
): "not_an_approver" | "self_approval_forbidden" | null {
  const { policy, decider, requester } = input;
  if (!isEligible(policy, input.groups, decider, requester, input.escalated_to)) return "not_an_approver";
  if (input.decision === "approve" && !policy.self_approval && (decider.person === null || isRequesterOf(decider, requester))) {
    return "self_approval_forbidden";
  }
  return null;
}

/** What a person does with an MCP server's question mid-call (contract section 21). */
export type QuestionAction = "accept" | "decline" | "cancel";

/**
 * May this actor answer this call's MCP question with this action (contract
 * section 21)? Only a principal eligible to approve the call may answer it,
 * and an `accept` is judged as an approve: under `self_approval: false` the
 * requester's person (and its `on_behalf_of`'s), and a credential that is no
 * person, may only `decline` or `cancel` (self_approval_forbidden). The
 * refusal, or null.
 */
export function answerRefusal(
  input: Pick<DecisionInput, "policy" | "escalated_to" | "groups" | "decider" | "requester"> & { action: QuestionAction },
): "not_an_approver" | "self_approval_forbidden" | null {
  const { action, ...asked } = input;
  return refusalOf({ ...asked, decision: action === "accept" ? "approve" : "deny" });
}

/**
 * May this Slack user answer a `human__ask` question (contract sections 19, 21)? `approvers` and
 * `self_approval` do not govern these answers: the run's requester and SLACK_APPROVERS may, compared as
 * principal ids (a run whose requester is not a Slack user: only SLACK_APPROVERS). The Slack click asks this.
 */
export function mayAnswerAsk(actor: string, requester: string | undefined, slackApprovers: readonly string[]): boolean {
  const id = normalisePrincipalId(actor);
  return (requester !== undefined && id === normalisePrincipalId(requester)) || slackApprovers.some((a) => normalisePrincipalId(a) === id);
}

/**
 * The run's judgment of a `human__ask` answer (contract sections 6, 19): an API, console or CLI principal
 * got here through its route's role, so only a Slack user is judged, by mayAnswerAsk's rule (the run's
 * requester, or listed in SLACK_APPROVERS). The run object asks this for every answer, whatever surface
 * it came from; the Slack click asks mayAnswerAsk only to refuse before opening its modal.
 */
export function askAnswerRefusal(decider: Decider, requestedBy: string | undefined): "not_an_approver" | null {
  if (decider.via !== "slack") return null;
  const listed = decider.listed_in_slack_approvers ? [decider.principal_id] : [];
  return mayAnswerAsk(decider.principal_id, requestedBy, listed) ? null : "not_an_approver";
}

/** A vote as a listing keeps it: the principal that voted, and the person it counted for when known. */
interface CountedVote {
  by: string;
  person?: string | undefined;
}

/**
 * Whether this decider's approve would be a duplicate_vote: their person (or, for a principal that is no
 * person, the principal itself) already counted, or their principal already voted. The one rule
 * decide() and every surface that offers an Approve (the Slack Home tab) share.
 */
export function hasVoted(decider: Pick<Decider, "principal_id" | "person">, votes: readonly CountedVote[]): boolean {
  const person = decider.person ?? decider.principal_id;
  const principal = normalisePrincipalId(decider.principal_id);
  return votes.some((v) => v.person === person || normalisePrincipalId(v.by) === principal);
}

/** The one verdict of section 19 for one decision on one approval. */
export function decide(input: DecisionInput): Verdict {
  const { policy, decider, votes } = input;
  const refusal = refusalOf(input);
  if (refusal !== null) return { kind: "refused", error: refusal };
  if (input.decision === "deny") return { kind: "denied", decided_by: decider.principal_id };
  const required = policy.approvals_required;
  // A single-approval call may be decided by a principal that is no person: it is keyed by its principal id.
  const person = decider.person ?? decider.principal_id;
  if (hasVoted(decider, votes)) return { kind: "duplicate_vote", votes: votes.length, required };
  const vote: Vote = { by: decider.principal_id, person, at: input.at };
  if (votes.length + 1 >= required) return { kind: "approved", approvals: [...votes, vote], decided_by: decider.principal_id };
  return { kind: "vote_recorded", vote, votes: votes.length + 1, required };
}

/**
 * Contract section 24: the Slack users of the run's installation (`team`) whom a reminder tells
 * directly: each candidate named by exact id (the `approvers` in force, the recorded escalation, and
 * under the default rule the requester and SLACK_APPROVERS), kept only when the one verdict above
 * (refusalOf, as an approve) lets them decide. Each a user id, once, in the order named.
 */
export function slackUsersToRemind(input: {
  policy: ApprovalPolicy;
  escalated_to?: readonly string[] | undefined;
  groups: Readonly<Record<string, readonly string[]>>;
  requester: Requester;
  slack_approvers: readonly string[];
  team: string;
}): string[] {
  const { policy, groups, team } = input;
  const named = [...(policy.approvers === null ? [input.requester.principal_id] : expandApprovers(policy.approvers, groups))];
  if (policy.approvers === null) named.push(...input.slack_approvers.map((a) => `slack:${a}`));
  named.push(...expandApprovers(input.escalated_to ?? [], groups));
  const listed = new Set(input.slack_approvers.map((a) => (a.includes(":") ? a : `${team}:${a}`)));
  const users: string[] = [];
  for (const pattern of named) {
    const exact = /^slack:(?:([TE][A-Z0-9]{1,30}):)?([UW][A-Z0-9]{1,30})$/.exec(pattern);
    if (exact === null || (exact[1] !== undefined && exact[1] !== team)) continue;
    const user = exact[2]!;
    const principal = `slack:${team}:${user}`;
    const decider: Decider = {
      via: "slack",
      principal_id: principal,
      person: principal,
      listed_in_slack_approvers: listed.has(`${team}:${user}`),
    };
    const refusal = refusalOf({
      policy,
      escalated_to: input.escalated_to,
      groups,
      decider,
      requester: input.requester,
      decision: "approve",
    });
    if (refusal === null && !users.includes(user)) users.push(user);
  }
  return users;
}

/**
 * Whether a counted vote still counts under `policy` (contract section 24): its voter still matches
 * `approvers` (when set) or the approval's escalation (`escalatedTo`), with more than one approval
 * required it was a person's (a credential that is no person is keyed by its own `token:` id), and
 * under `self_approval: false` it is not the run's requester's (when `requester` is given).
 */
export function stillEligible(
  policy: ApprovalPolicy,
  groups: Readonly<Record<string, readonly string[]>>,
  vote: Vote,
  escalatedTo?: readonly string[],
  requester?: Requester,
): boolean {
  const escalated = escalatedTo !== undefined && matchesApprovers(escalatedTo, groups, vote.by);
  if (!escalated && policy.approvers !== null && !matchesApprovers(policy.approvers, groups, vote.by)) return false;
  if (requester !== undefined && !policy.self_approval && isRequesterOf({ principal_id: vote.by, person: vote.person }, requester)) {
    return false;
  }
  return !(policy.approvals_required > 1 && vote.by.startsWith("token:") && vote.person === vote.by);
}
