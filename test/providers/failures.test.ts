// The failures and retries both providers share, as one table over both:
// each row is a provider with its local stand-in (test/support/model-stand-ins.ts)
// and its wire format; every case runs against each. What only one provider
// does (Anthropic's 529, OpenAI's retry-after-ms and 404 hint, ...) stays in
// that provider's own file.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createModelProvider, ModelError, type ModelProvider, type ProviderSettings } from "../../src/providers/model-provider";
import {
  anthropicMessage,
  type ModelStandIn,
  openAiCompletion,
  type StandInOptions,
  startAnthropicStandIn,
  startOpenAiStandIn,
} from "../support/model-stand-ins";
import { DUMMY_KEY, FAST_RETRY, firstRequest, rejectionOf } from "./fixtures";

interface ProviderRow {
  name: "anthropic" | "openai";
  model: string;
  start(options?: StandInOptions): Promise<ModelStandIn>;
  /** A successful answer carrying `text`. */
  reply(text: string): unknown;
  /** The provider's error body. */
  error(message: string, type: string): unknown;
  /** A 500's message, as the provider words it. */
  serverErrorMessage: string;
  /** A body cut off mid-JSON. */
  truncatedBody: string;
  /** A JSON body that is not an answer, and the message it gives. */
  notAnAnswer: { body: unknown; message: string };
}

const PROVIDERS: ProviderRow[] = [
  {
    name: "anthropic",
    model: "claude-test",
    start: startAnthropicStandIn,
    reply: (text) => anthropicMessage({ text }),
    error: (message, type) => ({ type: "error", error: { type, message } }),
    serverErrorMessage: "Internal server error",
    truncatedBody: '{"id": "msg_1", "content": [',
    notAnAnswer: {
      body: { hello: "world" },
      message: "The model provider (anthropic) answered something unusable: the response is not a Messages API message (no content list).",
    },
  },
  {
    name: "openai",
    model: "gpt-test",
    start: startOpenAiStandIn,
    reply: (text) => openAiCompletion({ text }),
    error: (message, type) => ({ error: { message, type } }),
    serverErrorMessage: "The server had an error while processing your request.",
    truncatedBody: '{"id": "chatcmpl-1", "choices": [',
    notAnAnswer: {
      body: { object: "chat.completion", choices: [] },
      message: "The model provider (openai) answered something unusable: the chat completion has no message.",
    },
  },
];

describe.each(PROVIDERS)("$name: failures and retries", (row) => {
  let standIn: ModelStandIn;

  beforeEach(async () => {
    standIn = await row.start({ apiKey: DUMMY_KEY });
  });
  afterEach(async () => {
    await standIn.close();
  });

  function provider(settings: Partial<ProviderSettings> = {}): ModelProvider {
    return createModelProvider(row.name, { baseUrl: standIn.baseUrl, apiKey: DUMMY_KEY, model: row.model, retry: FAST_RETRY, ...settings });
  }

  it("retries a 429 and honours retry-after", async () => {
    standIn.enqueue(
      { status: 429, headers: { "retry-after": "1" }, body: row.error("Rate limit reached", "rate_limit_error") },
      { body: row.reply("hello") },
    );
    const started = Date.now();
    const turn = await provider({ retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5_000 } }).next(firstRequest());
    const elapsed = Date.now() - started;

    expect(turn.text).toBe("hello");
    expect(standIn.requests).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(950);
  });

  it("gives up on a persistent 500 with a readable ModelError after the policy's attempts", async () => {
    for (let i = 0; i < 3; i++) standIn.enqueue({ status: 500, body: row.error(row.serverErrorMessage, "api_error") });
    const error = await rejectionOf(provider().next(firstRequest()));

    expect(error).toBeInstanceOf(ModelError);
    const e = error as ModelError;
    expect(e.message).toBe(`The model provider (${row.name}) kept failing: HTTP 500 after 3 attempts: ${row.serverErrorMessage}`);
    expect(e.code).toBe("unavailable");
    expect(e.status).toBe(500);
    expect(e.attempts).toBe(3);
    expect(standIn.requests).toHaveLength(3);
  });

  it("retries network errors", async () => {
    standIn.enqueue({ disconnect: true }, { body: row.reply("back") });
    expect((await provider().next(firstRequest())).text).toBe("back");
    expect(standIn.requests).toHaveLength(2);
  });

  it("does not retry a 401 and says the key is wrong without printing it, even the part the provider echoes", async () => {
    const e = (await rejectionOf(provider({ apiKey: "sk-wrong-dummy-key-1234" }).next(firstRequest()))) as ModelError;

    expect(e).toBeInstanceOf(ModelError);
    expect(e.code).toBe("auth");
    expect(e.status).toBe(401);
    expect(e.message).toBe(`The model provider (${row.name}) refused the API key (HTTP 401): MODEL_API_KEY is wrong or missing.`);
    expect(e.message).not.toContain("sk-wrong-dummy-key-1234");
    expect(standIn.requests).toHaveLength(1);
  });

  it("turns a malformed JSON body into a ModelError, without retrying", async () => {
    standIn.enqueue({ body: row.truncatedBody });
    const e = (await rejectionOf(provider().next(firstRequest()))) as ModelError;
    expect(e).toBeInstanceOf(ModelError);
    expect(e.code).toBe("bad_response");
    expect(e.message).toMatch(
      new RegExp(`^The model provider \\(${row.name}\\) answered something unusable: the response body is not valid JSON`),
    );
    expect(standIn.requests).toHaveLength(1);
  });

  it("turns a JSON body that is not an answer into a ModelError", async () => {
    standIn.enqueue({ body: row.notAnAnswer.body });
    const e = (await rejectionOf(provider().next(firstRequest()))) as ModelError;
    expect(e).toBeInstanceOf(ModelError);
    expect(e.message).toBe(row.notAnAnswer.message);
  });

  it("honours the abort signal during a call", async () => {
    standIn.enqueue({ delayMs: 3_000, body: row.reply("too late") });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const e = (await rejectionOf(provider().next(firstRequest(), controller.signal))) as ModelError;
    expect(e).toBeInstanceOf(ModelError);
    expect(e.code).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
