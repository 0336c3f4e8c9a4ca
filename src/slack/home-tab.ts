// The Slack app's Home tab (contract section 19, "Telling the approvers"):
// which of the pending approvals and questions of Slack-started runs one
// Slack user may decide (eligibility from src/policy/approval-policy.ts, the
// same rule as every other path, persons included: the viewer's from
// users.info, the requester's as the run object keeps it; an MCP server's
// question mid-call, contract section 21, by its call's approval rule), and
// the view that lists them, with buttons
// carrying the same action_ids and values as the thread's (plus the run's
// channel, where the ephemeral answers go). What you see is what you
// approve: an approval whose arguments the tab cannot show whole offers Deny
// and the console, no Approve. Pure: no I/O, so every rule is unit-tested.
import type { AnyHomeTabBlock, Button, HomeTabView } from "slack-web-api-client";
import { type ApprovalPolicyFields, type Decider, effectivePolicy, hasVoted, refusalOf, runRequester } from "../policy/approval-policy";
import { type Person, personOf } from "../policy/persons";
import { ACTION_APPROVE, ACTION_DENY, ACTION_INPUT_ANSWER, type ApprovalButtonValue, type InputButtonValue } from "./blocks";
import { ACTION_INPUT_DECLINE } from "./question-form";
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
  /** The requester's person as the run object compares it (null or absent: their principal alone). */
  requester_person?: Person | undefined;
  /** The person the run was started for by an adapter, when it named one. */
  on_behalf_of?: string | undefined;
  /** The arguments as the engine redacted them (compact JSON). */
  arguments_json: string;
  expires_at: string;
  /** Contract section 19: the principals whose approve counted so far (the listing's `approvals`), in order. */
  voted_by?: readonly string[] | undefined;
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

/**
 * A pending question an MCP tool asked mid-call (contract section 21), of a Slack-started run:
 * answerable only by a principal eligible to approve its call, judged as an approval of that tool is.
 */
export interface HomeFormQuestion {
  kind: "form_question";
  run_id: string;
  tool_call_id: string;
  input_id: string;
  /** The tool whose call asked: its policy says who may answer. */
  tool_name: string;
  channel_id: string;
  question: string;
  /** Whether its requested_schema is a form Slack can show (src/client/requested-form.ts); else Decline and the console. */
  answerable: boolean;
  requester: string;
  requested_by?: string | undefined;
  requester_person?: Person | undefined;
  on_behalf_of?: string | undefined;
  expires_at: string;
}

export type HomeItem = HomeApproval | HomeQuestion | HomeFormQuestion;

/** The host's rules the tab decides by. */
export interface HomeRules {
  TOOL_POLICY: Readonly<Record<string, ApprovalPolicyFields>>;
  APPROVER_GROUPS: Readonly<Record<string, readonly string[]>>;
  SLACK_APPROVERS: readonly string[];
}

/** Items listed at most: each takes at most four blocks, and a Home view holds at most 100 (3 more: header, count, "more"). */
const HOME_ITEMS_MAX = 24;
/** The most of an approval's arguments' JSON the tab shows; longer ones are seen in the console. */
export const HOME_ARGUMENTS_SHOWN_MAX_CHARS = 1_000;
const SECTION_TEXT_MAX_CHARS = 3_000;
const NAME_MAX_CHARS = 200;
const BUTTON_VALUE_MAX_CHARS = 2_000;

/** Who the tab is for: the Slack user, their principal (contract section 18), the installation's team, and their person. */
export interface HomeViewer {
  user: string;
  principal: string;
  team: string;
  /** Their person from users.info (src/slack/slack-persons.ts), as a click of theirs would be judged; null: nobody. */
  person: Person;
}

/**
 * An approval the viewer may decide; `may_approve` false when only their deny would be taken, and
 * `approve_refused` why: self_approval: false, or their approve already counted (a two-person approval).
 */
type DecidableApproval = HomeApproval & { may_approve: boolean; approve_refused?: "self_approval_forbidden" | "already_voted" };
export type DecidableItem = DecidableApproval | HomeQuestion | HomeFormQuestion;

/**
 * The items `viewer` may decide, by the rule a click of theirs is judged by
 * (src/policy/approval-policy.ts refusalOf, with the same decider and
 * requester): approvals they are eligible for, marked whether their approve
 * would be taken; human__ask questions by the default rule (approvers do not
 * govern answers); an MCP question when they are eligible to approve its call
 * (the engine's rule for its answer: a deny of that tool would be taken).
 */
export function decidableBy(viewer: HomeViewer, items: readonly HomeItem[], rules: HomeRules): DecidableItem[] {
  const isListed = approverPrincipals(rules.SLACK_APPROVERS, viewer.team).includes(viewer.principal);
  const requesterOf = (item: HomeItem) => item.requested_by ?? slackPrincipal(viewer.team, item.requester);
  const decider: Decider = { via: "slack", principal_id: viewer.principal, person: viewer.person, listed_in_slack_approvers: isListed };
  return items.flatMap((item): DecidableItem[] => {
    if (item.kind === "question") return requesterOf(item) === viewer.principal || isListed ? [item] : [];
    const asked = {
      policy: effectivePolicy(rules.TOOL_POLICY, item.tool_name),
      groups: rules.APPROVER_GROUPS,
      decider,
      requester: runRequester({
        user_id: item.requester,
        requested_by: requesterOf(item),
        source: "slack",
        requester_person: item.requester_person ?? undefined,
        on_behalf_of: item.on_behalf_of,
      }),
    };
    // A deny is refused only when they are no approver at all; an approve also by self_approval: false.
    if (refusalOf({ ...asked, decision: "deny" }) !== null) return [];
    if (item.kind === "form_question") return [item];
    const refused = refusalOf({ ...asked, decision: "approve" });
    if (refused === "self_approval_forbidden") return [{ ...item, may_approve: false, approve_refused: refused }];
    // The click's own duplicate_vote rule: a person whose approve counted is offered no second one.
    const votes = (item.voted_by ?? []).map((by) => ({ by, person: personOf(by) ?? undefined }));
    if (hasVoted(decider, votes)) return [{ ...item, may_approve: false, approve_refused: "already_voted" }];
    return [{ ...item, may_approve: true }];
  });
}

/** What the tab shows, as one string: publishing again is skipped when it is unchanged. */
export function homeDigest(items: readonly DecidableItem[]): string {
  return JSON.stringify(
    items.map((i) =>
      i.kind === "approval"
        ? ["a", i.run_id, i.approval_id, i.may_approve, i.approve_refused ?? null]
        : i.kind === "form_question"
          ? ["f", i.run_id, i.input_id, i.answerable]
          : ["q", i.run_id, i.tool_call_id],
    ),
  );
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

function approvalBlocks(item: DecidableApproval, consoleOrigin: string | undefined): AnyHomeTabBlock[] {
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
  const link = consoleLink(consoleOrigin, `runs/${encodeURIComponent(item.run_id)}/approvals/${encodeURIComponent(item.approval_id)}`);
  const shown = whole
    ? mrkdwn`\`\`\`${untrusted(args, SECTION_TEXT_MAX_CHARS - 6)}\`\`\``
    : mrkdwn`:scissors: Its arguments (${args.length} characters) are too long to show here: see them whole in the console or the thread before you approve; from here you can only deny.`;
  const why =
    item.approve_refused === "already_voted"
      ? mrkdwn`:ballot_box_with_check: Your approval is counted: another person must approve this call. You may still deny it.`
      : mrkdwn`:no_entry: This tool forbids self-approval: another person must approve this call (it was asked for by you, or Slack did not confirm who you are). You may deny it.`;
  const notYours: AnyHomeTabBlock[] = item.may_approve ? [] : [{ type: "context", elements: [{ type: "mrkdwn", text: why }] }];
  return [
    {
      type: "section",
      text: {
        type: "mrkdwn",
        text: mrkdwn`*\`${untrustedCode(item.tool_name, NAME_MAX_CHARS)}\`* needs approval (\`${untrustedCode(item.level, 20)}\`) in <#${untrustedCode(item.channel_id, 40)}> · asked by <@${untrustedCode(item.requester, 40)}> · expires ${slackDate(item.expires_at)}`,
      },
    },
    { type: "section", text: { type: "mrkdwn", text: shown } },
    ...notYours,
    {
      type: "actions",
      block_id: `home-approval:${item.approval_id}`.slice(0, 255),
      elements: whole && item.may_approve ? [approve, deny, ...link] : [deny, ...link],
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

/** An MCP question: Answer… opens the modal built from its schema (src/slack/question-form.ts), Decline declines; the thread's values. */
function formQuestionBlocks(item: HomeFormQuestion, consoleOrigin: string | undefined): AnyHomeTabBlock[] {
  const value = buttonValue({ run_id: item.run_id, tool_call_id: item.tool_call_id, input_id: item.input_id, channel_id: item.channel_id });
  const answer: Button = {
    type: "button",
    action_id: ACTION_INPUT_ANSWER,
    style: "primary",
    text: { type: "plain_text", text: "Answer…" },
    value,
  };
  const decline: Button = { type: "button", action_id: ACTION_INPUT_DECLINE, text: { type: "plain_text", text: "Decline" }, value };
  const link = consoleLink(consoleOrigin, `runs/${encodeURIComponent(item.run_id)}`);
  const notShown: AnyHomeTabBlock[] = item.answerable
    ? []
    : [
        {
          type: "context",
          elements: [{ type: "mrkdwn", text: mrkdwn`This form cannot be shown in Slack: answer it in the console, or decline.` }],
        },
      ];
  return [
    {
      type: "section",
      text: {
        type: "mrkdwn",
        text: mrkdwn`:question: ${untrusted(item.question, SECTION_TEXT_MAX_CHARS - 400)} · asked by *\`${untrustedCode(item.tool_name, NAME_MAX_CHARS)}\`* in <#${untrustedCode(item.channel_id, 40)}> · expires ${slackDate(item.expires_at)}`,
      },
    },
    ...notShown,
    {
      type: "actions",
      block_id: `home-form:${item.run_id}:${item.input_id}`.slice(0, 255),
      elements: item.answerable ? [answer, decline, ...link] : [decline, ...link],
    },
  ];
}

const itemBlocks = (item: DecidableItem, consoleOrigin: string | undefined): AnyHomeTabBlock[] =>
  item.kind === "approval"
    ? approvalBlocks(item, consoleOrigin)
    : item.kind === "form_question"
      ? formQuestionBlocks(item, consoleOrigin)
      : questionBlocks(item);

/** An active halt as the tab's top line names it (contract section 23). */
export interface HomeHalt {
  halt_id: string;
  scope: string;
}

/** Contract section 23: the line atop the tab naming the active halts. */
function homeHaltsText(halts: readonly HomeHalt[]): string {
  const named = joined(
    halts.map((h) => mrkdwn`${untrustedCode(h.halt_id, 100)} (${untrustedCode(h.scope, 200)})`),
    ", ",
  );
  return mrkdwn`:octagonal_sign: Mutations are halted: ${named}. Calls in scope are not sent, and approving them is refused until an admin releases the halt.`;
}

/**
 * The Home tab of one user: the active halts first (contract section 23), then what
 * they may decide, newest last, or that nothing waits for them.
 */
export function homeView(items: readonly DecidableItem[], consoleOrigin?: string, halts: readonly HomeHalt[] = []): HomeTabView {
  const listedItems = items.slice(0, HOME_ITEMS_MAX);
  const more = items.length - listedItems.length;
  const blocks: AnyHomeTabBlock[] = [
    ...(halts.length > 0 ? [{ type: "section" as const, text: { type: "mrkdwn" as const, text: homeHaltsText(halts) } }] : []),
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
  for (const item of listedItems) blocks.push(...itemBlocks(item, consoleOrigin));
  if (more > 0) blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: mrkdwn`And ${more} more: see the console.` }] });
  return { type: "home", blocks };
}

/** The "Open in the console" button to `#/<route>`, or none when the console is off. */
function consoleLink(consoleOrigin: string | undefined, route: string): Button[] {
  if (consoleOrigin === undefined) return [];
  return [
    {
      type: "button",
      action_id: "home_open_console",
      text: { type: "plain_text", text: "Open in the console" },
      url: `${consoleOrigin}/console#/${route}`,
    },
  ];
}
