// The verified Slack body's classification (contract section 20): 400 for a
// body that is not form/JSON or lacks payload/event, acknowledge for a
// well-formed payload no listener of this app reads, handle otherwise.
import { describe, expect, it } from "vitest";
import { classifySlackRequest } from "../../src/slack/request-envelope";

const JSON_TYPE = "application/json";
const FORM = "application/x-www-form-urlencoded";
const form = (payload: unknown) =>
  new URLSearchParams({ payload: typeof payload === "string" ? payload : JSON.stringify(payload) }).toString();
const click = (actions: unknown) => ({ type: "block_actions", user: { id: "U1" }, trigger_id: "t", channel: { id: "C1" }, actions });

describe("classifySlackRequest", () => {
  it.each([
    ["events", JSON_TYPE, "{"],
    ["events", JSON_TYPE, "null"],
    ["events", JSON_TYPE, "[1]"],
    ["events", JSON_TYPE, '{"type":"event_callback"}'],
    ["events", JSON_TYPE, '{"type":"event_callback","event":"x"}'],
    ["events", JSON_TYPE, '{"type":"url_verification"}'],
    ["events", FORM, "a=1"],
    ["interactivity", FORM, "a=1"],
    ["interactivity", FORM, "payload=%7B"],
    ["interactivity", FORM, "payload=null"],
    ["interactivity", JSON_TYPE, '{"payload":{}}'],
    ["interactivity", "", '{"type":"block_actions"}'],
  ] as const)("%s %s %s is a bad request", (route, type, body) => {
    expect(classifySlackRequest(route, type, body).kind).toBe("bad_request");
  });

  it.each([
    ["events", JSON.stringify({ type: "event_callback", event: { type: "reaction_added" } })],
    ["events", JSON.stringify({ type: "event_callback", event: { type: "message" }, authorizations: [null] })],
    ["events", JSON.stringify({ type: "event_callback", event: { type: "message", user: 5 } })],
    ["events", JSON.stringify({ type: "app_rate_limited" })],
    ["interactivity", form({ type: "view_closed" })],
    ["interactivity", form(click([]))],
    ["interactivity", form(click([{ action_id: "other" }]))],
    ["interactivity", form({ ...click([{ action_id: "approval_approve" }]), user: null })],
    ["interactivity", form({ type: "view_submission", user: { id: "U1" }, view: { callback_id: "input_answer" } })],
  ] as const)("%s %s is acknowledged", (route, body) => {
    expect(classifySlackRequest(route, route === "events" ? JSON_TYPE : FORM, body).kind).toBe("acknowledge");
  });

  it("hands what a listener takes to slack-edge", () => {
    const event = {
      type: "event_callback",
      event_id: "Ev1",
      event: { type: "app_mention", user: "U1", channel: "C1", text: "hi", ts: "1.0" },
    };
    expect(classifySlackRequest("events", JSON_TYPE, JSON.stringify(event))).toEqual({ kind: "handle", type: "app_mention", body: event });
    expect(classifySlackRequest("events", JSON_TYPE, '{"type":"url_verification","challenge":"c"}').kind).toBe("handle");
    expect(classifySlackRequest("interactivity", FORM, form(click([{ action_id: "approval_deny", value: "{}" }]))).kind).toBe("handle");
    const submission = {
      type: "view_submission",
      user: { id: "U1" },
      view: { callback_id: "approval_confirm", private_metadata: "{}", state: { values: { answer: { text: { value: "x" } } } } },
    };
    expect(classifySlackRequest("interactivity", FORM, form(submission)).kind).toBe("handle");
  });

  it("hands an MCP question's Decline click and its form's submission (radio and select states carry no value) to slack-edge", () => {
    expect(classifySlackRequest("interactivity", FORM, form(click([{ action_id: "input_decline", value: "{}" }]))).kind).toBe("handle");
    const submission = {
      type: "view_submission",
      user: { id: "U1" },
      view: {
        callback_id: "input_form",
        private_metadata: "{}",
        state: { values: { "field:0": { value: { type: "radio_buttons", selected_option: { value: "true" } } } } },
      },
    };
    expect(classifySlackRequest("interactivity", FORM, form(submission)).kind).toBe("handle");
  });
});
