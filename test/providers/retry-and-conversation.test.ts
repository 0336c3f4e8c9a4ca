// The provider-neutral parts: backoff, retry-after, the repair of dangling
// tool calls, argument parsing, error scrubbing, and config wiring.
import { describe, expect, it } from "vitest";
import { parseToolArguments, repairConversation } from "../../src/providers/conversation";
import { errorBodyText, scrubDetail } from "../../src/providers/model-error";
import {
  createModelProvider,
  DEFAULT_RETRY_POLICY,
  ModelError,
  modelProviderFromConfig,
  UNANSWERED_TOOL_CALL_RESULT,
  type ConversationItem,
} from "../../src/providers/model-provider";
import { parseRetryAfter, retryDelayMs, withRetries } from "../../src/providers/retry";
import { rejectionOf } from "./fixtures";

describe("backoff", () => {
  const policy = { attempts: 5, baseDelayMs: 100, maxDelayMs: 1_000 };

  it("doubles per retry, with jitter in the upper half, capped at maxDelayMs", () => {
    expect(retryDelayMs(policy, 0, undefined, () => 0)).toBe(50);
    expect(retryDelayMs(policy, 0, undefined, () => 1)).toBe(100);
    expect(retryDelayMs(policy, 2, undefined, () => 0)).toBe(200);
    expect(retryDelayMs(policy, 2, undefined, () => 1)).toBe(400);
    expect(retryDelayMs(policy, 10, undefined, () => 1)).toBe(1_000);
    for (let i = 0; i < 50; i++) {
      const d = retryDelayMs(policy, 1, undefined);
      expect(d).toBeGreaterThanOrEqual(100);
      expect(d).toBeLessThanOrEqual(200);
    }
  });

  it("uses retry-after instead, capped at maxDelayMs", () => {
    expect(retryDelayMs(policy, 0, 700)).toBe(700);
    expect(retryDelayMs(policy, 0, 0)).toBe(0);
    expect(retryDelayMs(policy, 0, 60_000)).toBe(1_000);
  });

  it("has the documented default policy", () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({ attempts: 4, baseDelayMs: 500, maxDelayMs: 8_000 });
  });
});

describe("retry-after", () => {
  it("reads seconds, milliseconds and HTTP dates", () => {
    expect(parseRetryAfter(new Headers({ "retry-after": "3" }))).toBe(3_000);
    expect(parseRetryAfter(new Headers({ "retry-after": "0.5" }))).toBe(500);
    expect(parseRetryAfter(new Headers({ "retry-after-ms": "250", "retry-after": "9" }))).toBe(250);
    const now = Date.parse("2026-11-29T10:00:00Z");
    expect(parseRetryAfter(new Headers({ "retry-after": "Sun, 29 Nov 2026 10:00:07 GMT" }), now)).toBe(7_000);
    expect(parseRetryAfter(new Headers({ "retry-after": "Sun, 29 Nov 2026 09:00:00 GMT" }), now)).toBe(0);
  });

  it("ignores what it cannot read", () => {
    expect(parseRetryAfter(new Headers())).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter(new Headers({ "retry-after": "soon" }))).toBeUndefined();
    expect(parseRetryAfter(new Headers({ "retry-after": "-4" }))).toBeUndefined();
  });
});

describe("withRetries", () => {
  it("only ever rejects with a ModelError, whatever the classifier does", async () => {
    const e = await rejectionOf(
      withRetries(
        {
          provider: "openai",
          policy: { attempts: 2, baseDelayMs: 0, maxDelayMs: 0 },
          classify: () => {
            throw new Error("classifier bug");
          },
        },
        async () => {
          throw new TypeError("boom");
        },
      ),
    );
    expect(e).toBeInstanceOf(ModelError);
  });

  it("makes exactly `attempts` calls, and one with attempts 1", async () => {
    let calls = 0;
    const run = (attempts: number) =>
      rejectionOf(
        withRetries(
          {
            provider: "anthropic",
            policy: { attempts, baseDelayMs: 0, maxDelayMs: 0 },
            classify: () => ({ retryable: true, what: "HTTP 503" }),
          },
          async () => {
            calls++;
            throw new Error("x");
          },
        ),
      );
    const e = (await run(4)) as ModelError;
    expect(calls).toBe(4);
    expect(e.message).toBe("The model provider (anthropic) kept failing: HTTP 503 after 4 attempts");
    calls = 0;
    expect(((await run(1)) as ModelError).message).toBe("The model provider (anthropic) kept failing: HTTP 503 after 1 attempt");
    expect(calls).toBe(1);
  });
});

describe("repairConversation", () => {
  const call = (id: string) => ({ tool_call_id: id, tool_name: "mcp__demo__t", arguments: {} });

  it("leaves a complete conversation as it is", () => {
    const items: ConversationItem[] = [
      { role: "user", text: "hi" },
      { role: "assistant", tool_calls: [call("a")] },
      { role: "tool_results", results: [{ tool_call_id: "a", content: "ok", is_error: false }] },
      { role: "assistant", text: "done", tool_calls: [] },
    ];
    expect(repairConversation(items)).toEqual(items);
  });

  it("answers a dangling call with a synthetic error result, also at the very end", () => {
    const repaired = repairConversation([
      { role: "user", text: "hi" },
      { role: "assistant", text: "cut", tool_calls: [call("a"), call("b")] },
    ]);
    expect(repaired[2]).toEqual({
      role: "tool_results",
      results: [
        { tool_call_id: "a", content: UNANSWERED_TOOL_CALL_RESULT, is_error: true },
        { tool_call_id: "b", content: UNANSWERED_TOOL_CALL_RESULT, is_error: true },
      ],
    });
  });

  it("completes partial results in call order and drops results that answer nothing", () => {
    const repaired = repairConversation([
      { role: "user", text: "hi" },
      { role: "assistant", tool_calls: [call("a"), call("b")] },
      {
        role: "tool_results",
        results: [
          { tool_call_id: "b", content: "B", is_error: false },
          { tool_call_id: "zzz", content: "stray", is_error: false },
        ],
      },
      { role: "tool_results", results: [{ tool_call_id: "a", content: "late", is_error: false }] },
      { role: "user", text: "next" },
    ]);
    expect(repaired).toEqual([
      { role: "user", text: "hi" },
      { role: "assistant", tool_calls: [call("a"), call("b")] },
      {
        role: "tool_results",
        results: [
          { tool_call_id: "a", content: UNANSWERED_TOOL_CALL_RESULT, is_error: true },
          { tool_call_id: "b", content: "B", is_error: false },
        ],
      },
      { role: "user", text: "next" },
    ]);
  });

  it("drops assistant items with neither text nor calls", () => {
    expect(
      repairConversation([
        { role: "user", text: "hi" },
        { role: "assistant", text: "", tool_calls: [] },
        { role: "user", text: "again" },
      ]),
    ).toEqual([
      { role: "user", text: "hi" },
      { role: "user", text: "again" },
    ]);
  });
});

describe("parseToolArguments", () => {
  it("accepts objects and JSON objects, and empty as {}", () => {
    expect(parseToolArguments({ a: 1 })).toEqual({ a: 1 });
    expect(parseToolArguments('{"a":1}')).toEqual({ a: 1 });
    expect(parseToolArguments("")).toEqual({});
    expect(parseToolArguments("  ")).toEqual({});
    expect(parseToolArguments(undefined)).toEqual({});
    expect(parseToolArguments(null)).toEqual({});
  });

  it("refuses malformed JSON and non-objects", () => {
    expect(parseToolArguments("{a:1}")).toBeUndefined();
    expect(parseToolArguments('{"a":')).toBeUndefined();
    expect(parseToolArguments("[1]")).toBeUndefined();
    expect(parseToolArguments("null")).toBeUndefined();
    expect(parseToolArguments("7")).toBeUndefined();
    expect(parseToolArguments([1])).toBeUndefined();
    expect(parseToolArguments(3)).toBeUndefined();
  });
});

describe("error text", () => {
  it("scrubs the key and key-shaped strings, folds whitespace and cuts long text", () => {
    expect(scrubDetail("bad key my-secret-value here", "my-secret-value")).toBe("bad key [redacted] here");
    expect(scrubDetail("Incorrect API key provided: sk-proj-abc***wxyz.", undefined)).toBe("Incorrect API key provided: [redacted]");
    expect(scrubDetail("a\n\n  b", undefined)).toBe("a b");
    expect(scrubDetail("x".repeat(1_000), undefined)).toHaveLength(301);
  });

  it("finds the message in the providers' error bodies", () => {
    expect(errorBodyText({ type: "error", error: { type: "api_error", message: "Anthropic says" } })).toBe("Anthropic says");
    expect(errorBodyText({ message: "OpenAI inner", type: "server_error" })).toBe("OpenAI inner");
    expect(errorBodyText({ error: "Ollama says" })).toBe("Ollama says");
    expect(errorBodyText("plain")).toBe("plain");
    expect(errorBodyText(undefined)).toBeUndefined();
  });
});

describe("from the host config", () => {
  it("is undefined for scripted, and the named provider otherwise", () => {
    expect(
      modelProviderFromConfig({ MODEL_PROVIDER: "scripted", MODEL_NAME: undefined, MODEL_BASE_URL: undefined, MODEL_API_KEY: undefined }),
    ).toBeUndefined();
    const anthropic = modelProviderFromConfig({
      MODEL_PROVIDER: "anthropic",
      MODEL_NAME: "claude-x",
      MODEL_BASE_URL: undefined,
      MODEL_API_KEY: "k",
    });
    expect(anthropic?.name).toBe("anthropic");
    const openai = modelProviderFromConfig({
      MODEL_PROVIDER: "openai",
      MODEL_NAME: undefined,
      MODEL_BASE_URL: "http://127.0.0.1:1/v1",
      MODEL_API_KEY: undefined,
    });
    expect(openai?.name).toBe("openai");
  });

  it("refuses an unknown provider name with a ModelError", () => {
    expect(() => createModelProvider("gemini" as "openai", {})).toThrow(ModelError);
  });
});
