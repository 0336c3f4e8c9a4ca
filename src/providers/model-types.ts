// The words the providers share (a leaf: it imports nothing of its room): a
// tool offered to the model, a call it proposes, the conversation as the
// engine records it, one turn, the request and the provider interface, and
// the provider settings. ./model-provider.ts builds a provider from them;
// ./anthropic.ts, ./openai.ts, ./conversation.ts and ./retry.ts read them
// from here, so no file of the room imports the one that imports it.

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
