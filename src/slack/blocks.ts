// Block Kit rendering of everything the Slack app shows (contract section 14):
// the messages the outbox posts for a run's events, their updated forms, and
// the two modals. Pure: no I/O, no clocks, no Cloudflare imports, so every
// shape is unit-tested as data. Block Kit types come from slack-web-api-client.
import { slackUserOf } from "./slack-principal";
import type { AnyMessageBlock, Button, ModalView, SectionBlock } from "slack-web-api-client";
import { redactSecrets } from "../execution/redaction";
import { channelMention, joined, mention, mrkdwn, type SlackText, slackDate, untrusted, untrustedCode } from "./slack-text";

/** action_ids Slack sends back on a click (contract section 14). */
export const ACTION_APPROVE = "approval_approve";
export const ACTION_DENY = "approval_deny";
export const ACTION_INPUT_ANSWER = "input_answer";
/** The link button to the approval in the console (a URL button: Slack still sends a click, acknowledged and ignored). */
const ACTION_OPEN_CONSOLE = "approval_open_console";
/** callback_ids of the two modals, and the one input each holds. */
export const VIEW_CONFIRM_APPROVAL = "approval_confirm";
export const VIEW_INPUT_ANSWER = "input_answer";
export const MODAL_INPUT_BLOCK_ID = "answer";
export const MODAL_INPUT_ACTION_ID = "text";

/** Slack refuses a section text over 3000 characters; the rest of the block needs room for the code fence. */
export const SECTION_TEXT_MAX_CHARS = 3_000;
/**
 * The most of the arguments' JSON an approval message shows (contract section 19). A message
 * that has to cut shows how much it leaves out and offers no Approve button.
 */
export const ARGUMENTS_SHOWN_MAX_CHARS = 2_500;
/** One code block's text before escaping, counted at its escaped size, so the section never cuts it. */
const ARGUMENTS_BLOCK_BUDGET_CHARS = SECTION_TEXT_MAX_CHARS - 100;
/** The approvers an approval message mentions at most (a mention is 14 characters: 50 fit a section and the fallback text). */
const MENTIONS_MAX = 50;
/** The hidden paths listed by name (each cut at HIDDEN_PATH_MAX_CHARS, so the list fits one section); the rest are counted. */
const HIDDEN_PATHS_LISTED_MAX = 10;
const HIDDEN_PATH_MAX_CHARS = 200;
/** Slack truncates a message's `text` past 40 000 characters; stay under it with room for a note. */
const MESSAGE_TEXT_MAX_CHARS = 39_000;
/** A modal's title is at most 24 characters; a plain_text_input at most 3000. */
const MODAL_TITLE_MAX_CHARS = 24;
const MODAL_INPUT_MAX_CHARS = 3_000;
/** Slack caps private_metadata and a button's value at 3000 and 2000 characters. */
const PRIVATE_METADATA_MAX_CHARS = 3_000;
const BUTTON_VALUE_MAX_CHARS = 2_000;

type ApprovalLevel = "approve" | "confirm";
export type ApprovalDecision = "approved" | "denied" | "expired" | "cancelled";

/** One message as chat.postMessage / chat.update take it: fallback text plus blocks, all built by slack-text.ts. */
export interface RenderedMessage {
  text: SlackText;
  blocks?: AnyMessageBlock[];
}

/** A tool name, id or code as shown in inline code; names are short, so a long one is cut. */
const NAME_MAX_CHARS = 200;
/** The fallback text of a message that has blocks: Slack shows it in notifications only. */
const FALLBACK_MAX_CHARS = 300;
const code = (text: string) => untrustedCode(text, NAME_MAX_CHARS);

/** What an approval message shows; kept so its decided form can show it again without buttons. */
export interface ApprovalView {
  run_id: string;
  approval_id: string;
  tool_name: string;
  level: ApprovalLevel;
  /** The redacted arguments' JSON as shown: whole, or its first ARGUMENTS_SHOWN_MAX_CHARS characters. */
  arguments_preview: string;
  /** How many characters of the arguments' JSON the message leaves out (absent or 0: shown whole). */
  arguments_omitted_chars?: number;
  /** The values the engine withheld as secrets (approval_requested.hidden). Absent in older memory. */
  hidden?: { path: string; chars: number }[];
  /** The Slack users the tool's policy names (contract section 19): mentioned in the request. */
  approver_mentions?: string[];
  /** The approval in the console (PUBLIC_URL, else the origin the run's Slack event came to). */
  console_url?: string;
  expires_at: string;
  /** The server gave the tool `destructiveHint: true` (contract section 21): marked "Destructive". Absent in older memory. */
  destructive?: boolean;
  /** Contract section 19: distinct persons that must approve (absent: 1), and who voted so far, in order. */
  required?: number;
  votes?: string[];
  /** Contract section 24: when the reminder was appended (the message then says how long was left). Absent: not reminded. */
  reminded_at?: string;
  /** Contract section 24: escalated; the Slack users its `escalate_to` names by exact id are mentioned. Absent: not escalated. */
  escalated_mentions?: string[];
}

/** The value carried by approve/deny buttons and read back on the click. */
export interface ApprovalButtonValue {
  run_id: string;
  approval_id: string;
  level: ApprovalLevel;
  /** The run's channel, on Home tab buttons (no message to answer beside): the ephemeral answer goes there. */
  channel_id?: string;
}
/** The value carried by the input_answer button. */
export interface InputButtonValue {
  run_id: string;
  tool_call_id: string;
  /** As on ApprovalButtonValue: set on Home tab buttons. */
  channel_id?: string;
}

function truncate(text: string, max: number, note = "… (truncated)"): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - note.length))}${note}`;
}

/**
 * A Slack principal (`slack:<team>:<user>`, or `slack:<user>` recorded before
 * principals) → a mention of its user; anything else (an API or console
 * principal) as inline code.
 */
export function renderPerson(decidedBy: string | undefined): SlackText {
  if (decidedBy === undefined) return mrkdwn`someone`;
  const user = slackUserOf(decidedBy);
  return user !== null ? mention(user) : mrkdwn`\`${code(decidedBy)}\``;
}

/**
 * The arguments' JSON as an approval message shows it: redacted again (the engine already did;
 * redaction is idempotent, and a post must never carry a secret), whole when it fits in
 * ARGUMENTS_SHOWN_MAX_CHARS, else its start and the count of characters left out. Kept raw in the
 * posts' memory: it is escaped where it is shown.
 */
export function argumentsPreview(args: unknown): Pick<ApprovalView, "arguments_preview" | "arguments_omitted_chars"> {
  const json = JSON.stringify(redactSecrets(args ?? {}), null, 2) ?? "{}";
  if (json.length <= ARGUMENTS_SHOWN_MAX_CHARS) return { arguments_preview: json, arguments_omitted_chars: 0 };
  // Cut between code points, never inside a surrogate pair.
  let shown = json.slice(0, ARGUMENTS_SHOWN_MAX_CHARS);
  if (/[\uD800-\uDBFF]$/.test(shown)) shown = shown.slice(0, -1);
  return { arguments_preview: shown, arguments_omitted_chars: json.length - shown.length };
}

/** The message cut the arguments: no Approve button (contract section 19). */
function argumentsCut(view: ApprovalView): boolean {
  return (view.arguments_omitted_chars ?? 0) > 0;
}

/** What a character of untrusted text costs once escaped and its fences broken (at most). */
function escapedCost(ch: string): number {
  if (ch === "&") return 5;
  if (ch === "<" || ch === ">") return 4;
  if (ch === "`") return 2;
  return ch.length;
}

/** `text` in pieces whose escaped form fits one section's code block, so no piece is cut by escaping. */
function blockPieces(text: string): string[] {
  const pieces: string[] = [];
  let piece = "";
  let cost = 0;
  for (const ch of text) {
    const c = escapedCost(ch);
    if (cost + c > ARGUMENTS_BLOCK_BUDGET_CHARS) {
      pieces.push(piece);
      piece = "";
      cost = 0;
    }
    piece += ch;
    cost += c;
  }
  pieces.push(piece);
  return pieces;
}

function section(text: SlackText, blockId?: string): SectionBlock {
  return { type: "section", text: { type: "mrkdwn", text }, ...(blockId ? { block_id: blockId } : {}) };
}

function context(text: SlackText): AnyMessageBlock {
  return { type: "context", elements: [{ type: "mrkdwn", text }] };
}

export function assistantText(text: string): RenderedMessage {
  return { text: untrusted(text, MESSAGE_TEXT_MAX_CHARS) };
}

function approvalHeader(view: ApprovalView): SlackText {
  const level = view.level === "confirm" ? mrkdwn`approval with confirmation (type the tool name)` : mrkdwn`approval`;
  return mrkdwn`${destructiveMark(view)}*\`${code(view.tool_name)}\`* needs your ${level}.`;
}

/** The app's own words before a destructive tool's name; nothing for any other. */
function destructiveMark(view: ApprovalView): SlackText {
  return view.destructive === true ? mrkdwn`:warning: *Destructive* · ` : mrkdwn``;
}

/**
 * The shown arguments in the app's code blocks (escaped, fences broken; as many sections as the
 * escaped text needs, so escaping never cuts it), then what is left out and what is withheld.
 */
function argumentsBlocks(view: ApprovalView): AnyMessageBlock[] {
  const blocks: AnyMessageBlock[] = blockPieces(view.arguments_preview).map((piece) =>
    section(mrkdwn`\`\`\`${untrusted(piece, SECTION_TEXT_MAX_CHARS - 6)}\`\`\``),
  );
  if (argumentsCut(view)) {
    blocks.push(
      section(
        mrkdwn`:scissors: *${view.arguments_omitted_chars ?? 0} characters of the arguments are not shown here.* See them whole in the console before you approve; from Slack you can only deny.`,
      ),
    );
  }
  const hidden = view.hidden ?? [];
  if (hidden.length > 0) {
    const listed = hidden
      .slice(0, HIDDEN_PATHS_LISTED_MAX)
      .map((h) => mrkdwn`\`${untrustedCode(h.path === "" ? "(all arguments)" : h.path, HIDDEN_PATH_MAX_CHARS)}\` (${h.chars} characters)`);
    const more = hidden.length - listed.length;
    blocks.push(
      section(
        mrkdwn`:lock: Withheld as secrets (the tool gets them): ${joined(listed, ", ")}${more > 0 ? mrkdwn` and ${more} more` : mrkdwn``}`,
      ),
    );
  }
  return blocks;
}

export function approvalRequest(view: ApprovalView): RenderedMessage {
  const value = (value: ApprovalButtonValue) => truncate(JSON.stringify(value), BUTTON_VALUE_MAX_CHARS, "");
  const buttonValue = value({ run_id: view.run_id, approval_id: view.approval_id, level: view.level });
  const approve: Button = {
    type: "button",
    action_id: ACTION_APPROVE,
    style: "primary",
    text: { type: "plain_text", text: view.level === "confirm" ? "Approve…" : "Approve" },
    value: buttonValue,
  };
  const deny: Button = {
    type: "button",
    action_id: ACTION_DENY,
    style: "danger",
    text: { type: "plain_text", text: "Deny" },
    value: buttonValue,
  };
  const openConsole: Button | undefined =
    view.console_url === undefined
      ? undefined
      : {
          type: "button",
          action_id: ACTION_OPEN_CONSOLE,
          text: { type: "plain_text", text: "Open in the console" },
          url: view.console_url,
        };
  // A message that cut the arguments cannot be approved from: what you see is what you approve.
  const buttons: Button[] = argumentsCut(view)
    ? [deny, ...(openConsole ? [openConsole] : [])]
    : [approve, deny, ...(openConsole ? [openConsole] : [])];
  const mentions = (view.approver_mentions ?? []).slice(0, MENTIONS_MAX);
  const asked = mentions.length === 0 ? undefined : joined(mentions.map(mention), ", ");
  return {
    text:
      asked === undefined
        ? mrkdwn`Approval needed: ${untrusted(view.tool_name, FALLBACK_MAX_CHARS)}`
        : mrkdwn`Approval needed: ${untrusted(view.tool_name, FALLBACK_MAX_CHARS)} (${asked})`,
    blocks: [
      section(approvalHeader(view)),
      ...(asked === undefined ? [] : [section(mrkdwn`:bell: Approvers: ${asked}`)]),
      ...argumentsBlocks(view),
      context(mrkdwn`Level: \`${code(view.level)}\` · expires ${slackDate(view.expires_at)} · approval \`${code(view.approval_id)}\``),
      ...nudgeBlocks(view),
      ...votesBlocks(view),
      { type: "actions", block_id: `approval:${view.approval_id}`, elements: buttons },
    ],
  };
}

/**
 * Contract section 24, under a waiting approval or question: how long was left when it was reminded
 * (with the absolute time, which stays true as the message ages), and whom it was escalated to.
 */
export function nudgeBlocks(view: { reminded_at?: string; escalated_mentions?: string[]; expires_at: string }): AnyMessageBlock[] {
  const blocks: AnyMessageBlock[] = [];
  if (view.escalated_mentions !== undefined) {
    const named = view.escalated_mentions.slice(0, MENTIONS_MAX).map(mention);
    blocks.push(
      section(
        named.length === 0
          ? mrkdwn`:arrow_double_up: *Escalated*: it waited too long; more approvers may decide it now.`
          : mrkdwn`:arrow_double_up: *Escalated* to ${joined(named, ", ")}: you may decide it now.`,
      ),
    );
  }
  if (view.reminded_at !== undefined) {
    const left = Date.parse(view.expires_at) - Date.parse(view.reminded_at);
    blocks.push(context(mrkdwn`:alarm_clock: Reminder: ${durationWords(left)} left to decide (expires ${slackDate(view.expires_at)}).`));
  }
  return blocks;
}

/** A span of time as a person says it: "2 hours 5 minutes", "5 minutes", "30 seconds" (whole units, largest two). */
function durationWords(ms: number): SlackText {
  let seconds = Math.max(0, Math.round(ms / 1000));
  const parts: string[] = [];
  for (const [unit, size] of [
    ["day", 86_400],
    ["hour", 3_600],
    ["minute", 60],
    ["second", 1],
  ] as const) {
    const n = Math.floor(seconds / size);
    seconds -= n * size;
    if (n > 0 && parts.length < 2) parts.push(`${n} ${unit}${n === 1 ? "" : "s"}`);
  }
  return untrusted(parts.length === 0 ? "no time" : parts.join(" "), NAME_MAX_CHARS);
}

/** Contract section 24: the thread post that tells the escalated approvers (a message's edit notifies nobody). */
export function approvalEscalated(view: ApprovalView): RenderedMessage {
  const named = (view.escalated_mentions ?? []).slice(0, MENTIONS_MAX).map(mention);
  const who = named.length === 0 ? mrkdwn`More approvers` : joined(named, ", ");
  return {
    text: mrkdwn`Escalated: ${untrusted(view.tool_name, FALLBACK_MAX_CHARS)} waits for a decision`,
    blocks: [
      section(
        mrkdwn`:arrow_double_up: *\`${code(view.tool_name)}\`* waited too long for a decision and is escalated. ${who}: you may decide it now, above in this thread.`,
      ),
    ],
  };
}

/** What a reminder's direct message is about: the approval or the question, where it waits, and until when. */
export interface ReminderDirect {
  what: "approval" | "question";
  tool_name: string;
  channel_id: string;
  expires_at: string;
  reminded_at: string;
  console_url?: string;
}

/**
 * Contract section 24: the direct message to a Slack user eligible by exact id. It names the tool,
 * the channel whose thread holds the buttons, and how long is left; a console link when there is one.
 */
export function reminderDirect(reminder: ReminderDirect): RenderedMessage {
  const left = durationWords(Date.parse(reminder.expires_at) - Date.parse(reminder.reminded_at));
  const what = reminder.what === "approval" ? mrkdwn`your decision` : mrkdwn`your answer`;
  const text = mrkdwn`:alarm_clock: *\`${code(reminder.tool_name)}\`* waits for ${what} in ${channelMention(reminder.channel_id)}: ${left} left (expires ${slackDate(reminder.expires_at)}).`;
  return {
    text: mrkdwn`Reminder: ${untrusted(reminder.tool_name, FALLBACK_MAX_CHARS)} waits for ${what}, ${left} left`,
    blocks: [
      section(text),
      ...(reminder.console_url === undefined
        ? []
        : [
            {
              type: "actions" as const,
              elements: [
                {
                  type: "button" as const,
                  action_id: ACTION_OPEN_CONSOLE,
                  text: { type: "plain_text" as const, text: "Open in the console" },
                  url: reminder.console_url,
                },
              ],
            },
          ]),
    ],
  };
}

/** "1 of 2: <@U…>" under a message whose call needs several persons (contract section 19); nothing for one. */
function votesBlocks(view: ApprovalView): AnyMessageBlock[] {
  const required = view.required ?? 1;
  if (required <= 1) return [];
  const votes = view.votes ?? [];
  const who = votes.length === 0 ? mrkdwn`no approval yet` : joined(votes.map(renderPerson), ", ");
  return [context(mrkdwn`${votes.length} of ${required}: ${who}`)];
}

/** The decided form of an approval message: who decided, and why when they said (the engine already redacted `reason`). */
export function approvalResolved(
  view: ApprovalView,
  decision: ApprovalDecision,
  decidedBy: string | undefined,
  reason?: string,
): RenderedMessage {
  const outcome = ((): SlackText => {
    switch (decision) {
      case "approved":
        return mrkdwn`:white_check_mark: Approved by ${renderPerson(decidedBy)}.`;
      case "denied":
        return mrkdwn`:no_entry: Denied by ${renderPerson(decidedBy)}.`;
      case "expired":
        return mrkdwn`:hourglass: Expired: nobody decided in time. Nothing ran.`;
      case "cancelled":
        return mrkdwn`:octagonal_sign: Cancelled with the run. Nothing ran.`;
    }
  })();
  return {
    text: mrkdwn`${untrusted(view.tool_name, FALLBACK_MAX_CHARS)}: ${code(decision)}`,
    blocks: [
      section(mrkdwn`${destructiveMark(view)}*\`${code(view.tool_name)}\`* (${code(view.level)})`),
      ...argumentsBlocks(view),
      section(outcome),
      ...(reason === undefined || reason === "" ? [] : [section(mrkdwn`*Reason:* ${untrusted(reason, SECTION_TEXT_MAX_CHARS)}`)]),
      context(mrkdwn`approval \`${code(view.approval_id)}\``),
    ],
  };
}

export function inputRequest(runId: string, toolCallId: string, question: string, expiresAt: string): RenderedMessage {
  const value: InputButtonValue = { run_id: runId, tool_call_id: toolCallId };
  return {
    text: mrkdwn`Question: ${untrusted(question, FALLBACK_MAX_CHARS)}`,
    blocks: [
      section(mrkdwn`:question: ${untrusted(question, SECTION_TEXT_MAX_CHARS - 12)}`),
      context(mrkdwn`expires ${slackDate(expiresAt)}`),
      {
        type: "actions",
        block_id: `input:${toolCallId}`,
        elements: [
          {
            type: "button",
            action_id: ACTION_INPUT_ANSWER,
            style: "primary",
            text: { type: "plain_text", text: "Answer" },
            value: truncate(JSON.stringify(value), BUTTON_VALUE_MAX_CHARS, ""),
          },
        ],
      },
    ],
  };
}

export function inputAnswered(question: string, answeredBy: string): RenderedMessage {
  return {
    text: mrkdwn`Answered by ${untrusted(answeredBy, FALLBACK_MAX_CHARS)}`,
    blocks: [
      section(mrkdwn`:question: ${untrusted(question, SECTION_TEXT_MAX_CHARS - 12)}`),
      section(mrkdwn`:speech_balloon: Answered by ${renderPerson(answeredBy)}.`),
    ],
  };
}

/** The contract's not_executed reasons, spelled out for a person. */
const NOT_EXECUTED_REASONS: Record<string, string> = {
  denied: "it was denied",
  expired: "it expired before it could run",
  cancelled: "the run was cancelled",
  call_ceiling: "the run reached its tool-call ceiling",
  not_in_budget: "this tool is not in the mutation budget",
  budget_exhausted: "this tool's mutation budget is used up",
  storage_unavailable: "durable storage was unavailable, so it was not sent",
  replay_blocked: "it was already recorded once and is never replayed",
  prior_outcome_unknown:
    "an earlier identical call has not settled (it may be waiting for an answer) or its outcome is unknown; wait for it, or reconcile it if unknown",
  transport_unavailable: "the tool's server could not be reached; nothing was sent",
  authorization_required: "the tool's server needs an admin to connect it (OAuth); nothing was run",
  // Contract section 23: the tool is gone, or listed with another tool_digest, since it was approved.
  tool_changed: "the tool's schema changed after it was approved; nothing was sent",
};

export function mutationNotExecuted(toolName: string, reason: string): RenderedMessage {
  const why = untrusted(NOT_EXECUTED_REASONS[reason] ?? "it was stopped", NAME_MAX_CHARS);
  return {
    text: mrkdwn`${untrusted(toolName, NAME_MAX_CHARS)} did not run: ${untrusted(reason, NAME_MAX_CHARS)}`,
    blocks: [section(mrkdwn`:heavy_minus_sign: *\`${code(toolName)}\`* did not run: ${why} (\`${code(reason)}\`).`)],
  };
}

export function mutationFailed(toolName: string, errorCode: string): RenderedMessage {
  return {
    text: mrkdwn`${untrusted(toolName, NAME_MAX_CHARS)} failed: ${untrusted(errorCode, NAME_MAX_CHARS)}`,
    blocks: [section(mrkdwn`:x: *\`${code(toolName)}\`* ran and reported an error: \`${code(errorCode)}\`.`)],
  };
}

export function mutationSucceeded(toolName: string): RenderedMessage {
  return {
    text: mrkdwn`${untrusted(toolName, NAME_MAX_CHARS)} completed`,
    blocks: [section(mrkdwn`:white_check_mark: *\`${code(toolName)}\`* completed.`)],
  };
}

export function mutationOutcomeUnknown(toolName: string, mutationId: string, errorCode: string): RenderedMessage {
  return {
    text: mrkdwn`${untrusted(toolName, NAME_MAX_CHARS)}: outcome unknown (${untrusted(mutationId, NAME_MAX_CHARS)}), needs reconciliation`,
    blocks: [
      section(
        mrkdwn`:warning: *\`${code(toolName)}\`* was sent, but its answer was lost (\`${code(errorCode)}\`): it *may or may not have happened*. It will not be retried.`,
      ),
      section(
        mrkdwn`Mutation \`${code(mutationId)}\` needs reconciliation: check the target system, then \`POST /api/mutations/${code(mutationId)}/reconcile\` with what you found.`,
      ),
    ],
  };
}

export function runFailed(errorCode: string, message: string): RenderedMessage {
  const text =
    errorCode === "cancelled"
      ? mrkdwn`:octagonal_sign: The run was cancelled.`
      : mrkdwn`:x: The run failed (\`${code(errorCode)}\`): ${untrusted(message, SECTION_TEXT_MAX_CHARS - NAME_MAX_CHARS - 40)}`;
  return { text: mrkdwn`Run failed: ${untrusted(errorCode, FALLBACK_MAX_CHARS)}`, blocks: [section(text)] };
}

/** The confirm modal: one plain_text_input asking for the tool name. */
export function confirmApprovalModal(toolName: string, privateMetadata: string): ModalView {
  return {
    type: "modal",
    callback_id: VIEW_CONFIRM_APPROVAL,
    private_metadata: truncate(privateMetadata, PRIVATE_METADATA_MAX_CHARS, ""),
    title: { type: "plain_text", text: truncate("Confirm approval", MODAL_TITLE_MAX_CHARS) },
    submit: { type: "plain_text", text: "Approve" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      section(mrkdwn`Approving *\`${code(toolName)}\`* needs confirmation. Type the tool name exactly to approve it.`),
      {
        type: "input",
        block_id: MODAL_INPUT_BLOCK_ID,
        label: { type: "plain_text", text: "Tool name" },
        element: {
          type: "plain_text_input",
          action_id: MODAL_INPUT_ACTION_ID,
          max_length: 200,
          placeholder: { type: "plain_text", text: toolName.slice(0, 150) },
        },
      },
    ],
  };
}

/** The human__ask modal: the question and one plain_text_input for the answer. */
export function answerInputModal(question: string, privateMetadata: string): ModalView {
  return {
    type: "modal",
    callback_id: VIEW_INPUT_ANSWER,
    private_metadata: truncate(privateMetadata, PRIVATE_METADATA_MAX_CHARS, ""),
    title: { type: "plain_text", text: "Answer the agent" },
    submit: { type: "plain_text", text: "Send" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      section(untrusted(question, SECTION_TEXT_MAX_CHARS)),
      {
        type: "input",
        block_id: MODAL_INPUT_BLOCK_ID,
        label: { type: "plain_text", text: "Your answer" },
        element: { type: "plain_text_input", action_id: MODAL_INPUT_ACTION_ID, multiline: true, max_length: MODAL_INPUT_MAX_CHARS },
      },
    ],
  };
}

export const CONFIRMATION_MISMATCH_TEXT = "That is not the tool name. Type it exactly as shown to approve, or cancel.";
