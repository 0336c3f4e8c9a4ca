// The Slack app's Home tab (contract section 19, "Telling the approvers"):
// which of the pending approvals and questions of Slack-started runs one
// Slack user may decide (eligibility from src/policy/approval-policy.ts, the
// same rule as every other path), and the view that lists them, with buttons
// carrying the same action_ids and values as the thread's (plus the run's
// channel, where the ephemeral answers go). What you see is what you
// approve: an approval whose arguments the tab cannot show whole offers Deny
// and the console, no Approve. Pure: no I/O, so every rule is unit-tested.
import type { AnyHomeTabBlock, Button, HomeTabView } from "slack-web-api-client";
import { type ApprovalPolicyFields, effectivePolicy, isEligible } from "../policy/approval-policy";
import { ACTION_APPROVE, ACTION_DENY, ACTION_INPUT_ANSWER, type ApprovalButtonValue, type InputButtonValue } from "./blocks";
import { approverPrincipals, slackPrincipal } from "./slack-principal";
import { joined, mrkdwn, slackDate, untrusted, untrustedCode } from "./slack-text";

/** A pending approval of a Slack-started run, as the listings hold it. */
export interface HomeApproval {
  kind: "approval";
  run_id: string;
  approval_id: string;
  channel_id: string;
  tool_name: string;
  level: "approve" | "confirm";
  /** The run's Slack requester (its user id). */
  requester: string;
  /** The run's requesting principal (`slack:<team>:<user>`), when the index holds it. */
  requested_by?: string | undefined;
  /** The arguments as the engine redacted them (compact JSON). */
  arguments_json: string;
  expires_at: string;
}

/** A pending `human__ask` question of a Slack-started run. */
export interface HomeQuestion {
  kind: "question";
  run_id: string;
  tool_call_id: string;
  channel_id: string;
  question: string;
  requester: string;
  requested_by?: string | undefined;
  expires_at: string;
}

export type HomeItem = HomeApproval | HomeQuestion;

/** The host's rules the tab decides by. */
export interface HomeRules {
  TOOL_POLICY: Readonly<Record<string, ApprovalPolicyFields>>;
  APPROVER_GROUPS: Readonly<Record<string, readonly string[]>>;
  SLACK_APPROVERS: readonly string[];
}

/** Items listed at most: each takes three blocks, and a Home view holds at most 100. */
const HOME_ITEMS_MAX = 25;
/** The most of an approval's arguments' JSON the tab shows; longer ones are seen in the console. */
export const HOME_ARGUMENTS_SHOWN_MAX_CHARS = 1_000;
const SECTION_TEXT_MAX_CHARS = 3_000;
const NAME_MAX_CHARS = 200;
const BUTTON_VALUE_MAX_CHARS = 2_000;

/** Who the tab is for: the Slack user, their principal (contract section 18), and the installation's team. */
export interface HomeViewer {
  user: string;
  principal: string;
  team: string;
}

/** The items `viewer` may decide: approvals by the tool's policy, questions by the default rule (approvers do not govern answers). */
export function decidableBy(viewer: HomeViewer, items: readonly HomeItem[], rules: HomeRules): HomeItem[] {
  const isListed = approverPrincipals(rules.SLACK_APPROVERS, viewer.team).includes(viewer.principal);
  const requesterOf = (item: HomeItem) => item.requested_by ?? slackPrincipal(viewer.team, item.requester);
  return items.filter((item) => {
    if (item.kind === "question") return requesterOf(item) === viewer.principal || isListed;
    const policy = effectivePolicy(rules.TOOL_POLICY, item.tool_name);
    return isEligible(
      policy,
      rules.APPROVER_GROUPS,
      // A Slack user is a person of their own here (their verified email is the API's business, not the tab's).
      { via: "slack", principal_id: viewer.principal, person: viewer.principal, listed_in_slack_approvers: isListed },
      { principal_id: requesterOf(item) },
    );
  });
}

/** What the tab shows, as one string: publishing again is skipped when it is unchanged. */
export function homeDigest(items: readonly HomeItem[]): string {
  return JSON.stringify(items.map((i) => (i.kind === "approval" ? ["a", i.run_id, i.approval_id] : ["q", i.run_id, i.tool_call_id])));
}

const buttonValue = (value: object) => {
  const text = JSON.stringify(value);
  return text.length <= BUTTON_VALUE_MAX_CHARS ? text : text.slice(0, BUTTON_VALUE_MAX_CHARS);
};

function prettyArguments(argumentsJson: string): string {
  try {
    return JSON.stringify(JSON.parse(argumentsJson), null, 2) ?? argumentsJson;
  } catch {
    return argumentsJson;
  }
}

function approvalBlocks(item: HomeApproval, consoleOrigin: string | undefined): AnyHomeTabBlock[] {
  const args = prettyArguments(item.arguments_json);
  const whole = args.length <= HOME_ARGUMENTS_SHOWN_MAX_CHARS;
  const value: ApprovalButtonValue = { run_id: item.run_id, approval_id: item.approval_id, level: item.level, channel_id: item.channel_id };
  const approve: Button = {
    type: "button",
    action_id: ACTION_APPROVE,
    style: "primary",
    text: { type: "plain_text", text: item.level === "confirm" ? "Approve…" : "Approve" },
    value: buttonValue(value),
  };
  const deny: Button = {
    type: "button",
    action_id: ACTION_DENY,
    style: "danger",
    text: { type: "plain_text", text: "Deny" },
    value: buttonValue(value),
  };
  const link: Button[] =
    consoleOrigin === undefined
      ? []
      : [
          {
            type: "button",
            action_id: "home_open_console",
            text: { type: "plain_text", text: "Open in the console" },
            url: `${consoleOrigin}/console#/runs/${encodeURIComponent(item.run_id)}/approvals/${encodeURIComponent(item.approval_id)}`,
          },
        ];
  const shown = whole
    ? mrkdwn`\`\`\`${untrusted(args, SECTION_TEXT_MAX_CHARS - 6)}\`\`\``
    : mrkdwn`:scissors: Its arguments (${args.length} characters) are too long to show here: see them whole in the console or the thread before you approve; from here you can only deny.`;
  return [
    {
      type: "section",
      text: {
        type: "mrkdwn",
        text: mrkdwn`*\`${untrustedCode(item.tool_name, NAME_MAX_CHARS)}\`* needs approval (\`${untrustedCode(item.level, 20)}\`) in <#${untrustedCode(item.channel_id, 40)}> · asked by <@${untrustedCode(item.requester, 40)}> · expires ${slackDate(item.expires_at)}`,
      },
    },
    { type: "section", text: { type: "mrkdwn", text: shown } },
    {
      type: "actions",
      block_id: `home-approval:${item.approval_id}`.slice(0, 255),
      elements: whole ? [approve, deny, ...link] : [deny, ...link],
    },
  ];
}

function questionBlocks(item: HomeQuestion): AnyHomeTabBlock[] {
  const value: InputButtonValue = { run_id: item.run_id, tool_call_id: item.tool_call_id, channel_id: item.channel_id };
  return [
    {
      type: "section",
      text: {
        type: "mrkdwn",
        text: mrkdwn`:question: ${untrusted(item.question, SECTION_TEXT_MAX_CHARS - 300)} · in <#${untrustedCode(item.channel_id, 40)}> · expires ${slackDate(item.expires_at)}`,
      },
    },
    {
      type: "actions",
      block_id: `home-input:${item.run_id}:${item.tool_call_id}`.slice(0, 255),
      elements: [
        {
          type: "button",
          action_id: ACTION_INPUT_ANSWER,
          style: "primary",
          text: { type: "plain_text", text: "Answer" },
          value: buttonValue(value),
        },
      ],
    },
  ];
}

/** The Home tab of one user: what they may decide, newest last, or that nothing waits for them. */
export function homeView(items: readonly HomeItem[], consoleOrigin?: string): HomeTabView {
  const listedItems = items.slice(0, HOME_ITEMS_MAX);
  const more = items.length - listedItems.length;
  const blocks: AnyHomeTabBlock[] = [
    { type: "header", text: { type: "plain_text", text: "Waiting for you" } },
    {
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text:
            items.length === 0
              ? mrkdwn`Nothing waits for your decision.`
              : joined([mrkdwn`${items.length} approvals and questions you may decide, across runs.`], ""),
        },
      ],
    },
  ];
  for (const item of listedItems) blocks.push(...(item.kind === "approval" ? approvalBlocks(item, consoleOrigin) : questionBlocks(item)));
  if (more > 0) blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: mrkdwn`And ${more} more: see the console.` }] });
  return { type: "home", blocks };
}
