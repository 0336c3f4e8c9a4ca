// The `openai` model provider: any OpenAI-compatible chat-completions endpoint
// with tools (OpenAI, Workers AI, vLLM, Ollama), through the official SDK
// (`openai`, which runs in workerd and Node). Non-streaming: one
// `POST {base}/chat/completions`, one complete JSON answer.
//
// The client is built with every setting given explicitly and `maxRetries: 0`:
// retries are ./retry.ts's, and nothing comes from process.env (no
// OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_ORG_ID fallback). Without
// MODEL_API_KEY no Authorization header is sent at all, for local servers
// that need none.
//
// Tolerated from compatible servers: tool calls without an id (one is made
// up), `arguments` that are empty (`{}`) or already an object, and a
// finish_reason of "stop" next to tool calls (Ollama). Not tolerated:
// arguments that are not a JSON object. They are never guessed (passing `{}`
// to a tool that changes things is unsafe); the model is asked again (a model
// call changes nothing), and if it keeps doing it the call fails with a
// ModelError.
import OpenAI from "openai";
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import {
  DEFAULT_MAX_TOKENS,
  DEFAULT_MODEL_TIMEOUT_MS,
  finishTurn,
  isPlainObject,
  parseToolArguments,
  repairConversation,
  syntheticToolCallId,
  UnusableAnswer,
} from "./conversation";
import { classifySdkError } from "./failures";
import type { ModelProvider, ModelRequest, ModelToolCall, ModelTurn, ProviderSettings } from "./model-types";
import { DEFAULT_RETRY_POLICY, withRetries } from "./retry";

const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";
const DEFAULT_OPENAI_MODEL = "gpt-5-mini";

const PROVIDER = "openai";

/**
 * Chat completions has no error flag on a tool message, so an error result
 * says so in its text.
 */
export const TOOL_ERROR_PREFIX = "[tool error] ";

/**
 * The chat-completions request for a model request. The conversation is
 * first repaired (repairConversation: a dangling tool call gets an error
 * result), then mapped: the system prompt → a system message; user text → a
 * user message; assistant → content and `tool_calls` with JSON-string
 * arguments; each tool result → a `tool` message with its tool_call_id.
 *
 * The output cap is `max_completion_tokens` for api.openai.com (whose newer
 * models refuse `max_tokens`) and `max_tokens` elsewhere (what compatible
 * servers understand).
 */
export function buildOpenAiRequest(
  request: ModelRequest,
  options: { model: string; maxTokens: number; baseUrl: string },
): ChatCompletionCreateParamsNonStreaming {
  const messages: ChatCompletionMessageParam[] = [];
  if (request.system !== "") messages.push({ role: "system", content: request.system });
  for (const item of repairConversation(request.conversation)) {
    if (item.role === "user") {
      messages.push({ role: "user", content: item.text });
    } else if (item.role === "assistant") {
      if (item.tool_calls.length === 0) {
        messages.push({ role: "assistant", content: item.text ?? "" });
      } else {
        messages.push({
          role: "assistant",
          content: item.text ? item.text : null,
          tool_calls: item.tool_calls.map((call) => ({
            id: call.tool_call_id,
            type: "function" as const,
            function: { name: call.tool_name, arguments: JSON.stringify(call.arguments) },
          })),
        });
      }
    } else {
      for (const result of item.results) {
        messages.push({
          role: "tool",
          tool_call_id: result.tool_call_id,
          content: result.is_error ? `${TOOL_ERROR_PREFIX}${result.content}` : result.content,
        });
      }
    }
  }
  const tools: ChatCompletionTool[] = request.tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: { type: "object", ...t.input_schema } },
  }));
  const cap = isOpenAiHost(options.baseUrl) ? { max_completion_tokens: options.maxTokens } : { max_tokens: options.maxTokens };
  return {
    model: options.model,
    messages,
    // An empty tools list is refused by OpenAI; no tools means none are sent.
    ...(tools.length > 0 ? { tools } : {}),
    ...cap,
  };
}

function isOpenAiHost(baseUrl: string): boolean {
  try {
    return new URL(baseUrl).hostname === "api.openai.com";
  } catch {
    return false;
  }
}

/** A chat-completions response as a model turn; throws UnusableAnswer when it is not one. */
function parseOpenAiCompletion(body: unknown): ModelTurn {
  if (!isPlainObject(body) || !Array.isArray(body.choices)) {
    throw new UnusableAnswer("the response is not a chat completion (no choices list)", false);
  }
  const choice: unknown = body.choices[0];
  if (!isPlainObject(choice) || !isPlainObject(choice.message)) {
    throw new UnusableAnswer("the chat completion has no message", false);
  }
  const message = choice.message;
  const text = contentText(message.content);
  const stop = mapFinishReason(choice.finish_reason);
  const calls: ModelToolCall[] = [];
  const rawCalls: unknown[] = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  for (const [index, raw] of rawCalls.entries()) {
    const fn = isPlainObject(raw) && isPlainObject(raw.function) ? raw.function : undefined;
    if (!isPlainObject(raw) || !fn || typeof fn.name !== "string" || fn.name === "") {
      throw new UnusableAnswer("a tool call has no function name", true);
    }
    const args = parseToolArguments(fn.arguments);
    if (!args) {
      // A call cut off by the token cap has half its arguments: it was never going to run, so it is left out.
      if (stop === "max_tokens") continue;
      throw new UnusableAnswer(`the arguments of tool call ${fn.name} are not a JSON object`, true);
    }
    const id = typeof raw.id === "string" && raw.id !== "" ? raw.id : syntheticToolCallId(index);
    calls.push({ tool_call_id: id, tool_name: fn.name, arguments: args });
  }
  return finishTurn(text, calls, stop);
}

/** Message content as text: a string, or (some servers) a list of text parts. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (isPlainObject(part) && typeof part.text === "string" ? part.text : "")).join("");
  }
  return "";
}

function mapFinishReason(reason: unknown): ModelTurn["stop"] {
  switch (reason) {
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "length":
      return "max_tokens";
    // stop, content_filter, null: the model has finished its turn.
    default:
      return "end";
  }
}

export function createOpenAiProvider(settings: ProviderSettings): ModelProvider {
  const model = settings.model ?? DEFAULT_OPENAI_MODEL;
  const maxTokens = settings.maxTokens ?? DEFAULT_MAX_TOKENS;
  const policy = settings.retry ?? DEFAULT_RETRY_POLICY;
  const baseUrl = settings.baseUrl ?? DEFAULT_OPENAI_BASE_URL;
  const apiKey = settings.apiKey;
  const customFetch = settings.fetch;
  const client = new OpenAI({
    // Without a key the SDK still wants a string; the Authorization header is then removed below.
    apiKey: apiKey ?? "",
    baseURL: baseUrl,
    organization: null,
    project: null,
    webhookSecret: null,
    maxRetries: 0,
    timeout: settings.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
    logLevel: "off",
    ...(apiKey ? {} : { defaultHeaders: { Authorization: null } }),
    // Called unbound, as workerd's fetch wants.
    ...(customFetch ? { fetch: (input, init) => customFetch(input, init) } : {}),
  });

  return {
    name: PROVIDER,
    async next(request, signal) {
      const body = buildOpenAiRequest(request, { model, maxTokens, baseUrl });
      return withRetries(
        { provider: PROVIDER, policy, signal, classify: (error) => classifySdkError(PROVIDER, OpenAI, error, apiKey) },
        async () => {
          const completion: unknown = await client.chat.completions.create(body, signal ? { signal } : undefined);
          return parseOpenAiCompletion(completion);
        },
      );
    },
  };
}
