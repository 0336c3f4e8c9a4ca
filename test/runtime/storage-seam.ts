// A seam in front of the real D1 binding for the mutation-fault tests: an
// OutcomeDb (src/outcomes/mutation-outcomes.ts) that, per SQL statement pattern, lets
// the statement through, throws, or stalls it.
//
// A stalled statement has not reached D1 yet: it waits, like a statement
// queued behind a backend holding the session lock longer than the storage
// bound, until the test releases it. `release` then lets the held statements
// run one after another in arrival order (the lock passing from one waiter to
// the next), or all at once (`together`: different rows, no shared lock), and
// resolves once the last one has finished in D1; a statement that arrives while
// that queue drains waits at its end (the lock is still being passed on). `fail` makes a statement
// throw as a D1 error would; `discard` ends held statements with an error.
//
// `installIn(stub)` puts it in front of a run's D1 with
//   runInDurableObject(stub, (instance) => instance.useOutcomeDbForTests(seam))
// on the test entry's RunObject (test-worker.ts), which the runtime project runs.
// A seam may serve several runs. It lives in the test isolate (the Durable
// Objects of the main worker run in the same one), so the test reads and
// changes its state directly, without I/O.
//
// A held statement never waits on a promise the test resolves: it polls its
// own `released` flag with timers in the run object's own context. Resumed
// from the test's context instead, the run's code after it (the slot release
// on the pool's stub, say) would fail with "Cannot perform I/O on behalf of a
// different Durable Object" and leak its pool slot.
import { runInDurableObject } from "cloudflare:test";
import type { RunObject } from "./test-worker";
import type { OutcomeDb, OutcomeStatement } from "../../src/outcomes/mutation-outcomes";

/** How often a held statement looks at its flag, and the test at the statements. */
const POLL_MS = 4;
const pause = () => new Promise<void>((r) => setTimeout(r, POLL_MS));

/** The statements of src/outcomes/mutation-outcomes.ts, by the step of the write-ahead protocol they implement. */
const STATEMENTS = {
  /** insertIntent: the intent row, written at approval. */
  intent: /^\s*INSERT INTO mutation_outcomes/,
  /** A separate prior-outcome query (gone from the execution path: the check is folded into the checkpoint; tests assert it never runs). */
  prior: /state IN \('outcome_unknown', 'unresolved'\)/,
  /** markDispatchedUnlessPrior: the write-ahead checkpoint, with the prior-outcome check folded into the same statement. */
  checkpoint: /SET dispatched = 1/,
  /** settle: every settlement (not_executed, completed, outcome_unknown). */
  settlement: /SET state = \?, reason = \?/,
  /** getOutcome: one row by mutation id (the restart rule's read, and every transition's re-read). */
  read: /^SELECT \* FROM mutation_outcomes WHERE mutation_id = \?$/,
} as const;

export type StatementKind = keyof typeof STATEMENTS;

type SeamAction = "pass" | "stall" | "fail";

export interface RuleOptions {
  /** Only statements whose bound values pass this filter (e.g. a settlement to `completed`). */
  when?: (values: unknown[]) => boolean;
  /** How many statements the rule applies to; after that it passes them. Default: all of them. */
  times?: number;
}

/** One statement as the seam saw it. */
export interface SeamEntry {
  kind: StatementKind | "other";
  query: string;
  values: unknown[];
  action: SeamAction;
  /** "held" while stalled; "done" / "failed" once it finished in D1 (or was made to fail). */
  status: "held" | "running" | "done" | "failed";
  /** What D1 answered (first() row or all() results), once done. */
  answer?: unknown;
  /** When it arrived (Date.now() of the calling context). */
  at: number;
}

interface Rule {
  kind: StatementKind;
  action: Exclude<SeamAction, "pass">;
  when?: (values: unknown[]) => boolean;
  remaining: number;
}

interface Held {
  entry: SeamEntry;
  released: boolean;
  discarded?: boolean;
  /** The statement released just before this one: this one goes only once that one finished. */
  after?: SeamEntry;
}

class StorageSeamError extends Error {
  override readonly name = "StorageSeamError";
}

export class StorageSeam implements OutcomeDb {
  readonly #db: OutcomeDb;
  #rules: Rule[] = [];
  readonly #held: Held[] = [];
  /** The last statement of a serial release still draining (the session lock passed on), if any. */
  #lockTail: SeamEntry | undefined;
  /** Every statement that went through the seam, in arrival order. */
  readonly log: SeamEntry[] = [];

  constructor(db: OutcomeDb) {
    this.#db = db;
  }

  /** Puts the seam in front of D1 for the run behind `stub` (call it before the approval). */
  async installIn(stub: DurableObjectStub): Promise<this> {
    await runInDurableObject(stub, (instance: RunObject) => instance.useOutcomeDbForTests(this));
    return this;
  }

  /** Holds matching statements until `release` (they have not reached D1 meanwhile). */
  stall(kind: StatementKind, options: RuleOptions = {}): this {
    return this.#rule(kind, "stall", options);
  }

  /** Makes matching statements throw, as a D1 error would, without reaching D1. */
  fail(kind: StatementKind, options: RuleOptions = {}): this {
    return this.#rule(kind, "fail", options);
  }

  /** Statements of `kind` (or of every kind) currently held. */
  held(kind?: StatementKind): SeamEntry[] {
    return this.#held.filter((h) => !h.released && (kind === undefined || h.entry.kind === kind)).map((h) => h.entry);
  }

  /** Statements of `kind` seen so far, whatever happened to them. */
  seen(kind: StatementKind): SeamEntry[] {
    return this.log.filter((e) => e.kind === kind);
  }

  /** Waits, without I/O, until at least `count` statements of `kind` are held. */
  async waitUntilHeld(kind: StatementKind, count = 1, timeoutMs = 5_000): Promise<SeamEntry[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.held(kind).length < count) {
      if (Date.now() > deadline) {
        throw new Error(
          `expected ${count} held ${kind} statement(s) within ${timeoutMs} ms, saw ${this.held(kind).length} (log: ${this.describe()})`,
        );
      }
      await pause();
    }
    return this.held(kind);
  }

  /**
   * Stops stalling `kind` (or everything) at once, and lets the held
   * statements of it go: by default one at a time in arrival order, each
   * once the one before it finished in D1 (one lock, passed on); with
   * `together`, all at once (statements on different rows, no shared lock).
   * The returned promise resolves when the last of them has finished.
   */
  release(kind?: StatementKind, options: { together?: boolean } = {}): Promise<void> {
    this.#rules = this.#rules.filter((r) => r.action !== "stall" || (kind !== undefined && r.kind !== kind));
    let previous: SeamEntry | undefined;
    const releasing: SeamEntry[] = [];
    for (const h of this.#held) {
      if (h.released || (kind !== undefined && h.entry.kind !== kind)) continue;
      if (!options.together) h.after = previous;
      h.released = true;
      previous = h.entry;
      releasing.push(h.entry);
    }
    // One lock passed on: a statement arriving while the queue drains waits behind its last one.
    if (!options.together && previous) this.#lockTail = previous;
    return (async () => {
      while (releasing.some((e) => e.status === "held" || e.status === "running")) await pause();
    })();
  }

  /**
   * Ends every held statement with an error, without running it, and drops
   * every rule: for a run object that went away (aborted) while they were
   * held, and after each test, so nothing keeps polling on its behalf and a
   * retry of a discarded statement (the ledger re-settles a row) reaches D1
   * instead of being held again with its pool slot.
   */
  discard(): void {
    this.#rules = [];
    for (const h of this.#held.splice(0)) h.discarded = true;
  }

  /** A one-line summary of the log, for failure messages. */
  describe(): string {
    return this.log.map((e) => `${e.kind}:${e.action}:${e.status}`).join(", ");
  }

  prepare(query: string): OutcomeStatement {
    return this.#statement(query, []);
  }

  #rule(kind: StatementKind, action: Rule["action"], options: RuleOptions): this {
    this.#rules.push({ kind, action, when: options.when, remaining: options.times ?? Number.POSITIVE_INFINITY });
    return this;
  }

  #statement(query: string, values: unknown[]): OutcomeStatement {
    return {
      bind: (...bound: unknown[]) => this.#statement(query, bound),
      first: <T>() => this.#run(query, values, (s) => s.first<T>()),
      all: <T>() => this.#run(query, values, (s) => s.all<T>()),
    };
  }

  async #run<R>(query: string, values: unknown[], execute: (statement: OutcomeStatement) => Promise<R>): Promise<R> {
    const kind = (Object.keys(STATEMENTS) as StatementKind[]).find((k) => STATEMENTS[k].test(query)) ?? "other";
    const rule = kind === "other" ? undefined : this.#rules.find((r) => r.kind === kind && r.remaining > 0 && (r.when?.(values) ?? true));
    if (rule) rule.remaining -= 1;
    const entry: SeamEntry = { kind, query, values, action: rule?.action ?? "pass", status: "running", at: Date.now() };
    this.log.push(entry);
    const tail = this.#lockTail;
    if (!rule && kind !== "other" && tail && (tail.status === "held" || tail.status === "running")) {
      // The backend's lock is still being passed along the released queue: this statement joins its end.
      this.#lockTail = entry;
      while (tail.status === "held" || tail.status === "running") await pause();
    }
    if (rule?.action === "fail") {
      entry.status = "failed";
      throw new StorageSeamError(`injected failure of the ${kind} statement`);
    }
    if (rule?.action === "stall") {
      entry.status = "held";
      const held: Held = { entry, released: false };
      this.#held.push(held);
      // Polled here, in the caller's own context (see the top of the file).
      while (!held.released || held.after?.status === "held" || held.after?.status === "running") {
        if (held.discarded) {
          entry.status = "failed";
          throw new StorageSeamError(`the held ${kind} statement was discarded`);
        }
        await pause();
      }
      this.#held.splice(this.#held.indexOf(held), 1);
      entry.status = "running";
    }
    try {
      const answer = await execute(this.#db.prepare(query).bind(...values));
      entry.status = "done";
      entry.answer = answer;
      return answer;
    } catch (err) {
      entry.status = "failed";
      throw err;
    }
  }
}
