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
import type { ModelProvider, ProviderSettings } from "./model-types";
import { createOpenAiProvider } from "./openai";

export { ModelError } from "./model-error";
export { DEFAULT_RETRY_POLICY } from "./retry";
export { UNANSWERED_TOOL_CALL_RESULT } from "./conversation";
export type {
  ConversationItem,
  ModelProvider,
  ModelRequest,
  ModelToolCall,
  ModelToolSpec,
  ModelTurn,
  ProviderSettings,
  RetryPolicy,
} from "./model-types";

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
