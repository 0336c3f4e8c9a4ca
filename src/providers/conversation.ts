// What both providers share about conversations and answers: the repair of
// tool calls left without results, the reading of tool-call arguments, and
// the final shape of a turn. Provider-neutral; each provider then speaks its
// own wire format.
import type { ConversationItem, ModelToolCall, ModelTurn } from "./model-types";

/** Output token cap per turn unless ProviderSettings.maxTokens says otherwise. */
export const DEFAULT_MAX_TOKENS = 8192;
/** Per-attempt timeout: long enough for a full DEFAULT_MAX_TOKENS answer from a slow model. */
export const DEFAULT_MODEL_TIMEOUT_MS = 300_000;

/**
 * The result handed to the model for a tool call that has no result in the
 * conversation (the turn that proposed it was cut off by max_tokens, so the
 * engine never ran it). Marked as an error so the model does not take it for
 * tool output, and worded so that it calls again if it still needs the tool.
 */
export const UNANSWERED_TOOL_CALL_RESULT =
  "not executed: the previous response was cut off before this tool call was complete, so it was not run. Call the tool again if it is still needed.";

type ToolResults = Extract<ConversationItem, { role: "tool_results" }>;

/**
 * The conversation as both APIs require it: every assistant item with tool
 * calls is followed by one tool_results item answering exactly those calls, in
 * their order.
 *
 * Decision (dangling tool calls): a call without a result gets a synthetic
 * result `{is_error: true, content: UNANSWERED_TOOL_CALL_RESULT}` rather than
 * being dropped. The model then sees the truth (it asked, nothing ran), the
 * ids stay those of the event log, and a cut-off call is not silently
 * forgotten. Results that answer no call of the assistant item right before
 * them cannot be sent (both APIs refuse them) and are dropped, as are
 * assistant items with neither text nor calls.
 */
export function repairConversation(items: readonly ConversationItem[]): ConversationItem[] {
  const out: ConversationItem[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (item.role === "user") {
      out.push(item);
    } else if (item.role === "assistant") {
      const calls = item.tool_calls ?? [];
      if (!item.text && calls.length === 0) continue;
      out.push(item);
      if (calls.length === 0) continue;
      const next = items[i + 1];
      const given = next?.role === "tool_results" ? next.results : [];
      if (next?.role === "tool_results") i++;
      const results: ToolResults["results"] = calls.map(
        (call) =>
          given.find((r) => r.tool_call_id === call.tool_call_id) ?? {
            tool_call_id: call.tool_call_id,
            content: UNANSWERED_TOOL_CALL_RESULT,
            is_error: true,
          },
      );
      out.push({ role: "tool_results", results });
    }
    // A tool_results item not right after an assistant item with calls answers nothing: dropped.
  }
  return out;
}

/**
 * Tool-call arguments as an object: an object as is; a JSON string holding an
 * object parsed; an empty string, null or undefined as `{}` (what several
 * compatible servers send for a tool without parameters). Anything else
 * (malformed JSON, a JSON array or scalar) is undefined: the answer is
 * unusable, and arguments are never guessed for a tool that may change things.
 */
export function parseToolArguments(raw: unknown): Record<string, unknown> | undefined {
  if (raw === undefined || raw === null) return {};
  if (typeof raw === "string") {
    if (raw.trim() === "") return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return undefined;
    }
    return isPlainObject(parsed) ? parsed : undefined;
  }
  return isPlainObject(raw) ? raw : undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The provider answered, but with something this code cannot use. `retryable`
 * when asking again may well help (a model's malformed tool-call arguments),
 * not when the answer's shape is wrong (a misconfigured endpoint answers the
 * same way every time).
 */
export class UnusableAnswer extends Error {
  override readonly name = "UnusableAnswer";
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** An id for a tool call that came without one (some compatible servers omit them). */
export function syntheticToolCallId(index: number): string {
  return `call_${index}_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
}

/**
 * The turn as the engine gets it. The stop reason is made consistent with the
 * calls: a `tool_use` stop without calls is an `end`, an `end` stop with calls
 * is a `tool_use` (Ollama and others say "stop" even when they call tools); a
 * `max_tokens` stop keeps its calls, which the engine records without running.
 * Empty text is no text.
 */
export function finishTurn(text: string, toolCalls: ModelToolCall[], stop: ModelTurn["stop"]): ModelTurn {
  let final = stop;
  if (final === "tool_use" && toolCalls.length === 0) final = "end";
  if (final === "end" && toolCalls.length > 0) final = "tool_use";
  return text.trim() === "" ? { tool_calls: toolCalls, stop: final } : { text, tool_calls: toolCalls, stop: final };
}
