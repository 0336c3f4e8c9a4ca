// The `anthropic` model provider: the Messages API through the official SDK
// (`@anthropic-ai/sdk`, which runs in workerd and Node; it also sets the
// `anthropic-version` header and the authentication the API expects).
// Non-streaming: one `POST /v1/messages`, one complete JSON message.
//
// The client is built with every setting given explicitly and `maxRetries: 0`:
// retries are ./retry.ts's, and nothing comes from process.env (no
// ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL fallback, no local credential
// files). Without MODEL_API_KEY the provider refuses to call at all.
import Anthropic from "@anthropic-ai/sdk";
import type { ContentBlockParam, MessageCreateParamsNonStreaming, MessageParam, Tool } from "@anthropic-ai/sdk/resources/messages";
import {
  DEFAULT_MAX_TOKENS,
  DEFAULT_MODEL_TIMEOUT_MS,
  finishTurn,
  isPlainObject,
  parseToolArguments,
  repairConversation,
  UnusableAnswer,
} from "./conversation";
import { classifySdkError } from "./failures";
import { ModelError } from "./model-error";
import type { ModelProvider, ModelRequest, ModelToolCall, ModelTurn, ProviderSettings } from "./model-types";
import { DEFAULT_RETRY_POLICY, withRetries } from "./retry";

const DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com";
const DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5";

const PROVIDER = "anthropic";

/**
 * The Messages API request for a model request. The conversation is first
 * repaired (repairConversation: dangling tool_use blocks get an is_error
 * tool_result), then mapped: user text → a user message; assistant → text and
 * tool_use blocks; tool results → a user message of tool_result blocks.
 * Consecutive messages of one role are merged, tool_result blocks first, as
 * the API wants.
 */
export function buildAnthropicRequest(
  request: ModelRequest,
  options: { model: string; maxTokens: number },
): MessageCreateParamsNonStreaming {
  const messages: MessageParam[] = [];
  const push = (role: "user" | "assistant", blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last && last.role === role && Array.isArray(last.content)) {
      last.content.push(...blocks);
    } else {
      messages.push({ role, content: blocks });
    }
  };
  for (const item of repairConversation(request.conversation)) {
    if (item.role === "user") {
      // The API refuses empty text blocks.
      push("user", [{ type: "text", text: item.text === "" ? "(empty message)" : item.text }]);
    } else if (item.role === "assistant") {
      const blocks: ContentBlockParam[] = [];
      if (item.text) blocks.push({ type: "text", text: item.text });
      for (const call of item.tool_calls) {
        blocks.push({ type: "tool_use", id: call.tool_call_id, name: call.tool_name, input: call.arguments });
      }
      push("assistant", blocks);
    } else {
      push(
        "user",
        item.results.map((r) => ({
          type: "tool_result" as const,
          tool_use_id: r.tool_call_id,
          content: r.content,
          is_error: r.is_error,
        })),
      );
    }
  }
  const tools: Tool[] = request.tools.map((t) => ({
    name: t.name,
    description: t.description,
    input_schema: { type: "object", ...t.input_schema } as Tool["input_schema"],
  }));
  return {
    model: options.model,
    max_tokens: options.maxTokens,
    ...(request.system !== "" ? { system: request.system } : {}),
    messages,
    ...(tools.length > 0 ? { tools } : {}),
  };
}

/** A Messages API response as a model turn; throws UnusableAnswer when it is not one. */
function parseAnthropicMessage(body: unknown): ModelTurn {
  if (!isPlainObject(body) || !Array.isArray(body.content)) {
    throw new UnusableAnswer("the response is not a Messages API message (no content list)", false);
  }
  const stop = mapStopReason(body.stop_reason);
  const texts: string[] = [];
  const calls: ModelToolCall[] = [];
  for (const block of body.content as unknown[]) {
    if (!isPlainObject(block)) continue;
    if (block.type === "text" && typeof block.text === "string") {
      texts.push(block.text);
    } else if (block.type === "tool_use") {
      if (typeof block.id !== "string" || block.id === "" || typeof block.name !== "string" || block.name === "") {
        throw new UnusableAnswer("a tool_use block has no id or name", false);
      }
      const args = parseToolArguments(block.input);
      if (!args) {
        // A call cut off by the token cap may have half its input: it was never going to run, so it is left out.
        if (stop === "max_tokens") continue;
        throw new UnusableAnswer(`the input of tool call ${block.name} is not a JSON object`, true);
      }
      calls.push({ tool_call_id: block.id, tool_name: block.name, arguments: args });
    }
    // Other blocks (thinking, server tools) are not part of the engine's turn.
  }
  return finishTurn(texts.join("\n"), calls, stop);
}

function mapStopReason(reason: unknown): ModelTurn["stop"] {
  switch (reason) {
    case "tool_use":
      return "tool_use";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max_tokens";
    // end_turn, stop_sequence, refusal, pause_turn, null: the model has finished its turn.
    default:
      return "end";
  }
}

export function createAnthropicProvider(settings: ProviderSettings): ModelProvider {
  const model = settings.model ?? DEFAULT_ANTHROPIC_MODEL;
  const maxTokens = settings.maxTokens ?? DEFAULT_MAX_TOKENS;
  const policy = settings.retry ?? DEFAULT_RETRY_POLICY;
  const apiKey = settings.apiKey;
  const customFetch = settings.fetch;
  const client = apiKey
    ? new Anthropic({
        apiKey,
        baseURL: settings.baseUrl ?? DEFAULT_ANTHROPIC_BASE_URL,
        maxRetries: 0,
        timeout: settings.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
        logLevel: "off",
        // Called unbound, as workerd's fetch wants.
        ...(customFetch ? { fetch: (input, init) => customFetch(input, init) } : {}),
      })
    : undefined;

  return {
    name: PROVIDER,
    async next(request, signal) {
      if (!client) {
        throw new ModelError("The model provider (anthropic) has no API key: set MODEL_API_KEY (wrangler secret put MODEL_API_KEY).", {
          provider: PROVIDER,
          code: "not_configured",
        });
      }
      const body = buildAnthropicRequest(request, { model, maxTokens });
      return withRetries(
        { provider: PROVIDER, policy, signal, classify: (error) => classifySdkError(PROVIDER, Anthropic, error, apiKey) },
        async () => {
          const message: unknown = await client.messages.create(body, signal ? { signal } : undefined);
          return parseAnthropicMessage(message);
        },
      );
    },
  };
}
