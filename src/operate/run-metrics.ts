// A run object's share of the metrics (contract section 22): the counters
// only the run sees (Slack posts pending and given up, approval decision
// times, approval → tools/call times, dropped spans, calls refused by a
// mutation limit), kept as durable deltas
// in the object's SQLite (written in the same storage turn as the event that
// caused them) and sent to D1's metric_sources from the alarm, beside the
// run-index flush. Never on the append path's network side.
//
// Exactly once: a flush first moves every pending delta into one numbered
// batch (synchronously, so nothing added meanwhile is lost or sent twice) and
// resends that batch unchanged until D1 took it; D1 applies a batch only when
// its seq is newer than the one it holds for this run (see the migration).
import type { SqlLike } from "../stream/event-log";
import type { RunEvent } from "../wire/event-schemas";
import { APPROVAL_DECISION_BUCKETS_S, APPROVAL_TO_DISPATCH_BUCKETS_S, bucketLabel, type DeltaSeries } from "./metric-series";
import type { SqlTable } from "../stream/sql-schema";

/** The part of D1Database a flush uses; the real `env.DB` satisfies it, a test can wrap it to fail. */
export interface MetricsDb {
  prepare(query: string): { bind(...values: unknown[]): { run(): Promise<unknown> } };
}

export type MetricsFlushResult = { status: "ok"; sent: boolean } | { status: "failed"; error: string };

export interface SlackCounts {
  pending: number;
  failed: number;
}

/** Tables a purge must keep until they reached D1 (src/agent/run-schema.ts keeps them at retention). */
export const RUN_METRICS_TABLES = ["metric_deltas", "metric_batch"] as const;

export const METRIC_DELTAS_TABLE: SqlTable = {
  name: "metric_deltas",
  ddl: [
    `CREATE TABLE IF NOT EXISTS metric_deltas (name TEXT NOT NULL, label TEXT NOT NULL, delta REAL NOT NULL,
      PRIMARY KEY (name, label))`,
  ],
};

/** One row: the batch being sent (deltas NULL once D1 took it) and its seq. */
export const METRIC_BATCH_TABLE: SqlTable = {
  name: "metric_batch",
  ddl: [`CREATE TABLE IF NOT EXISTS metric_batch (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, deltas TEXT)`],
};

/** When an approval was asked / approved, for the two histograms. */
export const METRIC_TIMERS_TABLE: SqlTable = {
  name: "metric_timers",
  ddl: [`CREATE TABLE IF NOT EXISTS metric_timers (key TEXT PRIMARY KEY, at INTEGER NOT NULL)`],
};

/** The Slack counts last reported. */
export const METRIC_SLACK_SEEN_TABLE: SqlTable = {
  name: "metric_slack_seen",
  ddl: [
    `CREATE TABLE IF NOT EXISTS metric_slack_seen (id INTEGER PRIMARY KEY CHECK (id = 1), pending INTEGER NOT NULL, failed INTEGER NOT NULL)`,
  ],
};

const UPSERT_BATCH = `INSERT INTO metric_sources (source, seq, deltas, updated_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (source) DO UPDATE SET seq = excluded.seq, deltas = excluded.deltas, updated_at = excluded.updated_at
  WHERE excluded.seq > metric_sources.seq`;

export class RunMetrics {
  readonly #sql: SqlLike;
  readonly #source: string;
  #flushing: Promise<MetricsFlushResult> | null = null;

  constructor(sql: SqlLike, source: string) {
    this.#sql = sql;
    this.#source = source;
  }

  /** Deltas or a batch still to send. */
  get pending(): boolean {
    const deltas = this.#sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM metric_deltas`).toArray()[0]?.n ?? 0;
    return deltas > 0 || this.#inFlight() !== null;
  }

  add(name: DeltaSeries, label: string, delta: number): void {
    if (delta === 0 || !Number.isFinite(delta)) return;
    this.#sql.exec(
      `INSERT INTO metric_deltas (name, label, delta) VALUES (?, ?, ?)
       ON CONFLICT (name, label) DO UPDATE SET delta = delta + excluded.delta`,
      name,
      label,
      delta,
    );
  }

  /** One histogram observation: its bucket and its sum. */
  observe(name: "aee_approval_decision_seconds" | "aee_approval_to_dispatch_seconds", seconds: number): void {
    const bounds = name === "aee_approval_decision_seconds" ? APPROVAL_DECISION_BUCKETS_S : APPROVAL_TO_DISPATCH_BUCKETS_S;
    const s = Math.max(0, seconds);
    this.add(name, bucketLabel(bounds, s), 1);
    this.add(name, "sum", s);
  }

  /**
   * On the append path (storage only): an approval asked starts its decision
   * timer; its resolution observes it, and an approval starts the dispatch
   * timer of its call. Returns whether a delta was recorded.
   */
  observeEvent(event: RunEvent, now: number): boolean {
    if (event.type === "tool_execution" && event.execution_status === "not_executed" && event.reason === "rate_limited") {
      // Contract section 23: aee_mutations_limited_total{tool}; the tool is a configured one (limits apply to no other).
      this.add("aee_mutations_limited_total", event.tool_name, 1);
      return true;
    }
    if (event.type === "approval_requested") {
      this.#startTimer(`approval:${event.approval_id}`, now);
      return false;
    }
    if (event.type !== "approval_resolved") return false;
    const askedAt = this.#takeTimer(`approval:${event.approval_id}`);
    if (event.decision === "approved") this.#startTimer(`dispatch:${event.tool_call_id}`, now);
    if (askedAt === null) return false;
    this.observe("aee_approval_decision_seconds", (now - askedAt) / 1000);
    return true;
  }

  /** The call's tools/call is being sent now. Returns whether it was an approved call (observed). */
  toolCallSent(toolCallId: string, now: number): boolean {
    const approvedAt = this.#takeTimer(`dispatch:${toolCallId}`);
    if (approvedAt === null) return false;
    this.observe("aee_approval_to_dispatch_seconds", (now - approvedAt) / 1000);
    return true;
  }

  /**
   * The outbox's counts as they stand: the change since the last report
   * moves aee_slack_posts_pending, a rise in failed posts counts in
   * aee_slack_posts_failed_total. Returns whether anything moved.
   */
  slackCounts(counts: SlackCounts): boolean {
    const seen = this.#sql
      .exec<{ pending: number; failed: number }>(`SELECT pending, failed FROM metric_slack_seen WHERE id = 1`)
      .toArray()[0] ?? { pending: 0, failed: 0 };
    const pendingDelta = counts.pending - seen.pending;
    const failedDelta = Math.max(0, counts.failed - seen.failed);
    if (pendingDelta === 0 && counts.failed === seen.failed) return false;
    this.add("aee_slack_posts_pending", "", pendingDelta);
    this.add("aee_slack_posts_failed_total", "", failedDelta);
    this.#sql.exec(
      `INSERT INTO metric_slack_seen (id, pending, failed) VALUES (1, ?, ?)
       ON CONFLICT (id) DO UPDATE SET pending = excluded.pending, failed = excluded.failed`,
      counts.pending,
      counts.failed,
    );
    return pendingDelta !== 0 || failedDelta !== 0;
  }

  /** Sends the pending deltas as one batch (or resends the batch D1 has not confirmed). Never throws. */
  flush(db: MetricsDb, now: number): Promise<MetricsFlushResult> {
    this.#flushing ??= this.#flush(db, now).finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  async #flush(db: MetricsDb, now: number): Promise<MetricsFlushResult> {
    const batch = this.#inFlight() ?? this.#seal();
    if (batch === null) return { status: "ok", sent: false };
    try {
      await db.prepare(UPSERT_BATCH).bind(this.#source, batch.seq, batch.deltas, new Date(now).toISOString()).run();
    } catch (err) {
      return { status: "failed", error: err instanceof Error ? err.message : String(err) };
    }
    this.#sql.exec(`UPDATE metric_batch SET deltas = NULL WHERE id = 1 AND seq = ?`, batch.seq);
    return { status: "ok", sent: true };
  }

  /** Moves every pending delta into a new batch, in one synchronous step. */
  #seal(): { seq: number; deltas: string } | null {
    const rows = this.#sql
      .exec<{ name: string; label: string; delta: number }>(
        `SELECT name, label, delta FROM metric_deltas WHERE delta <> 0 ORDER BY name, label`,
      )
      .toArray();
    this.#sql.exec(`DELETE FROM metric_deltas`);
    if (rows.length === 0) return null;
    const seq = (this.#sql.exec<{ seq: number }>(`SELECT seq FROM metric_batch WHERE id = 1`).toArray()[0]?.seq ?? 0) + 1;
    const deltas = JSON.stringify(rows.map((r) => [r.name, r.label, r.delta]));
    this.#sql.exec(
      `INSERT INTO metric_batch (id, seq, deltas) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, deltas = excluded.deltas`,
      seq,
      deltas,
    );
    return { seq, deltas };
  }

  #inFlight(): { seq: number; deltas: string } | null {
    const row = this.#sql.exec<{ seq: number; deltas: string | null }>(`SELECT seq, deltas FROM metric_batch WHERE id = 1`).toArray()[0];
    return row && row.deltas !== null ? { seq: row.seq, deltas: row.deltas } : null;
  }

  #startTimer(key: string, at: number): void {
    this.#sql.exec(`INSERT OR IGNORE INTO metric_timers (key, at) VALUES (?, ?)`, key, at);
  }

  #takeTimer(key: string): number | null {
    const row = this.#sql.exec<{ at: number }>(`SELECT at FROM metric_timers WHERE key = ?`, key).toArray()[0];
    if (!row) return null;
    this.#sql.exec(`DELETE FROM metric_timers WHERE key = ?`, key);
    return row.at;
  }
}
