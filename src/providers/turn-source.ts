// What the agent loop asks of a run's model (the real providers and the
// scripted player alike, src/agent/model-source.ts): how long it thinks, the
// next step, and the results of the turn's calls. Declared here, beside the
// providers, so the operating hooks (src/operate/run-hooks.ts) wrap a source
// without importing the agent above them.
import type { Done } from "../execution/tool-calls";

export interface ProposedCall {
  tool_name: string;
  arguments: Record<string, unknown>;
  tool_call_id?: string;
}

/** One model response, or why there is none. `final`: the model is done after it. */
export type ModelStep =
  | { kind: "turn"; text?: string; tool_calls: ProposedCall[]; final: boolean }
  | { kind: "finished" }
  | { kind: "failed"; message: string };

export interface ModelSource {
  /** How long the model thinks before turn `index`, in ms. */
  delayMs(index: number): number;
  /** The person's message that starts the run. */
  begin(message: string): void;
  next(index: number, signal: AbortSignal): Promise<ModelStep>;
  /** The ended calls of a turn, in the model's order. */
  toolResults(calls: readonly Done[]): void;
}
