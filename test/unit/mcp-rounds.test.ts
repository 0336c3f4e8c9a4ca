// Questions an MCP tool asks mid-call (contract section 21), the pure parts:
// which input requests can be asked (src/execution/mcp-questions.ts), and
// the rounds on the dispatched call (src/execution/mcp-rounds.ts): asking,
// answering once, checking content against requested_schema, closing the
// round when all are answered or one expires (as cancel), and the
// inputResponses the follow-up carries.
import { describe, expect, it } from "vitest";
import { answerIssues, inputResponsesOf, parseInputRequests } from "../../src/execution/mcp-questions";
import {
  answerQuestion,
  askRound,
  cancelQuestions,
  expireQuestions,
  keepConversation,
  openQuestions,
  roundOpen,
  roundResponses,
} from "../../src/execution/mcp-rounds";
import { nextDeadline, type Dispatched, type McpConversation, type ToolCall } from "../../src/execution/tool-calls";

const SCHEMA = {
  type: "object",
  properties: { confirm: { type: "boolean" }, label: { type: "string", maxLength: 5 } },
  required: ["confirm"],
};
const form = (message: string, requestedSchema: Record<string, unknown> = SCHEMA) => ({
  method: "elicitation/create",
  params: { mode: "form", message, requestedSchema },
});
const TIMEOUT_MS = 1_000;

function dispatched(): Dispatched {
  return {
    turn: 0,
    index: 0,
    tool_call_id: "call-1",
    tool_name: "mcp__s__confirm",
    arguments: {},
    arguments_digest: "sha256:d",
    kind: "mcp",
    mutating: true,
    level: "approve",
    description: "",
    started_at: 0,
    state: "dispatched",
    grant: "automatic",
    approved_at: 0,
    mutation_id: "mut-1",
  };
}

/** Round 1 kept waiting: the server's first answer asked for input (one send). */
const WAITING: McpConversation = { phase: "waiting", round: 1, sends: 1, request_state: "s" };

function asked(keys: string[], now = 0): ToolCall[] {
  const calls: ToolCall[] = [dispatched()];
  const parsed = parseInputRequests(Object.fromEntries(keys.map((k) => [k, form(`${k}?`)])));
  if (parsed.kind !== "questions") throw new Error("expected questions");
  askRound(calls, calls[0] as Dispatched, WAITING, parsed.questions, now, TIMEOUT_MS);
  return calls;
}

describe("which input requests are questions", () => {
  it("a form elicitation (mode form or none) is one question: its key, its message redacted, its schema as given", () => {
    const noMode = { method: "elicitation/create", params: { message: "password=hunter2 ok?", requestedSchema: SCHEMA } };
    expect(parseInputRequests({ a: form("Sure?"), b: noMode })).toEqual({
      kind: "questions",
      questions: [
        { key: "a", question: "Sure?", requested_schema: SCHEMA },
        { key: "b", question: expect.not.stringContaining("hunter2"), requested_schema: SCHEMA },
      ],
    });
  });

  it("URL mode, sampling, roots and malformed requests are unsupported", () => {
    for (const request of [
      { method: "elicitation/create", params: { mode: "url", message: "m", url: "https://example.com" } },
      { method: "sampling/createMessage", params: {} },
      { method: "roots/list" },
      { method: "elicitation/create", params: { message: "no schema" } },
      "not an object",
    ]) {
      expect(parseInputRequests({ ok: form("fine"), bad: request })).toMatchObject({ kind: "unsupported" });
    }
  });

  it("checks accept content: the revision's value types, then requested_schema", () => {
    expect(answerIssues(SCHEMA, { confirm: true })).toBeNull();
    expect(answerIssues(SCHEMA, { confirm: true, label: "toolong" })).toEqual([expect.any(String)]);
    expect(answerIssues(SCHEMA, { label: "x" })).toEqual([expect.any(String)]);
    expect(answerIssues(SCHEMA, { confirm: { nested: true } })).toEqual([expect.stringContaining("confirm")]);
  });

  it("checks a multi-select's list (both MCP shapes): allowed values only, each once, within minItems..maxItems", () => {
    const multi = {
      type: "object",
      properties: {
        days: { type: "array", items: { type: "string", enum: ["mon", "tue", "wed"] }, minItems: 1, maxItems: 2 },
        teams: {
          type: "array",
          items: {
            anyOf: [
              { const: "sre", title: "SRE" },
              { const: "web", title: "Web" },
            ],
          },
        },
      },
      required: ["days"],
    };
    expect(answerIssues(multi, { days: ["mon"] })).toBeNull();
    expect(answerIssues(multi, { days: ["mon", "wed"], teams: ["web", "sre"] })).toBeNull();
    expect(answerIssues(multi, { days: ["mon"], teams: [] })).toBeNull();
    const refused = (content: Record<string, unknown>, names: string) => {
      const issues = answerIssues(multi, content);
      expect([JSON.stringify(content), issues?.join(" ")]).toEqual([JSON.stringify(content), expect.stringContaining(names)]);
    };
    refused({ days: [] }, '"days"');
    refused({ days: ["mon", "tue", "wed"] }, '"days"');
    refused({ days: ["fri"] }, '"days"');
    refused({ days: ["mon"], teams: ["ops"] }, '"teams"');
    refused({ days: "mon" }, '"days"');
    refused({ teams: ["sre"] }, "days");
    refused({ days: [1] }, "days: must be a string, number, boolean or list of strings");
    refused({ days: ["mon", "mon"] }, "days: must choose each option at most once");
  });

  it("sends every question's answer under its key, and cancel for one left unanswered", () => {
    expect(inputResponsesOf([{ key: "a", answer: { action: "decline" } }, { key: "b" }])).toEqual({
      a: { action: "decline" },
      b: { action: "cancel" },
    });
  });
});

describe("the rounds on a dispatched call", () => {
  it("asks each question with its input_id and expiry; the call stays dispatched and waits for the deadline", () => {
    const calls: ToolCall[] = [dispatched()];
    const parsed = parseInputRequests({ confirm: form("Sure?") });
    if (parsed.kind !== "questions") throw new Error("expected questions");
    const effects = askRound(calls, calls[0] as Dispatched, WAITING, parsed.questions, 100, TIMEOUT_MS);
    expect(effects).toEqual([
      {
        kind: "emit",
        type: "human_input_requested",
        fields: {
          tool_call_id: "call-1",
          question: "Sure?",
          expires_at: new Date(100 + TIMEOUT_MS).toISOString(),
          input_id: "call-1:1:confirm",
          requested_schema: SCHEMA,
        },
      },
    ]);
    expect(calls[0]?.state).toBe("dispatched");
    expect(nextDeadline(calls, 0)).toBe(100 + TIMEOUT_MS);
    expect(openQuestions(calls).map((q) => q.question.input_id)).toEqual(["call-1:1:confirm"]);
  });

  it("closes the round only when every question is answered, and sends what each person answered", () => {
    const calls = asked(["a", "b"]);
    const first = answerQuestion(calls, "call-1:1:a", { action: "accept", content: { confirm: true } }, "token:root", 10);
    expect(first.verdict).toEqual({ kind: "input_answered", input_id: "call-1:1:a", tool_call_id: "call-1", action: "accept" });
    expect(first.effects).toEqual([
      {
        kind: "emit",
        type: "human_input_received",
        fields: { tool_call_id: "call-1", answered_by: "token:root", input_id: "call-1:1:a", action: "accept" },
      },
    ]);
    expect(first.closed).toBeUndefined();
    const second = answerQuestion(calls, "call-1:1:b", { action: "decline" }, "token:root", 20);
    expect(second.closed).toBeDefined();
    expect(roundResponses(second.closed as Dispatched)).toEqual({
      a: { action: "accept", content: { confirm: true } },
      b: { action: "decline" },
    });
    expect(openQuestions(calls)).toEqual([]);
  });

  it("the same answer again gets the same verdict and no event; a different one is already_resolved", () => {
    const calls = asked(["a", "b"]);
    answerQuestion(calls, "call-1:1:a", { action: "decline" }, "token:root", 10);
    expect(answerQuestion(calls, "call-1:1:a", { action: "decline" }, "token:root", 11)).toMatchObject({
      verdict: { kind: "input_answered" },
      effects: [],
    });
    expect(answerQuestion(calls, "call-1:1:a", { action: "cancel" }, "token:root", 12).verdict).toEqual({
      kind: "already_resolved",
      decision: "decline",
      what: "question",
    });
    expect(answerQuestion(calls, "call-1:9:z", { action: "cancel" }, "token:root", 12).verdict).toMatchObject({ kind: "not_found" });
  });

  it("content that does not fit is invalid_answer and changes nothing", () => {
    const calls = asked(["a"]);
    const before = calls[0];
    const result = answerQuestion(calls, "call-1:1:a", { action: "accept", content: { confirm: "yes" } }, "token:root", 10);
    expect(result).toMatchObject({ verdict: { kind: "invalid_answer", issues: [expect.any(String)] }, effects: [] });
    expect(calls[0]).toBe(before);
  });

  it("expiry closes the round as cancel (the alarm's path, and an answer arriving too late)", () => {
    const calls = asked(["a", "b"]);
    answerQuestion(calls, "call-1:1:a", { action: "decline" }, "token:root", 10);
    expect(expireQuestions(calls, 0, TIMEOUT_MS - 1)).toEqual([]);
    const [closed] = expireQuestions(calls, 0, TIMEOUT_MS);
    expect(roundResponses(closed as Dispatched)).toEqual({ a: { action: "decline" }, b: { action: "cancel" } });
    expect(answerQuestion(calls, "call-1:1:b", { action: "decline" }, "token:root", TIMEOUT_MS + 1).verdict).toEqual({
      kind: "expired",
      what: "question",
    });
    expect(nextDeadline(calls, 0)).toBeUndefined();

    const late = asked(["c"]);
    const result = answerQuestion(late, "call-1:1:c", { action: "decline" }, "token:root", TIMEOUT_MS);
    expect(result.verdict).toEqual({ kind: "expired", what: "question" });
    expect(roundResponses(result.closed as Dispatched)).toEqual({ c: { action: "cancel" } });
  });

  it("a question whose follow-up may be in flight (written ahead: lost if the engine restarted) is expired, and nothing is recorded", () => {
    const calls = asked(["a"]);
    keepConversation(calls, calls[0] as Dispatched, { ...WAITING, phase: "sending" });
    const before = calls[0];
    const result = answerQuestion(calls, "call-1:1:a", { action: "accept", content: { confirm: true } }, "token:root", 10);
    expect(result).toEqual({ verdict: { kind: "expired", what: "question" }, effects: [] });
    expect(calls[0]).toBe(before);
    // The same question, answered while its round waits in storage (whichever instance reads it), is taken.
    keepConversation(calls, calls[0] as Dispatched, WAITING);
    expect(answerQuestion(calls, "call-1:1:a", { action: "accept", content: { confirm: true } }, "token:root", 10).verdict).toMatchObject({
      kind: "input_answered",
    });
  });

  it("the round is kept with the call as it was handed over: round, sends and requestState", () => {
    const calls = asked(["a"]);
    expect((calls[0] as Dispatched).conversation).toEqual(WAITING);
    expect(roundOpen(calls[0] as Dispatched)).toBe(true);
    answerQuestion(calls, "call-1:1:a", { action: "decline" }, "token:root", 10);
    expect(roundOpen(calls[0] as Dispatched)).toBe(false);
  });

  it("cancellation closes every open round at once, unanswered questions as cancel", () => {
    const calls = asked(["a", "b"]);
    answerQuestion(calls, "call-1:1:a", { action: "accept", content: { confirm: true } }, "token:root", 10);
    const [closed] = cancelQuestions(calls, 0);
    expect(roundResponses(closed as Dispatched)).toEqual({ a: { action: "accept", content: { confirm: true } }, b: { action: "cancel" } });
    expect(cancelQuestions(calls, 0)).toEqual([]);
    expect(calls[0]?.state).toBe("dispatched");
  });
});
