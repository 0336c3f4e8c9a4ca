// The anthropic provider against a local stand-in that speaks the Messages
// API and enforces its tool_use / tool_result rules.
// The failures and retries both providers share are in failures.test.ts (one table over both).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createModelProvider,
  ModelError,
  UNANSWERED_TOOL_CALL_RESULT,
  type ModelProvider,
  type ProviderSettings,
} from "../../src/providers/model-provider";
import { buildAnthropicRequest } from "../../src/providers/anthropic";
import { anthropicMessage, startAnthropicStandIn, validateAnthropicRequest, type ModelStandIn } from "../support/model-stand-ins";
import { afterToolRound, DUMMY_KEY, FAST_RETRY, firstRequest, rejectionOf, SYSTEM, withDanglingCall } from "./fixtures";

let standIn: ModelStandIn;

beforeEach(async () => {
  standIn = await startAnthropicStandIn({ apiKey: DUMMY_KEY });
});
afterEach(async () => {
  await standIn.close();
});

function provider(settings: Partial<ProviderSettings> = {}): ModelProvider {
  return createModelProvider("anthropic", {
    baseUrl: standIn.baseUrl,
    apiKey: DUMMY_KEY,
    model: "claude-test",
    retry: FAST_RETRY,
    ...settings,
  });
}

describe("anthropic: requests and turns", () => {
  it("sends system, tools and the conversation, and parses tool_use blocks into tool calls", async () => {
    standIn.enqueue({
      body: anthropicMessage({
        text: "Let me look.",
        toolUses: [{ id: "toolu_01", name: "mcp__demo__list_dashboards", input: { limit: 5 } }],
        stopReason: "tool_use",
      }),
    });
    const turn = await provider({ maxTokens: 1234 }).next(firstRequest());

    expect(turn).toEqual({
      text: "Let me look.",
      tool_calls: [{ tool_call_id: "toolu_01", tool_name: "mcp__demo__list_dashboards", arguments: { limit: 5 } }],
      stop: "tool_use",
    });
    expect(standIn.requests).toHaveLength(1);
    const req = standIn.requests[0]!;
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/v1/messages");
    expect(req.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(req.headers["x-stainless-retry-count"]).toBe("0");
    expect(req.body).toEqual({
      model: "claude-test",
      max_tokens: 1234,
      system: SYSTEM,
      messages: [{ role: "user", content: [{ type: "text", text: "Show me the dashboards" }] }],
      tools: [
        {
          name: "mcp__demo__list_dashboards",
          description: "List dashboards",
          input_schema: { type: "object", properties: { limit: { type: "integer" } } },
        },
        {
          name: "mcp__demo__create_dashboard",
          description: "Create a dashboard",
          input_schema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
        },
      ],
    });
  });

  it("serialises assistant tool calls and their results (with is_error) in the next request", async () => {
    standIn.enqueue({ body: anthropicMessage({ text: "There were no dashboards, and creating one was denied.", stopReason: "end_turn" }) });
    const turn = await provider().next(afterToolRound());

    expect(turn).toEqual({ text: "There were no dashboards, and creating one was denied.", tool_calls: [], stop: "end" });
    expect(standIn.requests[0]!.body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Make a dashboard called Revenue" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "I'll check first." },
          { type: "tool_use", id: "call_a", name: "mcp__demo__list_dashboards", input: { limit: 5 } },
          { type: "tool_use", id: "call_b", name: "mcp__demo__create_dashboard", input: { title: "Revenue" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "call_a", content: "[]", is_error: false },
          { type: "tool_result", tool_use_id: "call_b", content: "denied by a person", is_error: true },
        ],
      },
    ]);
  });

  it("can be answered by a response made from the request (stand-in responders)", async () => {
    standIn.enqueue((req) => ({ body: anthropicMessage({ text: `you sent ${req.body.messages.length} messages` }) }));
    expect((await provider().next(afterToolRound())).text).toBe("you sent 3 messages");
  });

  it("maps a max_tokens stop, and repairs the dangling tool_use in the next request so the API accepts it", async () => {
    standIn.enqueue({
      body: anthropicMessage({
        text: "Creating it now",
        toolUses: [{ id: "call_cut", name: "mcp__demo__create_dashboard", input: {} }],
        stopReason: "max_tokens",
      }),
    });
    const cut = await provider().next(firstRequest("Make a dashboard called Revenue"));
    expect(cut.stop).toBe("max_tokens");
    expect(cut.tool_calls.map((c) => c.tool_call_id)).toEqual(["call_cut"]);

    // The engine records the cut-off call with no result and asks again.
    standIn.enqueue({ body: anthropicMessage({ text: "Sorry, let me try again.", stopReason: "end_turn" }) });
    const next = await provider().next(withDanglingCall());
    expect(next).toEqual({ text: "Sorry, let me try again.", tool_calls: [], stop: "end" });

    const messages = standIn.requests[1]!.body.messages;
    expect(messages).toHaveLength(3);
    expect(messages[1].content[1]).toEqual({ type: "tool_use", id: "call_cut", name: "mcp__demo__create_dashboard", input: {} });
    expect(messages[2]).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "call_cut", content: UNANSWERED_TOOL_CALL_RESULT, is_error: true }],
    });
  });

  it("puts the synthetic tool_result first when a user message follows the dangling call", async () => {
    standIn.enqueue({ body: anthropicMessage({ text: "OK", stopReason: "end_turn" }) });
    await provider().next(withDanglingCall("Please go on"));
    expect(standIn.requests[0]!.body.messages[2]).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_cut", content: UNANSWERED_TOOL_CALL_RESULT, is_error: true },
        { type: "text", text: "Please go on" },
      ],
    });
  });

  it("the stand-in refuses an unrepaired dangling tool_use, as the API does", () => {
    const body = buildAnthropicRequest(withDanglingCall("Please go on"), { model: "m", maxTokens: 10 });
    expect(validateAnthropicRequest(body)).toBeUndefined();
    const broken = { ...body, messages: [body.messages[0], body.messages[1], { role: "user", content: "Please go on" }] };
    expect(validateAnthropicRequest(broken)).toMatch(/tool_use.*without.*tool_result/);
  });

  it("maps end_turn and stop_sequence to end, and drops a cut-off tool_use whose input is unusable", async () => {
    standIn.enqueue(
      { body: anthropicMessage({ text: "Done.", stopReason: "stop_sequence" }) },
      {
        body: {
          ...anthropicMessage({ text: "Creating", stopReason: "max_tokens" }),
          content: [
            { type: "text", text: "Creating" },
            { type: "tool_use", id: "toolu_half", name: "mcp__demo__create_dashboard", input: '{"title": "Rev' },
          ],
        },
      },
    );
    expect(await provider().next(firstRequest())).toEqual({ text: "Done.", tool_calls: [], stop: "end" });
    expect(await provider().next(firstRequest())).toEqual({ text: "Creating", tool_calls: [], stop: "max_tokens" });
  });
});

describe("anthropic: failures and retries", () => {
  it("caps a long retry-after at maxDelayMs", async () => {
    standIn.enqueue(
      {
        status: 429,
        headers: { "retry-after": "120" },
        body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } },
      },
      { body: anthropicMessage({ text: "hello" }) },
    );
    const started = Date.now();
    const turn = await provider({ retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 50 } }).next(firstRequest());
    expect(turn.text).toBe("hello");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("retries 529 (overloaded) and network errors", async () => {
    standIn.enqueue(
      { status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } },
      { disconnect: true },
      { body: anthropicMessage({ text: "finally" }) },
    );
    const turn = await provider().next(firstRequest());
    expect(turn.text).toBe("finally");
    expect(standIn.requests).toHaveLength(3);
  });

  it("reports network errors in the final message", async () => {
    await standIn.close();
    const error = await rejectionOf(provider().next(firstRequest()));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toMatch(/^The model provider \(anthropic\) kept failing: a network error after 3 attempts/);
    standIn = await startAnthropicStandIn(); // for afterEach
  });

  it("does not retry a 400 and quotes the provider's reason", async () => {
    standIn.enqueue({ status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "max_tokens: too large" } } });
    const e = (await rejectionOf(provider().next(firstRequest()))) as ModelError;
    expect(e).toBeInstanceOf(ModelError);
    expect(e.message).toBe("The model provider (anthropic) refused the request (HTTP 400): max_tokens: too large");
    expect(e.code).toBe("rejected");
    expect(standIn.requests).toHaveLength(1);
  });

  it("refuses to call without an API key, and never takes one from the environment", async () => {
    const saved = { key: process.env.ANTHROPIC_API_KEY, token: process.env.ANTHROPIC_AUTH_TOKEN };
    process.env.ANTHROPIC_API_KEY = "decoy-env-key-5678";
    process.env.ANTHROPIC_AUTH_TOKEN = "decoy-env-token-5678";
    try {
      const e = (await rejectionOf(provider({ apiKey: undefined }).next(firstRequest()))) as ModelError;
      expect(e).toBeInstanceOf(ModelError);
      expect(e.code).toBe("not_configured");
      expect(e.message).toMatch(/MODEL_API_KEY/);
      expect(standIn.requests).toHaveLength(0);

      standIn.enqueue({ body: anthropicMessage({ text: "hi" }) });
      await provider().next(firstRequest());
      expect(standIn.requests[0]!.rawBody + JSON.stringify(standIn.requests[0]!.headers)).not.toContain("decoy");
    } finally {
      restoreEnv("ANTHROPIC_API_KEY", saved.key);
      restoreEnv("ANTHROPIC_AUTH_TOKEN", saved.token);
    }
  });

  it("never quotes the API key, even when the provider echoes it", async () => {
    for (let i = 0; i < 3; i++) {
      standIn.enqueue({ status: 503, body: { type: "error", error: { type: "api_error", message: `upstream rejected ${DUMMY_KEY}` } } });
    }
    const e = (await rejectionOf(provider().next(firstRequest()))) as ModelError;
    expect(e.message).toContain("upstream rejected [redacted]");
    expect(e.message).not.toContain(DUMMY_KEY);
  });

  it("honours the abort signal while waiting to retry", async () => {
    standIn.enqueue({ status: 503, body: { type: "error", error: { type: "api_error", message: "busy" } } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const slow = provider({ retry: { attempts: 3, baseDelayMs: 10_000, maxDelayMs: 10_000 } });
    const e = (await rejectionOf(slow.next(firstRequest(), controller.signal))) as ModelError;
    expect(e.code).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(standIn.requests).toHaveLength(1);
  });

  it("times out a hung attempt and retries it", async () => {
    standIn.enqueue({ delayMs: 2_000, body: anthropicMessage({ text: "slow" }) }, { body: anthropicMessage({ text: "quick" }) });
    const turn = await provider({ timeoutMs: 300 }).next(firstRequest());
    expect(turn.text).toBe("quick");
    expect(standIn.requests).toHaveLength(2);
  });
});

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
