// The real model providers behind one small interface: the engine hands over
// the system prompt, the conversation so far and the tool list, and gets the
// model's next turn (text and/or tool calls, and why it stopped).
//
// - `anthropic`: the Messages API (./anthropic.ts).
// - `openai`: any OpenAI-compatible chat-completions endpoint with tools:
//   OpenAI, Workers AI, vLLM, Ollama (./openai.ts).
// (`scripted`, the trigger's script, is not a network provider; see ./scripted.ts.)
//
// Both use the official SDKs (`@anthropic-ai/sdk`, `openai`), which run in
// workerd and in Node: they are fetch-based, take `fetch` and `baseURL`, and
// are built with `maxRetries: 0` so that ./retry.ts is the only retry policy.
// Every setting is passed explicitly: the SDKs' habit of reading
// ANTHROPIC_API_KEY / OPENAI_API_KEY / *_BASE_URL from process.env (which
// nodejs_compat fills from the Worker's vars) never applies.
//
// Calls are non-streaming: one request, one complete JSON answer. The engine
// waits for whole turns anyway, and it keeps the stand-ins simple.
//
// next() only ever rejects with a ModelError, whose message is for a person.
import type { HostConfig } from "../config/config";
import { createAnthropicProvider } from "./anthropic";
import { ModelError } from "./model-error";
import { createOpenAiProvider } from "./openai";

export { ModelError } from "./model-error";
export { DEFAULT_RETRY_POLICY } from "./retry";
export { UNANSWERED_TOOL_CALL_RESULT } from "./conversation";

export interface ModelToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export interface ModelToolCall {
  tool_call_id: string;
  tool_name: string;
  arguments: Record<string, unknown>;
}

/**
 * The conversation as the engine records it. An assistant item with
 * tool_calls is normally followed by a tool_results item answering each call;
 * when it is not (a `max_tokens` stop cut the turn off, or a result is
 * missing), the providers repair the request (repairConversation in
 * ./conversation.ts): every unanswered call gets a synthetic error result
 * (UNANSWERED_TOOL_CALL_RESULT), and results that answer no call just before
 * them are dropped.
 */
export type ConversationItem =
  | { role: "user"; text: string }
  | { role: "assistant"; text?: string; tool_calls: ModelToolCall[] }
  | { role: "tool_results"; results: { tool_call_id: string; content: string; is_error: boolean }[] };

export interface ModelTurn {
  text?: string;
  tool_calls: ModelToolCall[];
  stop: "end" | "tool_use" | "max_tokens";
}

export interface ModelRequest {
  system: string;
  conversation: ConversationItem[];
  tools: ModelToolSpec[];
}

export interface ModelProvider {
  readonly name: "anthropic" | "openai";
  /** The model's next turn. Rejects only with a ModelError (also when `signal` fires). */
  next(request: ModelRequest, signal?: AbortSignal): Promise<ModelTurn>;
}

export interface RetryPolicy {
  /** Model calls in all, the first included (1 = no retry). */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface ProviderSettings {
  /** MODEL_BASE_URL; default the provider's own API. */
  baseUrl?: string;
  /** MODEL_NAME; default DEFAULT_ANTHROPIC_MODEL / DEFAULT_OPENAI_MODEL. */
  model?: string;
  /** MODEL_API_KEY. Required for anthropic; for openai, without it no Authorization header is sent (local servers). */
  apiKey?: string;
  /** Output token cap per turn; default DEFAULT_MAX_TOKENS. */
  maxTokens?: number;
  /** The fetch to use (a test's, or a service binding's); default the global fetch. */
  fetch?: typeof fetch;
  /** Default DEFAULT_RETRY_POLICY. */
  retry?: RetryPolicy;
  /** Per-attempt timeout in ms (a timeout counts as a retryable failure); default DEFAULT_MODEL_TIMEOUT_MS. */
  timeoutMs?: number;
}

export function createModelProvider(provider: "anthropic" | "openai", settings: ProviderSettings): ModelProvider {
  switch (provider) {
    case "anthropic":
      return createAnthropicProvider(settings);
    case "openai":
      return createOpenAiProvider(settings);
    default: {
      const name: never = provider;
      throw new ModelError(`Unknown model provider ${JSON.stringify(name)}: use "anthropic" or "openai".`, {
        provider: "openai",
        code: "not_configured",
      });
    }
  }
}

/**
 * The provider the host config asks for (MODEL_PROVIDER, MODEL_NAME,
 * MODEL_BASE_URL, MODEL_API_KEY), or undefined for `scripted`, which plays
 * the trigger's script instead of calling a model.
 */
export function modelProviderFromConfig(
  config: Pick<HostConfig, "MODEL_PROVIDER" | "MODEL_NAME" | "MODEL_BASE_URL" | "MODEL_API_KEY">,
  overrides: Omit<ProviderSettings, "baseUrl" | "model" | "apiKey"> = {},
): ModelProvider | undefined {
  if (config.MODEL_PROVIDER === "scripted") return undefined;
  return createModelProvider(config.MODEL_PROVIDER, {
    ...overrides,
    ...(config.MODEL_NAME !== undefined ? { model: config.MODEL_NAME } : {}),
    ...(config.MODEL_BASE_URL !== undefined ? { baseUrl: config.MODEL_BASE_URL } : {}),
    ...(config.MODEL_API_KEY !== undefined ? { apiKey: config.MODEL_API_KEY } : {}),
  });
}
