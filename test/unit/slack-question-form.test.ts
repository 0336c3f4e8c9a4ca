// An MCP server's question in Slack (contract sections 14 and 21), as data:
// the thread message, the modal built from requested_schema, a submission's
// values read back, errors keyed by block, and the posts for the events.
import { describe, expect, it } from "vitest";
import { formFields, readForm } from "../../src/client/requested-form";
import { ACTION_INPUT_ANSWER } from "../../src/slack/blocks";
import { emptyMemory, postsForEvent as postsOf } from "../../src/slack/event-posts";
import { runEventFromJson } from "../runtime/run-events";
import { parseInputValue, parseModalMetadata } from "../../src/slack/interactions";
import { formVerdictErrors } from "../../src/slack/question-answers";
import {
  ACTION_INPUT_DECLINE,
  enteredValues,
  formQuestionRequest,
  modalErrors,
  questionFormModal,
  VIEW_INPUT_FORM,
} from "../../src/slack/question-form";

/** The posts of one event, written as its JSON. */
const postsForEvent = (json: string, memory: Parameters<typeof postsOf>[1]) => postsOf(runEventFromJson(json), memory);

const schema = {
  type: "object",
  properties: {
    title: { type: "string", title: "Title", description: "Shown on the board", maxLength: 80, default: "Q4" },
    owner: { type: "string", format: "email" },
    link: { type: "string", format: "uri" },
    due: { type: "string", format: "date", default: "2026-12-31" },
    colour: {
      type: "string",
      oneOf: [
        { const: "red", title: "Red" },
        { const: "blue", title: "Blue" },
      ],
      default: "blue",
    },
    count: { type: "integer", minimum: 1, maximum: 9 },
    weight: { type: "number" },
    public: { type: "boolean", default: true },
  },
  required: ["title", "count"],
};
const fields = formFields(schema) ?? [];
const inputId = "call_1:1:details";

type Input = {
  type: string;
  block_id: string;
  optional: boolean;
  label: { text: string };
  hint?: { text: string };
  element: Record<string, unknown>;
};

describe("the question's modal", () => {
  const modal = questionFormModal("Which dashboard <b>?", fields, JSON.stringify({ kind: "form" }));
  const inputs = modal.blocks.filter((b) => b.type === "input") as unknown as Input[];

  it("has one input per property, required ones not optional, each element of its kind with its limits and default", () => {
    expect(modal.callback_id).toBe(VIEW_INPUT_FORM);
    expect(JSON.stringify(modal.blocks[0])).toContain("Which dashboard &lt;b&gt;?");
    expect(inputs.map((b) => [b.block_id, b.optional, b.element.type])).toEqual([
      ["field:0", false, "plain_text_input"],
      ["field:1", true, "email_text_input"],
      ["field:2", true, "url_text_input"],
      ["field:3", true, "datepicker"],
      ["field:4", true, "static_select"],
      ["field:5", false, "number_input"],
      ["field:6", true, "number_input"],
      ["field:7", true, "radio_buttons"],
    ]);
    expect(inputs[0]?.label.text).toBe("Title");
    expect(inputs[0]?.hint?.text).toBe("Shown on the board");
    expect(inputs[0]?.element).toMatchObject({ max_length: 80, initial_value: "Q4" });
    expect(inputs[3]?.element).toMatchObject({ initial_date: "2026-12-31" });
    expect(inputs[4]?.element).toMatchObject({
      options: [
        { text: { type: "plain_text", text: "Red" }, value: "red" },
        { text: { type: "plain_text", text: "Blue" }, value: "blue" },
      ],
      initial_option: { value: "blue" },
    });
    expect(inputs[5]?.element).toMatchObject({ is_decimal_allowed: false, min_value: "1", max_value: "9" });
    expect(inputs[6]?.element).toMatchObject({ is_decimal_allowed: true });
    expect(inputs[7]?.element).toMatchObject({ initial_option: { value: "true" } });
  });

  it("types an enum too large for a select, and says which values it takes", () => {
    const big = formFields({
      type: "object",
      properties: { pick: { type: "string", enum: Array.from({ length: 101 }, (_, i) => `v${i}`) } },
    });
    const [input] = questionFormModal("q", big ?? [], "{}").blocks.filter((b) => b.type === "input") as unknown as Input[];
    expect(input?.element.type).toBe("plain_text_input");
    expect(input?.hint?.text).toContain("One of: v0, v1");
  });

  it("reads a submission's view.state.values back by field, and keys errors by block", () => {
    const values = {
      "field:0": { value: { type: "plain_text_input", value: "Revenue" } },
      "field:1": { value: { type: "email_text_input", value: null } },
      "field:3": { value: { type: "datepicker", selected_date: "2027-01-02" } },
      "field:4": { value: { type: "static_select", selected_option: { value: "red" } } },
      "field:5": { value: { type: "number_input", value: "4" } },
      "field:7": { value: { type: "radio_buttons", selected_option: { value: "false" } } },
    };
    const entered = enteredValues(fields, values);
    expect(entered).toEqual({
      title: "Revenue",
      owner: undefined,
      link: undefined,
      due: "2027-01-02",
      colour: "red",
      count: "4",
      weight: undefined,
      public: "false",
    });
    expect(readForm(fields, entered)).toEqual({
      kind: "ok",
      content: { title: "Revenue", due: "2027-01-02", colour: "red", count: 4, public: false },
    });
    const bad = readForm(fields, { ...entered, count: "12" });
    expect(bad.kind === "invalid" ? modalErrors(fields, bad.errors) : null).toEqual({ "field:5": "Enter at most 9." });
  });

  it("offers a multi-select enum (both MCP shapes) as a multi_static_select with its titles, defaults and upper bound", () => {
    const multi = formFields({
      type: "object",
      properties: {
        days: { type: "array", title: "Days", items: { type: "string", enum: ["mon", "tue", "wed"] }, maxItems: 2, default: ["tue"] },
        teams: {
          type: "array",
          items: {
            anyOf: [
              { const: "sre", title: "SRE" },
              { const: "web", title: "Web <team>" },
            ],
          },
          minItems: 1,
        },
      },
      required: ["teams"],
    });
    const inputs = questionFormModal("q", multi ?? [], "{}").blocks.filter((b) => b.type === "input") as unknown as Input[];
    expect(inputs.map((b) => [b.optional, b.element.type])).toEqual([
      [true, "multi_static_select"],
      [false, "multi_static_select"],
    ]);
    expect(inputs[0]?.element).toMatchObject({
      action_id: "value",
      options: [{ value: "mon" }, { value: "tue" }, { value: "wed" }],
      initial_options: [{ text: { type: "plain_text", text: "tue" }, value: "tue" }],
      max_selected_items: 2,
    });
    expect(inputs[0]?.hint?.text).toBe("Choose at most 2.");
    expect(inputs[1]?.element).toMatchObject({ options: [{ text: { text: "SRE" }, value: "sre" }, { text: { text: "Web <team>" } }] });
    expect(inputs[1]?.element).not.toHaveProperty("max_selected_items");
    expect(inputs[1]?.element).not.toHaveProperty("initial_options");
    expect(inputs[1]?.hint?.text).toBe("Choose at least 1.");
  });

  it("reads a multi-select's selected_options back as the content's list, and refuses too few picked", () => {
    const multi =
      formFields({
        type: "object",
        properties: {
          days: { type: "array", items: { type: "string", enum: ["mon", "tue", "wed"] }, minItems: 2 },
          extra: { type: "array", items: { type: "string", enum: ["x"] } },
        },
      }) ?? [];
    const picked = (...values: string[]) => ({
      "field:0": { value: { type: "multi_static_select", selected_options: values.map((value) => ({ value })) } },
      "field:1": { value: { type: "multi_static_select", selected_options: [] } },
    });
    const entered = enteredValues(multi, picked("wed", "mon"));
    expect(entered).toEqual({ days: ["wed", "mon"], extra: undefined });
    expect(readForm(multi, entered)).toEqual({ kind: "ok", content: { days: ["wed", "mon"] } });
    const few = readForm(multi, enteredValues(multi, picked("tue")));
    expect(few.kind === "invalid" ? modalErrors(multi, few.errors) : null).toEqual({ "field:0": "Choose at least 2." });
  });

  it("types a multi-select too large for a select one value per line, and reads the lines back", () => {
    const big =
      formFields({
        type: "object",
        properties: { tags: { type: "array", items: { type: "string", enum: Array.from({ length: 101 }, (_, i) => `t${i}`) } } },
      }) ?? [];
    const [input] = questionFormModal("q", big, "{}").blocks.filter((b) => b.type === "input") as unknown as Input[];
    expect(input?.element).toMatchObject({ type: "plain_text_input", multiline: true });
    expect(input?.hint?.text).toContain("One per line, from: t0, t1");
    const entered = enteredValues(big, { "field:0": { value: { type: "plain_text_input", value: " t3 \n\nt7\n" } } });
    expect(readForm(big, entered)).toEqual({ kind: "ok", content: { tags: ["t3", "t7"] } });
    const unknown = readForm(big, enteredValues(big, { "field:0": { value: { type: "plain_text_input", value: "t3\nnope" } } }));
    expect(unknown.kind).toBe("invalid");
  });

  it("puts the engine's issues under the field they name, else the first field", () => {
    expect(
      formVerdictErrors({ kind: "invalid_answer", issues: ['Property "count" does not match schema.', "something else"] }, fields),
    ).toEqual({
      count: 'Property "count" does not match schema.',
      title: "something else",
    });
    expect(formVerdictErrors({ kind: "answered", tool_call_id: "call_1" }, fields)).toBeNull();
  });
});

describe("the question's message and its events", () => {
  const requested = {
    run_id: "run_1",
    sequence: 7,
    type: "human_input_requested",
    tool_call_id: "call_1",
    input_id: inputId,
    question: "Fill in the dashboard's details",
    requested_schema: schema,
    expires_at: "2026-12-01T16:00:00.000Z",
  };

  it("posts the question with Answer and Decline, whose values read back with the input_id", () => {
    const { items, memory } = postsForEvent(JSON.stringify(requested), emptyMemory());
    expect(items).toHaveLength(1);
    const post = items[0];
    expect(post).toMatchObject({ kind: "post", key: `input:${inputId}` });
    const json = JSON.stringify(post);
    expect(json).toContain("Fill in the dashboard");
    const buttons = (post?.kind === "post" ? (post.message.blocks ?? []) : [])
      .filter((b) => b.type === "actions")
      .flatMap((b) => (b as { elements: { action_id: string; value: string }[] }).elements);
    expect(buttons.map((b) => b.action_id)).toEqual([ACTION_INPUT_ANSWER, ACTION_INPUT_DECLINE]);
    expect(parseInputValue(buttons[0]?.value)).toEqual({ run_id: "run_1", tool_call_id: "call_1", input_id: inputId });
    expect(memory.form_questions).toEqual({ [inputId]: "Fill in the dashboard's details" });
  });

  it("offers only Decline for a schema Slack cannot show, and says where to answer", () => {
    const nested = { ...requested, requested_schema: { type: "object", properties: { a: { type: "object" } } } };
    const { items } = postsForEvent(JSON.stringify(nested), emptyMemory());
    const json = JSON.stringify(items);
    expect(json).toContain("answer it in the console");
    expect(json).toContain(ACTION_INPUT_DECLINE);
    expect(json).not.toContain(`"${ACTION_INPUT_ANSWER}"`);
  });

  it("updates the message at human_input_received to say who answered and how, with no buttons left", () => {
    const { memory } = postsForEvent(JSON.stringify(requested), emptyMemory());
    for (const [action, words] of [
      ["accept", "Answered by"],
      ["decline", "Declined by"],
      ["cancel", "Cancelled by"],
    ] as const) {
      const received = {
        run_id: "run_1",
        sequence: 8,
        type: "human_input_received",
        tool_call_id: "call_1",
        input_id: inputId,
        answered_by: "slack:T1:U123",
        action,
      };
      const { items } = postsForEvent(JSON.stringify(received), memory);
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({ kind: "update", ref: `input:${inputId}` });
      const json = JSON.stringify(items[0]);
      expect(json).toContain(words);
      expect(json).toContain("<@U123>");
      expect(json).not.toContain('"actions"');
    }
  });

  it("leaves human__ask's question as it was: one Answer button and its own modal", () => {
    const ask = { ...requested, input_id: undefined, requested_schema: undefined };
    const { items } = postsForEvent(JSON.stringify(ask), emptyMemory());
    expect(items[0]).toMatchObject({ kind: "post", key: "input:call_1" });
    expect(JSON.stringify(items)).not.toContain(ACTION_INPUT_DECLINE);
  });

  it("keeps the form's run and question in the modal's private_metadata", () => {
    const metadata = { kind: "form", run_id: "run_1", input_id: inputId, channel_id: "C1", thread_ts: "1.2" };
    expect(parseModalMetadata(JSON.stringify(metadata))).toEqual(metadata);
    expect(formQuestionRequest({ ...requested, answerable: true }).blocks?.length).toBe(3);
  });
});
