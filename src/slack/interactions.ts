// The pure rules of clicks and modal submissions (contract section 14): read
// back the opaque button values and the modal's private_metadata, decide who
// may decide, and word the answers a person gets (refusal, stale click).
import { z } from "zod";
import type { ActionVerdict } from "../wire/run-protocol";
import type { ApprovalPolicy } from "../policy/approval-policy";
import { expandApprovers } from "../policy/approver-patterns";
import { exactSlackUser } from "./approver-mentions";
import type { ApprovalButtonValue, InputButtonValue } from "./blocks";
import { joined, mention, mrkdwn, type SlackText, untrustedCode } from "./slack-text";

const id = z.string().min(1).max(200);
// `channel_id`: set on the Home tab's buttons (src/slack/home-tab.ts), absent on a thread's.
const approvalValueSchema = z.object({ run_id: id, approval_id: id, level: z.enum(["approve", "confirm"]), channel_id: id.optional() });
// `input_id`: an MCP server's question (contract section 21), absent on a human__ask's button.
const inputValueSchema = z.object({
  run_id: id,
  tool_call_id: id,
  input_id: z.string().min(1).max(600).optional(),
  channel_id: id.optional(),
});

/** What a modal keeps in private_metadata: the run, the approval or question, and where to answer ephemerally. */
const modalMetadataSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("approval"), run_id: id, approval_id: id, channel_id: id, thread_ts: z.string().optional() }),
  z.object({ kind: z.literal("input"), run_id: id, tool_call_id: id, channel_id: id, thread_ts: z.string().optional() }),
  z.object({
    kind: z.literal("form"),
    run_id: id,
    input_id: z.string().min(1).max(600),
    channel_id: id,
    thread_ts: z.string().optional(),
  }),
]);
export type ModalMetadata = z.output<typeof modalMetadataSchema>;

function parseJson<T>(schema: z.ZodType<T>, text: string | undefined): T | null {
  if (text === undefined) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export const parseApprovalValue = (value: string | undefined): ApprovalButtonValue | null => parseJson(approvalValueSchema, value);
export const parseInputValue = (value: string | undefined): (InputButtonValue & { input_id?: string }) | null =>
  parseJson(inputValueSchema, value);
export const parseModalMetadata = (text: string | undefined): ModalMetadata | null => parseJson(modalMetadataSchema, text);
export const encodeModalMetadata = (metadata: ModalMetadata): string => JSON.stringify(metadata);

/**
 * Who may decide, as every refusal names them (contract section 19): the
 * Slack users eligible by exact id, and whether anyone else may too (an API
 * or console principal with the role, or a principal the policy names by a
 * pattern or outside Slack).
 */
export interface Deciders {
  users: string[];
  elsewhere: boolean;
}

/**
 * Who may approve one tool's approval. Without `approvers`: the run's
 * requester (unless self-approval is forbidden) and SLACK_APPROVERS, and the
 * approver role elsewhere; with `approvers`: the Slack users its patterns
 * name by exact id (groups expanded), and elsewhere when any other pattern is
 * there (`*` names nobody in particular). Under `self_approval: false` the
 * requester is never named: they may not approve.
 */
export function approvalDeciders(
  policy: ApprovalPolicy,
  groups: Readonly<Record<string, readonly string[]>>,
  requester: string | undefined,
  slackApprovers: readonly string[],
  escalatedTo?: readonly string[],
): Deciders {
  // Contract section 24: an escalation names its escalate_to beside the rule in force.
  if (escalatedTo !== undefined && escalatedTo.length > 0) {
    const ruled = approvalDeciders(policy, groups, requester, slackApprovers);
    const escalated = approvalDeciders({ ...policy, approvers: escalatedTo }, groups, requester, slackApprovers);
    return decidersOf([...ruled.users, ...escalated.users], ruled.elsewhere || escalated.elsewhere);
  }
  if (policy.approvers === null) {
    return decidersOf([...(policy.self_approval && requester !== undefined ? [requester] : []), ...slackApprovers], true);
  }
  const patterns = expandApprovers(policy.approvers, groups);
  const exact = patterns.flatMap((p) => {
    const user = exactSlackUser(p);
    return user === undefined ? [] : [user];
  });
  const named = policy.self_approval ? exact : exact.filter((u) => u !== requester);
  return decidersOf(
    named,
    patterns.some((p) => exactSlackUser(p) === undefined),
  );
}

/** Who may answer a `human__ask` question in Slack (approvers do not govern answers): the requester and SLACK_APPROVERS, and the API's answerers. */
export function answerDeciders(requester: string | undefined, slackApprovers: readonly string[]): Deciders {
  return decidersOf([...(requester !== undefined ? [requester] : []), ...slackApprovers], true);
}

const decidersOf = (users: readonly string[], elsewhere: boolean): Deciders => ({ users: [...new Set(users)], elsewhere });

/** The Slack users by exact id, then "an approver in the console" when anyone else may decide (alone when nobody is named). */
function whoText(deciders: Deciders): SlackText {
  const named = deciders.users.map(mention);
  if (named.length === 0) return mrkdwn`an approver in the console`;
  return deciders.elsewhere ? mrkdwn`${joined(named, ", ")} or an approver in the console` : joined(named, ", ");
}

/** A Slack user who may not answer this question, told who may. */
export function refusalText(deciders: Deciders): SlackText {
  return mrkdwn`You may not answer this question. Who may: ${whoText(deciders)}. Nothing was changed.`;
}

/** A decision the approval policy refused (contract section 19), naming who may decide as every refusal does. */
export function policyRefusalText(error: "not_an_approver" | "self_approval_forbidden", deciders: Deciders): SlackText {
  const who = whoText(deciders);
  return error === "not_an_approver"
    ? mrkdwn`You may not decide this approval. Who may: ${who}. Nothing was changed.`
    : mrkdwn`This tool forbids approving your own request: you may deny it, but another person must approve it (${who}). Nothing was changed.`;
}

export const STALE_TEXT = mrkdwn`This was already decided, expired or cancelled. Nothing was changed.`;
export const GONE_TEXT = mrkdwn`This run no longer exists (its events were retained for a limited time). Nothing was changed.`;
/** A name or code shown in a reply. */
const NAME_MAX_CHARS = 200;

/**
 * The ephemeral reply for a decision's verdict (contract section 6), or null
 * when the decision was taken (the message's own update says so).
 */
export function decisionReplyText(verdict: ActionVerdict): SlackText | null {
  switch (verdict.kind) {
    case "resolved":
    case "answered":
    case "input_answered":
    case "vote_pending":
    case "needs_confirmation":
    case "cancel":
      return null;
    case "gone":
      return GONE_TEXT;
    case "stale":
      return STALE_TEXT;
    case "invalid_answer":
      return mrkdwn`The answer does not fit the question's form. Nothing was changed.`;
    case "refused":
      return verdict.error === "not_an_approver"
        ? mrkdwn`This tool's approval policy does not let you decide this. Nothing was changed.`
        : mrkdwn`You asked for this run, and this tool forbids self-approval: you may deny it, another approver must approve. Nothing was changed.`;
    case "already_resolved":
      return mrkdwn`This was already decided (${untrustedCode(verdict.decision, NAME_MAX_CHARS)}). Nothing was changed.`;
    case "expired":
      return mrkdwn`This expired before your decision arrived. Nothing was changed.`;
    case "not_found":
      return STALE_TEXT;
    case "confirmation_mismatch":
      return mrkdwn`Your decision was not taken: approving needs the tool name typed exactly (${untrustedCode(verdict.tool_name, NAME_MAX_CHARS)}).`;
    case "halted":
      return mrkdwn`Mutations are halted (${untrustedCode(verdict.halt_id, NAME_MAX_CHARS)}): this call cannot be approved until an admin releases the halt. You may still deny it. Nothing was changed.`;
    case "storage_timeout":
      return mrkdwn`Storage did not answer in time, so your decision was not taken. Nothing was changed; try again shortly.`;
  }
}

/** An MCP question whose form Slack cannot show (contract section 21). */
export const FORM_NOT_SHOWN_TEXT = mrkdwn`This question's form cannot be shown in Slack: answer it in the console, or decline it here.`;

export const isConfirmationMismatch = (verdict: ActionVerdict): boolean => verdict.kind === "confirmation_mismatch";
