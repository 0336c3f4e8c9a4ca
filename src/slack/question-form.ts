// An MCP server's question mid-call in Slack (contract sections 14 and 21):
// the thread message with Answer and Decline, the modal whose inputs are
// built from the question's `requested_schema` (src/client/requested-form.ts;
// a multi-select enum as a multi_static_select),
// the values read back from a submission's view.state.values, and the
// per-block errors a bad submission answers. Pure, like blocks.ts.
import type { AnyMessageBlock, ModalView, PlainTextOption } from "slack-web-api-client";
import type { EnteredValue, FormField } from "../client/requested-form";
import { ACTION_INPUT_ANSWER, nudgeBlocks, type RenderedMessage, renderPerson } from "./blocks";
import { mrkdwn, slackDate, untrusted, untrustedCode } from "./slack-text";

/** The Decline button beside Answer on a form question's message; the modal's callback_id. */
export const ACTION_INPUT_DECLINE = "input_decline";
export const VIEW_INPUT_FORM = "input_form";
/** Each field's input block is `field:<index in the form>`, its element's action_id this. */
const FIELD_ACTION_ID = "value";
const fieldBlockId = (index: number) => `field:${index}`;

/** Slack's limits: a section's text 3000, a label 2000, a hint 2000, an option's text 75 and value 150, a select's options 100. */
const SECTION_TEXT_MAX_CHARS = 3_000;
const LABEL_MAX_CHARS = 2_000;
const HINT_MAX_CHARS = 2_000;
const OPTION_TEXT_MAX_CHARS = 75;
const OPTION_VALUE_MAX_CHARS = 150;
const SELECT_OPTIONS_MAX = 100;
const PLAIN_TEXT_INPUT_MAX_CHARS = 3_000;
const PRIVATE_METADATA_MAX_CHARS = 3_000;
const BUTTON_VALUE_MAX_CHARS = 2_000;
const FALLBACK_MAX_CHARS = 300;
const NAME_MAX_CHARS = 200;

/** The value of a form question's Answer and Decline buttons, read back on the click. */
interface FormQuestionButtonValue {
  run_id: string;
  tool_call_id: string;
  input_id: string;
  channel_id?: string;
}

/** What the question's message shows; kept by the posts' memory so its answered form can show it again. */
export interface FormQuestionView {
  run_id: string;
  tool_call_id: string;
  input_id: string;
  question: string;
  expires_at: string;
  /** false when the schema is no form Slack can show: the message offers Decline and points to the console. */
  answerable: boolean;
  /** Contract section 24: when it was reminded, and the Slack users its escalation names (as on an approval's message). */
  reminded_at?: string;
  escalated_mentions?: string[];
}

const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
const plain = (text: string, max: number) => ({ type: "plain_text" as const, text: cut(text, max) });

function questionBlock(question: string): AnyMessageBlock {
  return { type: "section", text: { type: "mrkdwn", text: mrkdwn`:question: ${untrusted(question, SECTION_TEXT_MAX_CHARS - 12)}` } };
}

/** The thread message for one form question: the question, when it expires, Answer (opens the modal) and Decline. */
export function formQuestionRequest(view: FormQuestionView): RenderedMessage {
  const value: FormQuestionButtonValue = { run_id: view.run_id, tool_call_id: view.tool_call_id, input_id: view.input_id };
  const encoded = JSON.stringify(value).slice(0, BUTTON_VALUE_MAX_CHARS);
  const answer = {
    type: "button" as const,
    action_id: ACTION_INPUT_ANSWER,
    style: "primary" as const,
    text: plain("Answer…", 75),
    value: encoded,
  };
  const decline = { type: "button" as const, action_id: ACTION_INPUT_DECLINE, text: plain("Decline", 75), value: encoded };
  return {
    text: mrkdwn`Question: ${untrusted(view.question, FALLBACK_MAX_CHARS)}`,
    blocks: [
      questionBlock(view.question),
      ...(view.answerable
        ? []
        : [
            {
              type: "context" as const,
              elements: [
                { type: "mrkdwn" as const, text: mrkdwn`This form cannot be shown in Slack: answer it in the console, or decline.` },
              ],
            },
          ]),
      {
        type: "context",
        elements: [
          {
            type: "mrkdwn",
            text: mrkdwn`expires ${slackDate(view.expires_at)} · question \`${untrustedCode(view.input_id, NAME_MAX_CHARS)}\``,
          },
        ],
      },
      ...nudgeBlocks(view),
      { type: "actions", block_id: `input:${view.input_id}`.slice(0, 255), elements: view.answerable ? [answer, decline] : [decline] },
    ],
  };
}

/** The message once answered: no buttons, who answered, and how (accepted, declined, cancelled). */
export function formQuestionAnswered(
  question: string,
  answeredBy: string,
  action: "accept" | "decline" | "cancel" | undefined,
): RenderedMessage {
  const how =
    action === "decline"
      ? mrkdwn`:no_entry_sign: Declined by ${renderPerson(answeredBy)}.`
      : action === "cancel"
        ? mrkdwn`:heavy_minus_sign: Cancelled by ${renderPerson(answeredBy)}.`
        : mrkdwn`:speech_balloon: Answered by ${renderPerson(answeredBy)}.`;
  return {
    text: mrkdwn`Answered by ${untrusted(answeredBy, FALLBACK_MAX_CHARS)}`,
    blocks: [questionBlock(question), { type: "section", text: { type: "mrkdwn", text: how } }],
  };
}

function option(value: string, label: string): PlainTextOption {
  return { text: plain(label, OPTION_TEXT_MAX_CHARS), value };
}

/** A select holds at most 100 options of values up to 150 characters; a larger enum is typed instead (and checked on submission). */
const selectable = (field: Extract<FormField, { kind: "choice" | "choices" }>) =>
  field.options.length <= SELECT_OPTIONS_MAX && field.options.every((o) => o.value.length <= OPTION_VALUE_MAX_CHARS);

/** The hint under a field: its description, and what a typed value must look like. */
function hintOf(field: FormField): string | undefined {
  const rules: string[] = [];
  if (field.kind === "text" && field.format === "date-time") rules.push("As 2026-12-31T17:00:00Z.");
  if (field.kind === "choice" && !selectable(field)) rules.push(`One of: ${field.options.map((o) => o.value).join(", ")}.`);
  if (field.kind === "choices") {
    if (!selectable(field)) rules.push(`One per line, from: ${field.options.map((o) => o.value).join(", ")}.`);
    if (field.min_items !== undefined && field.min_items > 0) rules.push(`Choose at least ${field.min_items}.`);
    if (field.max_items !== undefined) rules.push(`Choose at most ${field.max_items}.`);
  }
  if (field.kind === "text" && field.min_length !== undefined) rules.push(`At least ${field.min_length} characters.`);
  const text = [field.description ?? "", ...rules].filter((t) => t !== "").join(" ");
  return text === "" ? undefined : text;
}

/** The Block Kit element of one field. */
function elementOf(field: FormField) {
  const action_id = FIELD_ACTION_ID;
  switch (field.kind) {
    case "boolean": {
      const yes = option("true", "Yes");
      const no = option("false", "No");
      const initial = field.default === undefined ? {} : { initial_option: field.default ? yes : no };
      return { type: "radio_buttons" as const, action_id, options: [yes, no], ...initial };
    }
    case "choice": {
      if (!selectable(field)) {
        return { type: "plain_text_input" as const, action_id, ...(field.default ? { initial_value: field.default } : {}) };
      }
      const options = field.options.map((o) => option(o.value, o.label));
      const initial = options.find((o) => o.value === field.default);
      return { type: "static_select" as const, action_id, options, ...(initial ? { initial_option: initial } : {}) };
    }
    case "choices": {
      // A multi-select Slack cannot offer (too many options, or too long) is typed one value per line (enteredValues splits it).
      if (!selectable(field)) {
        const typed = field.default?.join("\n");
        return { type: "plain_text_input" as const, action_id, multiline: true, ...(typed ? { initial_value: typed } : {}) };
      }
      const options = field.options.map((o) => option(o.value, o.label));
      const initial = options.filter((_, i) => field.default?.includes(field.options[i]?.value ?? "") === true);
      return {
        type: "multi_static_select" as const,
        action_id,
        options,
        ...(initial.length > 0 ? { initial_options: initial } : {}),
        // Slack's own cap on what can be picked; the least is checked on submission (readForm).
        ...(field.max_items !== undefined && field.max_items > 0 ? { max_selected_items: field.max_items } : {}),
      };
    }
    case "number":
      return {
        type: "number_input" as const,
        action_id,
        is_decimal_allowed: !field.integer,
        ...(field.minimum !== undefined ? { min_value: String(field.minimum) } : {}),
        ...(field.maximum !== undefined ? { max_value: String(field.maximum) } : {}),
        ...(field.default !== undefined ? { initial_value: String(field.default) } : {}),
      };
    case "text": {
      const initial = field.default === undefined || field.default === "" ? {} : { initial_value: field.default };
      if (field.format === "date") {
        const day = field.default && /^\d{4}-\d{2}-\d{2}$/.test(field.default) ? { initial_date: field.default } : {};
        return { type: "datepicker" as const, action_id, ...day };
      }
      if (field.format === "email") return { type: "email_text_input" as const, action_id, ...initial };
      if (field.format === "uri") return { type: "url_text_input" as const, action_id, ...initial };
      const max = Math.min(field.max_length ?? PLAIN_TEXT_INPUT_MAX_CHARS, PLAIN_TEXT_INPUT_MAX_CHARS);
      return {
        type: "plain_text_input" as const,
        action_id,
        max_length: max,
        ...(field.min_length !== undefined && field.min_length <= max ? { min_length: field.min_length } : {}),
        ...(max > 200 ? { multiline: true } : {}),
        ...initial,
      };
    }
  }
}

/** The modal for one form question: the question, then one input per field (required ones marked by Slack), Send and Cancel. */
export function questionFormModal(question: string, fields: readonly FormField[], privateMetadata: string): ModalView {
  return {
    type: "modal",
    callback_id: VIEW_INPUT_FORM,
    private_metadata: privateMetadata.slice(0, PRIVATE_METADATA_MAX_CHARS),
    title: plain("Answer the tool", 24),
    submit: plain("Send", 24),
    close: plain("Cancel", 24),
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: untrusted(question, SECTION_TEXT_MAX_CHARS) } },
      ...fields.map((field, index) => {
        const hint = hintOf(field);
        return {
          type: "input" as const,
          block_id: fieldBlockId(index),
          optional: !field.required,
          label: plain(field.label, LABEL_MAX_CHARS),
          ...(hint ? { hint: plain(hint, HINT_MAX_CHARS) } : {}),
          element: elementOf(field),
        };
      }),
    ],
  };
}

/** One element's state in view.state.values, as Slack sends it for the element kinds above. */
interface ElementState {
  type?: string;
  value?: string | null;
  selected_option?: { value?: string } | null;
  selected_options?: { value?: string }[] | null;
  selected_date?: string | null;
}

/** A multi-select's state: the options picked, or a typed list (one value per line); nothing picked is left empty. */
function enteredChoices(state: ElementState | undefined): string[] | undefined {
  const picked = Array.isArray(state?.selected_options)
    ? state.selected_options.flatMap((o) => (typeof o?.value === "string" ? [o.value] : []))
    : typeof state?.value === "string"
      ? state.value
          .split("\n")
          .map((line) => line.trim())
          .filter((line) => line !== "")
      : [];
  return picked.length > 0 ? picked : undefined;
}

/** What was entered per field key, from a submission's view.state.values (a field Slack did not send is left empty). */
export function enteredValues(
  fields: readonly FormField[],
  values: Record<string, Record<string, ElementState>>,
): Record<string, EnteredValue> {
  const entered: Record<string, EnteredValue> = {};
  fields.forEach((field, index) => {
    const state = values[fieldBlockId(index)]?.[FIELD_ACTION_ID];
    if (field.kind === "choices") {
      entered[field.key] = enteredChoices(state);
      return;
    }
    const raw = state?.selected_option?.value ?? state?.selected_date ?? state?.value ?? undefined;
    entered[field.key] = raw === null ? undefined : raw;
  });
  return entered;
}

/** A submission's errors (by field key, from readForm or the engine's details) keyed by the modal's block ids. */
export function modalErrors(fields: readonly FormField[], errors: Readonly<Record<string, string>>): Record<string, string> {
  const byBlock: Record<string, string> = {};
  fields.forEach((field, index) => {
    const error = errors[field.key];
    if (error !== undefined) byBlock[fieldBlockId(index)] = cut(error, 150);
  });
  return byBlock;
}
