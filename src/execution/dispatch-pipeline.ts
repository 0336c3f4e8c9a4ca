// The write-ahead dispatch pipeline of one run (contract sections 7 and 8):
// for an admitted mutation, its intent row, no earlier identical call with an
// unknown outcome, the checkpoint acknowledged, and only then the request;
// then the settlement. A read-only call is simply sent. Also the restart rule:
// a call found "dispatched" that this instance is not running was in flight
// when the object restarted. The ledger and the sender are injected, so the
// pipeline is unit-tested with fakes (test/unit/dispatch-pipeline.test.ts).
//
// The pipeline decides; the caller applies the decision to the call state
// machine (settleDispatch / refuseDispatch in tool-calls.ts).
import type { MutationLedger } from "../outcomes/mutation-ledger";
import type { Settlement } from "../outcomes/mutation-outcomes";
import type { DispatchOutcome, DispatchRefusal, Dispatched } from "./tool-calls";

export type PipelineLedger = Pick<
  MutationLedger,
  "intent" | "priorUnknown" | "checkpoint" | "settleDispatched" | "settleInBackground" | "recordUnsentInBackground" | "read"
>;

/** What the pipeline needs to know about its run, read live (cancellation can arrive at any step). */
export interface PipelineRun {
  run_id: string;
  channel_id: string;
  delivery_id: string | null;
  cancel_requested: boolean;
}

/** The row a mutation's durable work is about. */
export interface RowRef {
  tool_call_id: string;
  tool_name: string;
  arguments_digest: string;
  mutation_id: string;
  approval_id: string | null;
}

export type PipelineDecision =
  | { kind: "settle"; outcome: DispatchOutcome; settlementLate: boolean }
  | { kind: "refuse"; reason: DispatchRefusal };

export type RecoveryDecision = PipelineDecision | { kind: "resume" } | { kind: "retry_later" };

export interface PipelineDeps {
  ledger: PipelineLedger;
  send: (call: Dispatched) => Promise<DispatchOutcome>;
  run: () => PipelineRun;
  now?: () => number;
}

const LOST_MESSAGE = "The engine restarted while this call was in flight; its outcome is unknown and it was not sent again.";

export class DispatchPipeline {
  readonly #deps: PipelineDeps;
  /** Intent writes started at approval, awaited by the pipeline. */
  readonly #intents = new Map<string, Promise<"recorded" | "replay_blocked" | "unavailable">>();
  /** Calls this instance dispatched and is still waiting on; any other "dispatched" call was lost to a restart. */
  readonly #inFlight = new Set<string>();

  constructor(deps: PipelineDeps) {
    this.#deps = deps;
  }

  isInFlight(toolCallId: string): boolean {
    return this.#inFlight.has(toolCallId);
  }

  /** The intent row, from the moment the mutation is approved (written a turn later, so frames leave first). */
  recordIntent(row: RowRef): void {
    this.#intents.set(
      row.tool_call_id,
      afterThisTurn().then(() => this.#deps.ledger.intent(this.#intentInput(row))),
    );
  }

  /**
   * The row of a call that was never sent: not_executed, with the reason the
   * stream gave. Its intent is written first if it never was (storage was
   * full when the call was approved), so the call still ends with a row.
   */
  settleUnsent(row: RowRef, reason: string): void {
    this.#deps.ledger.recordUnsentInBackground(this.#intentInput(row), { reason, settledAt: this.#iso() });
  }

  /**
   * Runs one admitted call through the pipeline and hands its decision to
   * `decided`, even if the run was cancelled meanwhile (a dispatched call is
   * not abandoned). An unexpected error is an ambiguous transport failure.
   */
  start(call: Dispatched, decided: (decision: PipelineDecision) => void): void {
    this.#inFlight.add(call.tool_call_id);
    void afterThisTurn()
      .then(() => this.execute(call))
      .catch(
        (err: unknown): PipelineDecision => ({
          kind: "settle",
          outcome: { kind: "failed", code: "transport_error", message: (err as Error).message, sent: true },
          settlementLate: false,
        }),
      )
      .then((decision) => {
        this.#inFlight.delete(call.tool_call_id);
        decided(decision);
      });
  }

  /** The write-ahead steps for one call; the decision to apply. */
  async execute(call: Dispatched): Promise<PipelineDecision> {
    const { ledger } = this.#deps;
    const run = this.#deps.run();
    const row = rowOf(call);
    if (row === null) {
      if (run.cancel_requested) return { kind: "refuse", reason: "cancelled" };
      return { kind: "settle", outcome: await this.#deps.send(call), settlementLate: false };
    }
    const intent = await (this.#intents.get(call.tool_call_id) ?? ledger.intent(this.#intentInput(row)));
    this.#intents.delete(call.tool_call_id);
    if (intent === "replay_blocked") return { kind: "refuse", reason: "replay_blocked" }; // not our row: never touched
    if (intent === "unavailable") return this.#refuse(row, "storage_unavailable");
    const prior = await ledger.priorUnknown({
      channelId: run.channel_id,
      toolName: call.tool_name,
      argumentsDigest: call.arguments_digest,
      excludeRunId: run.run_id,
    });
    if (prior === true) return this.#refuse(row, "prior_outcome_unknown");
    if (prior === "unavailable") return this.#refuse(row, "storage_unavailable");
    if (this.#deps.run().cancel_requested) return this.#refuse(row, "cancelled");
    const checkpoint = await ledger.checkpoint(row.mutation_id, { reason: "storage_unavailable", settledAt: this.#iso() });
    if (checkpoint !== "acknowledged") return this.#refuse(row, "storage_unavailable");
    // Cancellation that arrived during the checkpoint still wins: nothing has been sent.
    if (this.#deps.run().cancel_requested) return this.#refuse(row, "cancelled");
    const outcome = await this.#deps.send(call);
    const settled = await ledger.settleDispatched(row.mutation_id, this.#durableSettlement(outcome));
    return { kind: "settle", outcome, settlementLate: settled === "late" };
  }

  /**
   * A call marked dispatched that this instance is not running. None is ever
   * sent again once it may have left: a mutation whose checkpoint landed
   * settles outcome_unknown; one whose checkpoint never landed was provably
   * not sent, so its pipeline resumes. A read-only call has no checkpoint and
   * is reported as an ambiguous failure.
   */
  async recover(call: Dispatched): Promise<RecoveryDecision> {
    const lost: PipelineDecision = {
      kind: "settle",
      outcome: { kind: "failed", code: "transport_error", message: LOST_MESSAGE, sent: true },
      settlementLate: false,
    };
    if (call.mutation_id === null) return lost;
    const row = await this.#deps.ledger.read(call.mutation_id);
    if (row === "unavailable") return { kind: "retry_later" };
    if (row === null || (row.dispatched === 0 && row.state === "unresolved")) return { kind: "resume" };
    if (row.state === "unresolved") {
      this.#deps.ledger.settleInBackground(call.mutation_id, {
        state: "outcome_unknown",
        error: { code: "transport_error", message: LOST_MESSAGE },
        settledAt: this.#iso(),
      });
    }
    return lost;
  }

  #refuse(row: RowRef, reason: Exclude<DispatchRefusal, "replay_blocked">): PipelineDecision {
    this.settleUnsent(row, reason);
    return { kind: "refuse", reason };
  }

  #intentInput(row: RowRef) {
    const run = this.#deps.run();
    return {
      mutationId: row.mutation_id,
      runId: run.run_id,
      channelId: run.channel_id,
      deliveryId: run.delivery_id,
      toolCallId: row.tool_call_id,
      approvalId: row.approval_id,
      toolName: row.tool_name,
      argumentsDigest: row.arguments_digest,
    };
  }

  /** The durable row for a dispatched call: completed when the server answered, outcome_unknown otherwise. */
  #durableSettlement(outcome: DispatchOutcome): Settlement {
    const settledAt = this.#iso();
    if (outcome.kind === "failed") return { state: "outcome_unknown", error: { code: outcome.code, message: outcome.message }, settledAt };
    return {
      state: "completed",
      result: { is_error: outcome.is_error, content_bytes: outcome.content_bytes, summary: outcome.summary },
      settledAt,
    };
  }

  #iso(): string {
    return new Date(this.#deps.now?.() ?? Date.now()).toISOString();
  }
}

/** The durable row of a dispatched call, or null for a read-only one. */
export function rowOf(call: Dispatched): RowRef | null {
  if (call.mutation_id === null) return null;
  return {
    tool_call_id: call.tool_call_id,
    tool_name: call.tool_name,
    arguments_digest: call.arguments_digest,
    mutation_id: call.mutation_id,
    approval_id: call.grant === "automatic" ? null : call.grant.approval_id,
  };
}

/**
 * Resolves on the next macrotask. Storage and transport work started in the
 * same turn as an append holds back that turn's outgoing frames and answers;
 * starting it a turn later lets them leave first (measured under wrangler dev:
 * approval POST p50 52 → 10 ms, approval → tool_execution_started at the
 * subscriber p50 58 → 20 ms for a mutation).
 */
export function afterThisTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
