// A seam in front of the real D1 binding for the mutation-fault tests: an
// OutcomeDb (src/mutation-outcomes.ts) that, per SQL statement pattern, lets
// the statement through, throws, or stalls it.
//
// A stalled statement has not reached D1 yet: it waits, like a statement
// queued behind a backend holding the session lock longer than the storage
// bound, until the test releases it. `release` then lets the held statements
// run one after another in arrival order (the lock passing from one waiter to
// the next) and resolves once the last one has finished in D1.
//
// Install it in a run with
//   runInDurableObject(runStub(runId), (instance) => instance.useOutcomeDbForTests(seam))
// One seam may serve several runs. It lives in the test isolate (the Durable
// Objects of the main worker run in the same one), so the test reads its
// state directly, without I/O.
import type { OutcomeDb, OutcomeStatement } from "../../src/mutation-outcomes";

/** The statements of src/mutation-outcomes.ts, by the step of the write-ahead protocol they implement. */
export const STATEMENTS = {
  /** insertIntent: the intent row, written at approval. */
  intent: /^\s*INSERT INTO mutation_outcomes/,
  /** findPriorUnknown: another run's identical call with an unknown outcome. */
  prior: /state IN \('outcome_unknown', 'unresolved'\)/,
  /** markDispatched: the write-ahead checkpoint. */
  checkpoint: /SET dispatched = 1/,
  /** settle: every settlement (not_executed, completed, outcome_unknown). */
  settlement: /SET state = \?, reason = \?/,
  /** getOutcome: one row by mutation id (the restart rule's read, and every transition's re-read). */
  read: /^SELECT \* FROM mutation_outcomes WHERE mutation_id = \?$/,
} as const;

export type StatementKind = keyof typeof STATEMENTS;

export type SeamAction = "pass" | "stall" | "fail";

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
}

interface Rule {
  kind: StatementKind;
  action: Exclude<SeamAction, "pass">;
  when?: (values: unknown[]) => boolean;
  remaining: number;
}

interface Held {
  entry: SeamEntry;
  go: () => void;
  /** Settles once the statement finished (or failed) after its release. */
  finished: Promise<void>;
}

export class StorageSeamError extends Error {
  override readonly name = "StorageSeamError";
}

export class StorageSeam implements OutcomeDb {
  readonly #db: OutcomeDb;
  #rules: Rule[] = [];
  readonly #held: Held[] = [];
  /** Every statement that went through the seam, in arrival order. */
  readonly log: SeamEntry[] = [];

  constructor(db: OutcomeDb) {
    this.#db = db;
  }

  /** Holds matching statements until `release` (they have not reached D1 meanwhile). */
  stall(kind: StatementKind, options: RuleOptions = {}): this {
    return this.#rule(kind, "stall", options);
  }

  /** Makes matching statements throw, as a D1 error would, without reaching D1. */
  fail(kind: StatementKind, options: RuleOptions = {}): this {
    return this.#rule(kind, "fail", options);
  }

  /** Removes the rules for `kind` (or all rules): later statements pass. Held ones stay held. */
  pass(kind?: StatementKind): this {
    this.#rules = this.#rules.filter((r) => kind !== undefined && r.kind !== kind);
    return this;
  }

  /** Statements of `kind` (or of every kind) currently held. */
  held(kind?: StatementKind): SeamEntry[] {
    return this.#held.filter((h) => kind === undefined || h.entry.kind === kind).map((h) => h.entry);
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
        throw new Error(`expected ${count} held ${kind} statement(s) within ${timeoutMs} ms, saw ${this.held(kind).length} (log: ${this.describe()})`);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    return this.held(kind);
  }

  /**
   * Stops stalling `kind` (or everything) and lets the held statements of it
   * run, one at a time in arrival order; resolves when the last has finished.
   */
  async release(kind?: StatementKind): Promise<void> {
    this.#rules = this.#rules.filter((r) => r.action !== "stall" || (kind !== undefined && r.kind !== kind));
    const releasing = this.#held.filter((h) => kind === undefined || h.entry.kind === kind);
    for (const h of releasing) {
      this.#held.splice(this.#held.indexOf(h), 1);
      h.go();
      await h.finished;
    }
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
    const entry: SeamEntry = { kind, query, values, action: rule?.action ?? "pass", status: "running" };
    this.log.push(entry);
    if (rule?.action === "fail") {
      entry.status = "failed";
      throw new StorageSeamError(`injected failure of the ${kind} statement`);
    }
    let finished = () => {};
    if (rule?.action === "stall") {
      entry.status = "held";
      // Created in the caller's context, resolved by the test's release().
      await new Promise<void>((go) => {
        this.#held.push({ entry, go, finished: new Promise<void>((r) => (finished = r)) });
      });
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
    } finally {
      finished();
    }
  }
}
