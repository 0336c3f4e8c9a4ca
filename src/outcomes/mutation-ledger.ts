// The RunObject's view of durable mutation outcomes (contract sections 8 and
// 9): each step of the write-ahead protocol (intent, prior-outcome check,
// checkpoint, settlement, read) as one storage call under a pool slot,
// bounded by STORAGE_WAIT_MS (the wait in the pool's line included),
// answered as a small verdict the run can act on without knowing about
// slots, timeouts or D1. Work that outlives its wait still finishes, and its
// consequences are handled here:
//  - a checkpoint that lands after the caller gave up settles the row
//    `not_executed` (the call was never sent);
//  - a settlement that lands late keeps the call's real result;
//  - nothing here appends events: the run already moved on;
//  - background writes (a late settlement, an unsent call's row, a lost
//    call's outcome_unknown) are kept in the run's storage (row-outbox.ts)
//    until D1 took them, and retried from the run's alarm once the in-memory
//    retries run out, so an object unloaded meanwhile never leaves a row
//    unresolved.
//
// Round trips between the approval and the `tools/call` request (section 7,
// issue 11): at most FOUR sequential remote round trips, two per step, with
// each slot release sent off the critical path (storage-guard.ts):
//   1. intent:     pool acquire → D1 INSERT ... RETURNING         (2 trips)
//   2. checkpoint: pool acquire → D1 UPDATE ... WHERE NOT EXISTS   (2 trips)
//      (checkpointUnlessPrior: the prior-outcome check folded into the
//      checkpoint statement, so there is no separate check and no third step)
// Extra statements only on refusal paths (an intent that conflicted, a
// checkpoint that was refused), never before a dispatch.
import {
  markDispatchedUnlessPrior,
  getOutcome,
  insertIntent,
  settle,
  type IntentInput,
  type MutationOutcomeRow,
  type OutcomeDb,
  type Settlement,
} from "./mutation-outcomes";
import type { RowOutbox, RowWork } from "./row-outbox";
import { guardedStorage, type SlotPool } from "./storage-guard";
import { logger } from "../operate/logger";
import type { MutationLimit } from "../policy/mutation-limits";
import type { WindowSubject } from "./mutation-limits";
import { backoffMs, sleep } from "../schedule/deadline";

/**
 * The shadow version's limits at a checkpoint (contract section 24), and who is told what they found:
 * the active version's verdict (the statement committed, or a full limit of its own refused it) and
 * whether one of the shadow's windows was already full.
 */
export interface ShadowCheckpoint {
  limits: readonly MutationLimit[];
  subject: Exclude<WindowSubject, "row">;
  seen(active: "allowed" | "rate_limited", limited: boolean): void;
}

/** Attempts for background storage work that found no free slot. */
const BACKGROUND_ATTEMPTS = 8;
/** First wait before a background retry, doubled each time (50 ms ... 6.4 s, about 13 s in all): slots free up in milliseconds. */
const BACKGROUND_FIRST_DELAY_MS = 50;

export type IntentVerdict = "recorded" | "replay_blocked" | "unavailable";
export type GuardedCheckpointVerdict =
  | "acknowledged"
  | "prior_outcome_unknown"
  | "unavailable"
  | { kind: "halted"; halt_id: string }
  | { kind: "rate_limited"; retry_after_s: number }
  /** Contract section 24: the active policy version changed since the statement was built; rebuild it under this one. */
  | { kind: "policy_changed"; policy_version: number };
export type SettleVerdict = "settled" | "late";

/** Where background writes outlive the object: the run's row outbox, and the alarm that retries it (`wake` at epoch ms). */
export interface DurableBackground {
  outbox: RowOutbox;
  wake: (at: number) => void;
}

/** How long after the in-memory retries ran out the run's alarm tries a kept write again. */
const OUTBOX_RETRY_MS = 30_000;

export class MutationLedger {
  readonly #db: () => OutcomeDb;
  readonly #pool: SlotPool;
  readonly #waitMs: number;
  readonly #durable: DurableBackground | undefined;
  /** Outbox entries this instance is writing now (a drain leaves them alone). */
  readonly #writing = new Set<number>();

  /** `db` is read at each call so a test can put a seam in front of D1. Without `durable`, background writes live in memory only. */
  constructor(db: () => OutcomeDb, pool: SlotPool, waitMs: number, durable?: DurableBackground) {
    this.#db = db;
    this.#pool = pool;
    this.#waitMs = waitMs;
    this.#durable = durable;
  }

  /**
   * The intent row, written when the call is approved. A row already there
   * for the same identity is ours only if it is the same mutation, still
   * unresolved and never dispatched (re-recorded after a restart); anything
   * else blocks the call (replay_blocked).
   */
  async intent(input: IntentInput & { mutationId: string }, options: { since?: number } = {}): Promise<IntentVerdict> {
    // Written a turn after the approval's frames, the intent's bound still counts from the approval (`since`,
    // epoch ms), so a busy object's scheduling delay never pushes the refusal past STORAGE_WAIT_MS.
    const spent = options.since === undefined ? 0 : Math.max(0, Date.now() - options.since);
    const answer = await this.#guard(`intent ${input.mutationId}`, () => insertIntent(this.#db(), input), this.#waitMs - spent);
    if (answer.status !== "ok") return "unavailable";
    const { created, row } = answer.value;
    if (created) return "recorded";
    return row.mutation_id === input.mutationId && row.state === "unresolved" && row.dispatched === 0 ? "recorded" : "replay_blocked";
  }

  /**
   * The checkpoint with the prior-outcome check folded into the same
   * statement (markDispatchedUnlessPrior): one slot, one D1 round trip.
   *  - "acknowledged": dispatched: true is on disk and no earlier row of
   *    another run for the same channel, tool and digest is unknown; send.
   *  - "prior_outcome_unknown": such an earlier row exists; the row is left
   *    unresolved & dispatched: false, nothing may be sent.
   *  - `{kind: "halted"}`: an active halt covers the row (contract section 23);
   *    the row is left unresolved & dispatched: false, nothing may be sent.
   *  - `{kind: "rate_limited"}`: a mutation limit's window is full (section 23); likewise nothing may be sent.
   *  - "unavailable": no slot or no answer within the bound, a D1 error, or
   *    the row was not unresolved & undispatched; nothing may be sent. A
   *    checkpoint that lands after its wait settles the row not_executed
   *    with `notSent`, since the call it would have allowed was not sent.
   */
  async checkpointUnlessPrior(
    mutationId: string,
    notSent: Omit<Settlement, "state">,
    limits: readonly MutationLimit[] = [],
    policyVersion?: number,
    /** Contract section 24: the shadow version's limits, told whether one was full (a result column of the same statement). */
    shadow?: ShadowCheckpoint,
  ): Promise<GuardedCheckpointVerdict> {
    const answer = await this.#guard(`checkpoint ${mutationId}`, () =>
      markDispatchedUnlessPrior(this.#db(), mutationId, limits, policyVersion, shadow),
    );
    if (answer.status === "ok") {
      const result = answer.value;
      if (result.ok) {
        shadow?.seen("allowed", (result.row as { shadow_limited?: number }).shadow_limited === 1);
        return "acknowledged";
      }
      if (result.error === "halted") return { kind: "halted", halt_id: result.halt_id };
      if (result.error === "rate_limited") {
        shadow?.seen("rate_limited", result.shadow_limited === true);
        return { kind: "rate_limited", retry_after_s: result.retry_after_s };
      }
      if (result.error === "policy_changed") return { kind: "policy_changed", policy_version: result.policy_version };
      return result.error === "prior_outcome_unknown" ? "prior_outcome_unknown" : "unavailable";
    }
    if (answer.status === "timeout") {
      void answer.late.then(
        () => this.settleInBackground(mutationId, { state: "not_executed", ...notSent }),
        () => undefined,
      );
    }
    return "unavailable";
  }

  /** Settles a dispatched call's row; "late" when the write outlived its wait (it still lands with the real result). */
  async settleDispatched(mutationId: string, settlement: Settlement): Promise<SettleVerdict> {
    const answer = await this.#guard(`settle ${mutationId}`, () => settle(this.#db(), mutationId, settlement));
    if (answer.status === "ok") return "settled";
    if (answer.status === "unavailable") this.settleInBackground(mutationId, settlement);
    else this.#keepUntil(answer.late, { kind: "settle", mutationId, settlement });
    return "late";
  }

  /**
   * Settles a row nobody waits for (a call that ended before dispatch, a late
   * checkpoint, a settlement that found no slot). Retried a few times when no
   * slot is free; a row left unresolved is settled by the restart rule or
   * reconciled by an operator.
   */
  settleInBackground(mutationId: string, settlement: Settlement): void {
    this.#background({ kind: "settle", mutationId, settlement });
  }

  /**
   * A mutation refused before dispatch because its intent could not be
   * written (no slot, no answer in time) still gets its row: the intent is
   * written once storage has room, and settled not_executed. Every approved
   * mutation ends with a settled row, and the row never claims a dispatch.
   */
  recordUnsentInBackground(input: IntentInput & { mutationId: string }, settlement: Omit<Settlement, "state">): void {
    this.#background({ kind: "unsent", input, settlement });
  }

  /**
   * Writes every kept background write this instance is not already writing (the run's alarm,
   * or a new instance after an unload). Resolves once each was tried.
   */
  async drain(): Promise<void> {
    const durable = this.#durable;
    if (durable === undefined) return;
    await Promise.all(durable.outbox.pending().map(({ id, work }) => (this.#writing.has(id) ? undefined : this.#write(id, work))));
  }

  /** A write still running past its wait: kept in storage until it lands (an unload meanwhile leaves it to the drain), written again if it fails. */
  #keepUntil(late: Promise<unknown>, work: RowWork): void {
    const durable = this.#durable;
    if (durable === undefined) return;
    const id = durable.outbox.add(work);
    this.#writing.add(id);
    void late.then(
      () => {
        this.#writing.delete(id);
        durable.outbox.done(id);
      },
      () => {
        this.#writing.delete(id);
        void this.#write(id, work);
      },
    );
  }

  /** Kept in the run's storage first (synchronously), then written with retries. */
  #background(work: RowWork): void {
    const id = this.#durable?.outbox.add(work);
    void this.#write(id, work);
  }

  async #write(id: number | undefined, work: RowWork): Promise<void> {
    if (id !== undefined) this.#writing.add(id);
    try {
      if (await this.#perform(work)) {
        if (id !== undefined) this.#durable?.outbox.done(id);
      } else this.#durable?.wake(Date.now() + OUTBOX_RETRY_MS);
    } finally {
      if (id !== undefined) this.#writing.delete(id);
    }
  }

  /** One background write, retried while no slot is free; true once D1 took it (or had nothing left to do). */
  async #perform(work: RowWork): Promise<boolean> {
    if (work.kind === "settle")
      return this.#retrying(`settle ${work.mutationId}`, () => settle(this.#db(), work.mutationId, work.settlement));
    const { input, settlement } = work;
    // A late intent is dated when the call was refused, never after its own settlement (created_at <= settled_at).
    const written = await this.#retrying(`intent ${input.mutationId}`, () =>
      insertIntent(this.#db(), { createdAt: settlement.settledAt, ...input }),
    );
    if (!written) return false;
    return this.#retrying(`settle ${input.mutationId}`, () =>
      settle(this.#db(), input.mutationId, { state: "not_executed", ...settlement }),
    );
  }

  /** Runs storage work until it gets a slot (or the attempts run out); true once it ran. */
  async #retrying(holder: string, work: () => Promise<unknown>): Promise<boolean> {
    for (let attempt = 1; attempt <= BACKGROUND_ATTEMPTS; attempt++) {
      const answer = await this.#guard(holder, work);
      if (answer.status !== "unavailable") return true;
      await sleep(backoffMs({ baseMs: BACKGROUND_FIRST_DELAY_MS, capMs: Number.POSITIVE_INFINITY }, attempt - 1));
    }
    logger.error("mutation storage: no free slot; the write is kept in the run's storage and retried from its alarm", {
      holder,
      attempts: BACKGROUND_ATTEMPTS,
    });
    return false;
  }

  /** The row as stored, null when there is none, "unavailable" when storage did not answer in time. */
  async read(mutationId: string): Promise<MutationOutcomeRow | null | "unavailable"> {
    const answer = await this.#guard(`read ${mutationId}`, () => getOutcome(this.#db(), mutationId));
    return answer.status === "ok" ? answer.value : "unavailable";
  }

  /** A D1 error inside the bound counts as the storage being unavailable: the caller fails closed. */
  async #guard<T>(holder: string, work: () => Promise<T>, waitMs = this.#waitMs) {
    // No time left: fail closed without asking the pool or D1 for anything.
    if (waitMs <= 0) return { status: "unavailable" as const };
    try {
      return await guardedStorage(this.#pool, waitMs, holder, work);
    } catch (err) {
      logger.error("mutation storage failed", { holder, error: (err as Error).message });
      return { status: "unavailable" as const };
    }
  }
}
