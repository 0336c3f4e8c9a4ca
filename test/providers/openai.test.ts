// The openai provider against a local stand-in that speaks chat completions
// and enforces its tool_calls / tool-message rules.
// The failures and retries both providers share are in failures.test.ts (one table over both).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildOpenAiRequest, TOOL_ERROR_PREFIX } from "../../src/providers/openai";
import {
  createModelProvider,
  ModelError,
  UNANSWERED_TOOL_CALL_RESULT,
  type ModelProvider,
  type ProviderSettings,
} from "../../src/providers/model-provider";
import { openAiCompletion, startOpenAiStandIn, validateOpenAiRequest, type ModelStandIn } from "../support/model-stand-ins";
import { afterToolRound, DUMMY_KEY, FAST_RETRY, firstRequest, rejectionOf, SYSTEM, TOOLS, withDanglingCall } from "./fixtures";

let standIn: ModelStandIn;

beforeEach(async () => {
  standIn = await startOpenAiStandIn({ apiKey: DUMMY_KEY });
});
afterEach(async () => {
  await standIn.close();
});

function provider(settings: Partial<ProviderSettings> = {}): ModelProvider {
  return createModelProvider("openai", {
    baseUrl: standIn.baseUrl,
    apiKey: DUMMY_KEY,
    model: "gpt-test",
    retry: FAST_RETRY,
    ...settings,
  });
}

describe("openai: requests and turns", () => {
  it("sends system, tools and the conversation, and parses tool_calls with JSON-string arguments", async () => {
    standIn.enqueue({
      body: openAiCompletion({
        text: "Let me look.",
        toolCalls: [{ id: "call_01", name: "mcp__demo__list_dashboards", arguments: { limit: 5 } }],
        finishReason: "tool_calls",
      }),
    });
    const turn = await provider({ maxTokens: 1234 }).next(firstRequest());

    expect(turn).toEqual({
      text: "Let me look.",
      tool_calls: [{ tool_call_id: "call_01", tool_name: "mcp__demo__list_dashboards", arguments: { limit: 5 } }],
      stop: "tool_use",
    });
    expect(standIn.requests).toHaveLength(1);
    const req = standIn.requests[0]!;
    expect(req.path).toBe("/v1/chat/completions");
    expect(req.headers.authorization).toBe(`Bearer ${DUMMY_KEY}`);
    expect(req.headers["x-stainless-retry-count"]).toBe("0");
    expect(req.body).toEqual({
      model: "gpt-test",
      max_tokens: 1234,
      messages: [
        { role: "system", content: SYSTEM },
        { role: "user", content: "Show me the dashboards" },
      ],
      tools: TOOLS.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.input_schema },
      })),
    });
  });

  it("serialises assistant tool_calls and tool messages (errors marked) in the next request", async () => {
    standIn.enqueue({ body: openAiCompletion({ text: "No dashboards; creating one was denied.", finishReason: "stop" }) });
    const turn = await provider().next(afterToolRound());

    expect(turn).toEqual({ text: "No dashboards; creating one was denied.", tool_calls: [], stop: "end" });
    expect(standIn.requests[0]!.body.messages).toEqual([
      { role: "system", content: SYSTEM },
      { role: "user", content: "Make a dashboard called Revenue" },
      {
        role: "assistant",
        content: "I'll check first.",
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "mcp__demo__list_dashboards", arguments: '{"limit":5}' } },
          { id: "call_b", type: "function", function: { name: "mcp__demo__create_dashboard", arguments: '{"title":"Revenue"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "[]" },
      { role: "tool", tool_call_id: "call_b", content: `${TOOL_ERROR_PREFIX}denied by a person` },
    ]);
  });

  it("maps a length stop, and repairs the dangling tool call in the next request so the API accepts it", async () => {
    standIn.enqueue({
      body: openAiCompletion({
        text: "Creating it now",
        toolCalls: [{ id: "call_cut", name: "mcp__demo__create_dashboard", arguments: {} }],
        finishReason: "length",
      }),
    });
    const cut = await provider().next(firstRequest("Make a dashboard called Revenue"));
    expect(cut.stop).toBe("max_tokens");
    expect(cut.tool_calls.map((c) => c.tool_call_id)).toEqual(["call_cut"]);

    standIn.enqueue({ body: openAiCompletion({ text: "Let me try again.", finishReason: "stop" }) });
    const next = await provider().next(withDanglingCall("Please go on"));
    expect(next).toEqual({ text: "Let me try again.", tool_calls: [], stop: "end" });

    const messages = standIn.requests[1]!.body.messages;
    expect(messages.slice(2)).toEqual([
      {
        role: "assistant",
        content: "Creating it now",
        tool_calls: [{ id: "call_cut", type: "function", function: { name: "mcp__demo__create_dashboard", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_cut", content: `${TOOL_ERROR_PREFIX}${UNANSWERED_TOOL_CALL_RESULT}` },
      { role: "user", content: "Please go on" },
    ]);
  });

  it("the stand-in refuses an unrepaired dangling tool call, as the API does", () => {
    const body = buildOpenAiRequest(withDanglingCall("Please go on"), { model: "m", maxTokens: 10, baseUrl: "http://x" });
    expect(validateOpenAiRequest(body)).toBeUndefined();
    const withoutResult = { ...body, messages: body.messages.filter((m) => m.role !== "tool") };
    expect(validateOpenAiRequest(withoutResult)).toMatch(/must be followed by tool messages.*call_cut/);
  });

  it("drops a tool call cut off mid-arguments by the length limit", async () => {
    standIn.enqueue({
      body: openAiCompletion({
        text: "Creating",
        toolCalls: [{ id: "call_half", name: "mcp__demo__create_dashboard", arguments: '{"title": "Rev' }],
        finishReason: "length",
      }),
    });
    expect(await provider().next(firstRequest())).toEqual({ text: "Creating", tool_calls: [], stop: "max_tokens" });
    expect(standIn.requests).toHaveLength(1);
  });

  it("tolerates compatible servers: missing ids, empty arguments, 'stop' next to tool calls, null content", async () => {
    const body = openAiCompletion({ text: null, toolCalls: [{ name: "mcp__demo__list_dashboards", arguments: "" }], finishReason: "stop" });
    delete (body as any).choices[0].message.tool_calls[0].id;
    standIn.enqueue({ body });
    const turn = await provider().next(firstRequest());

    expect(turn.text).toBeUndefined();
    expect(turn.stop).toBe("tool_use");
    expect(turn.tool_calls).toHaveLength(1);
    expect(turn.tool_calls[0]!.tool_name).toBe("mcp__demo__list_dashboards");
    expect(turn.tool_calls[0]!.arguments).toEqual({});
    expect(turn.tool_calls[0]!.tool_call_id).toMatch(/^call_0_[0-9a-f]{16}$/);
  });

  it("asks again when tool-call arguments are not valid JSON, and never guesses them", async () => {
    standIn.enqueue(
      { body: openAiCompletion({ toolCalls: [{ id: "c1", name: "mcp__demo__create_dashboard", arguments: "{title: Revenue}" }] }) },
      { body: openAiCompletion({ toolCalls: [{ id: "c2", name: "mcp__demo__create_dashboard", arguments: { title: "Revenue" } }] }) },
    );
    const turn = await provider().next(firstRequest());
    expect(turn.tool_calls).toEqual([{ tool_call_id: "c2", tool_name: "mcp__demo__create_dashboard", arguments: { title: "Revenue" } }]);
    expect(standIn.requests).toHaveLength(2);
  });

  it("fails with a ModelError when the arguments stay invalid through every attempt", async () => {
    for (let i = 0; i < 3; i++) {
      standIn.enqueue({ body: openAiCompletion({ toolCalls: [{ name: "mcp__demo__create_dashboard", arguments: "[1, 2]" }] }) });
    }
    const e = (await rejectionOf(provider().next(firstRequest()))) as ModelError;
    expect(e).toBeInstanceOf(ModelError);
    expect(e.code).toBe("bad_response");
    expect(e.message).toBe(
      "The model provider (openai) kept failing: unusable answers after 3 attempts: the arguments of tool call mcp__demo__create_dashboard are not a JSON object",
    );
  });

  it("sends no Authorization header when no API key is configured (local servers)", async () => {
    const open = await startOpenAiStandIn();
    try {
      const saved = process.env.OPENAI_API_KEY;
      process.env.OPENAI_API_KEY = "decoy-env-key-5678";
      try {
        open.enqueue({ body: openAiCompletion({ text: "hi" }) });
        const p = createModelProvider("openai", { baseUrl: open.baseUrl, model: "llama3", retry: FAST_RETRY });
        expect((await p.next(firstRequest())).text).toBe("hi");
      } finally {
        if (saved === undefined) delete process.env.OPENAI_API_KEY;
        else process.env.OPENAI_API_KEY = saved;
      }
      expect(open.requests[0]!.headers.authorization).toBeUndefined();
      expect(JSON.stringify(open.requests[0]!.headers)).not.toContain("decoy");
    } finally {
      await open.close();
    }
  });

  it("uses max_completion_tokens for api.openai.com and max_tokens elsewhere", () => {
    const official = buildOpenAiRequest(firstRequest(), { model: "m", maxTokens: 99, baseUrl: "https://api.openai.com/v1" });
    expect(official).toMatchObject({ max_completion_tokens: 99 });
    expect(official).not.toHaveProperty("max_tokens");
    const local = buildOpenAiRequest(firstRequest(), { model: "m", maxTokens: 99, baseUrl: "http://localhost:11434/v1" });
    expect(local).toMatchObject({ max_tokens: 99 });
    expect(local).not.toHaveProperty("max_completion_tokens");
  });

  it("sends no tools list when there are no tools", () => {
    const body = buildOpenAiRequest(
      { system: "", tools: [], conversation: [{ role: "user", text: "hi" }] },
      { model: "m", maxTokens: 5, baseUrl: "http://x" },
    );
    expect(body).not.toHaveProperty("tools");
    expect(body.messages).toEqual([{ role: "user", content: "hi" }]);
  });
});

describe("openai: failures and retries", () => {
  it("honours retry-after-ms", async () => {
    standIn.enqueue(
      { status: 429, headers: { "retry-after-ms": "400" }, body: { error: { message: "slow down" } } },
      { body: openAiCompletion({ text: "hello" }) },
    );
    const started = Date.now();
    await provider({ retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5_000 } }).next(firstRequest());
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
  });

  it("quotes a non-JSON error page briefly", async () => {
    for (let i = 0; i < 3; i++) {
      standIn.enqueue({
        status: 502,
        headers: { "content-type": "text/html" },
        body: `<html><body>${"Bad gateway ".repeat(100)}</body></html>`,
      });
    }
    const e = (await rejectionOf(provider().next(firstRequest()))) as ModelError;
    expect(e.message).toMatch(/^The model provider \(openai\) kept failing: HTTP 502 after 3 attempts: .*Bad gateway/);
    expect(e.message.length).toBeLessThan(450);
  });

  it("does not retry a 404 and hints at the model name and base URL", async () => {
    standIn.enqueue({ status: 404, body: { error: { message: "The model `gpt-nope` does not exist", code: "model_not_found" } } });
    const e = (await rejectionOf(provider().next(firstRequest()))) as ModelError;
    expect(e.message).toBe(
      "The model provider (openai) refused the request (HTTP 404) (check MODEL_NAME and MODEL_BASE_URL): The model `gpt-nope` does not exist",
    );
    expect(e.code).toBe("rejected");
    expect(standIn.requests).toHaveLength(1);
  });

  it("does not call at all with an already aborted signal", async () => {
    const e = (await rejectionOf(provider().next(firstRequest(), AbortSignal.abort()))) as ModelError;
    expect(e.code).toBe("aborted");
    expect(standIn.requests).toHaveLength(0);
  });
});
