// Where a run's model turns come from, behind one interface that both the
// real providers (anthropic, openai) and the scripted player implement, so
// the agent loop has no special cases for either. A source says how long the
// model thinks before a turn (the scripted `delay_ms`, kept by the run's
// alarm so it survives eviction; 0 for a real model), produces the turn, and
// hears the results of the turn's calls.
import type { ScriptTurn } from "../http/trigger-request";
import type { ToolCatalog } from "../execution/tool-catalog";
import type { Done } from "../execution/tool-calls";
import { ModelError, type ModelProvider, type ModelToolCall, type ModelTurn } from "../providers/model-provider";
import { defaultScript, scriptedTurn } from "../providers/scripted";
import { type Conversation, toolResultsItem } from "./conversation-log";
import type { ModelSource, ModelStep, ProposedCall } from "../providers/turn-source";

/** Model turns per run before the run is stopped: a loop guard, far above any real agent turn. */
const MAX_MODEL_TURNS = 50;

/** Where turns come from, and what one is: declared beside the providers (src/providers/turn-source.ts). */
export type { ModelSource, ModelStep, ProposedCall };

/** The trigger's script, played turn by turn; a run without one gets one turn echoing its message. */
export class ScriptedSource implements ModelSource {
  readonly #script: readonly ScriptTurn[];

  constructor(script: readonly ScriptTurn[] | null, message: string) {
    this.#script = script ?? defaultScript(message);
  }

  get script(): readonly ScriptTurn[] {
    return this.#script;
  }

  delayMs(index: number): number {
    return scriptedTurn(this.#script, index)?.delay_ms ?? 0;
  }

  begin(): void {}

  async next(index: number): Promise<ModelStep> {
    const turn = scriptedTurn(this.#script, index);
    if (!turn) return { kind: "finished" };
    return { kind: "turn", text: turn.text, tool_calls: turn.tool_calls ?? [], final: false };
  }

  toolResults(): void {}
}

/**
 * A real model: the conversation so far (kept in the run's storage), the
 * tools, the system prompt. A model call changes nothing, so the provider
 * retries it; one that keeps failing ends the run with run_failed(model_error).
 */
export class ProviderSource implements ModelSource {
  readonly #provider: ModelProvider;
  readonly #conversation: Conversation;
  readonly #catalog: ToolCatalog;
  readonly #system: string;

  constructor(provider: ModelProvider, conversation: Conversation, catalog: ToolCatalog, system: string) {
    this.#provider = provider;
    this.#conversation = conversation;
    this.#catalog = catalog;
    this.#system = system;
  }

  delayMs(): number {
    return 0;
  }

  begin(message: string): void {
    this.#conversation.append({ role: "user", text: message });
  }

  async next(index: number, signal: AbortSignal): Promise<ModelStep> {
    if (index >= MAX_MODEL_TURNS) {
      return { kind: "failed", message: `The model took more than ${MAX_MODEL_TURNS} turns without finishing; the run was stopped.` };
    }
    let turn: ModelTurn;
    try {
      const request = { system: this.#system, conversation: this.#conversation.items(), tools: await this.#catalog.modelTools() };
      turn = await this.#provider.next(request, signal);
    } catch (err) {
      return {
        kind: "failed",
        message: err instanceof ModelError ? err.message : `The model call failed unexpectedly: ${(err as Error).message}`,
      };
    }
    if (signal.aborted) return { kind: "failed", message: "The model call was cancelled." };
    const toolCalls = uniqueIds(turn.tool_calls);
    this.#conversation.append({ role: "assistant", ...(turn.text !== undefined ? { text: turn.text } : {}), tool_calls: toolCalls });
    if (turn.stop === "max_tokens" && toolCalls.length > 0) {
      // Cut off mid-call: nothing of it runs; the provider tells the model so on the next request.
      return { kind: "turn", text: turn.text, tool_calls: [], final: false };
    }
    return { kind: "turn", text: turn.text, tool_calls: toolCalls, final: toolCalls.length === 0 };
  }

  toolResults(calls: readonly Done[]): void {
    this.#conversation.append(toolResultsItem(calls));
  }
}

/**
 * Within one turn tool_call_ids are unique (contract section 17): a real
 * model's repeats are renamed (`<id>_2`, `<id>_3`, ...), in the conversation
 * too, so each result answers exactly one call.
 */
export function uniqueIds(calls: readonly ModelToolCall[]): ModelToolCall[] {
  const seen = new Set<string>();
  return calls.map((call) => {
    let id = call.tool_call_id;
    for (let n = 2; seen.has(id); n++) id = `${call.tool_call_id}_${n}`;
    seen.add(id);
    return id === call.tool_call_id ? call : { ...call, tool_call_id: id };
  });
}
