// The run object's RPC surface as the Worker's surfaces call it (HTTP, Slack):
// the type of a run's stub, declared below the Durable Object so a surface
// never imports durable-objects/ (a floor above it). RunObject implements it:
// `runStubFor` (src/http/start-run.ts) hands the namespace's stub out as a
// RunStub, so a method missing or typed differently there fails the build.
import type { ActionOrigin, ActionVerdict, PersonAction } from "../wire/run-protocol";
import type { ActiveHalt } from "../policy/halt-scope";

/**
 * The active halts as a surface read them from D1 when the action arrived (contract section 23),
 * beside its own lookups so the read adds no sequential round trip; the run reads them itself
 * when a surface passes none.
 */
export type ActiveHalts = readonly ActiveHalt[] | "unavailable";
/** The halts with the policy pointer read in the same statement (contract section 24), as a surface passes them. */
export type HaltsAndPolicy = { halts: ActiveHalt[]; policy_version: number } | "unavailable";
import type { ConversationItem } from "../providers/model-provider";
import type { RunSummary, StartRunInput } from "./run-record";

interface RunRpc extends Rpc.DurableObjectBranded {
  /** Starts the run once; a second start (duplicate delivery) changes nothing. `origin`: the trigger's, audited with run.trigger (section 25). */
  start(input: StartRunInput, origin?: ActionOrigin): Promise<{ created: boolean }>;
  /** The run's turns as a later run in the same Slack thread continues them. */
  threadTurns(): Promise<ConversationItem[]>;
  summary(): Promise<RunSummary | null>;
  /** A person's action, judged by the run, answered with one verdict (src/wire/run-protocol.ts); `origin` is audited with it (section 25). */
  act(action: PersonAction, halts?: HaltsAndPolicy, origin?: ActionOrigin): Promise<ActionVerdict>;
  /** GET /events: the SSE stream (contract section 5). */
  fetch(request: Request): Promise<Response>;
}

export type RunStub = DurableObjectStub<RunRpc>;
