// Retention (contract section 22), run by the Cron Trigger (wrangler.toml
// [triggers], the `scheduled` handler of src/index.ts): deletes, in bounded
// batches, delivery receipts after RECEIPT_RETENTION_DAYS, the index entries
// of ended runs after INDEX_RETENTION_DAYS (the run, its approvals and
// questions, and its metric batch row), ended console sessions, audit entries
// after AUDIT_RETENTION_DAYS, Slack Home tab openers gone quiet for 7 days,
// expired MCP OAuth connect states (10 minutes, single-use), the deployment's webhook deliveries once delivered or
// given up, and, only when MUTATION_RETENTION_DAYS is set, settled mutation outcome rows.
// `unresolved` and `outcome_unknown` rows are never deleted: no statement
// here can select them. Each batch is one D1 statement (or one atomic D1
// batch) deleting at most RETENTION_BATCH_ROWS rows through an index
// (migrations/0012, 0022); a firing runs at most RETENTION_MAX_BATCHES per kind and
// the next firing goes on where it stopped. Gauges fall with the rows
// (migrations/0011's triggers); the *_total counters do not.
import type { HostConfig } from "../config/config";

/**
 * Users who opened the Slack Home tab longer ago than this are not published to again until they
 * open it (src/slack/home-publish.ts), and retention forgets them.
 */
export const HOME_OPENERS_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/** Rows one retention statement deletes at most. */
const RETENTION_BATCH_ROWS = 500;
/** Batches per kind per firing: bounds one firing's work; the hourly cron catches up on a backlog. */
const RETENTION_MAX_BATCHES = 20;
const MS_PER_DAY = 86_400_000;

export type RetentionSettings = Pick<
  HostConfig,
  "RECEIPT_RETENTION_DAYS" | "INDEX_RETENTION_DAYS" | "AUDIT_RETENTION_DAYS" | "MUTATION_RETENTION_DAYS"
>;

export interface RetentionBounds {
  batchRows: number;
  maxBatches: number;
}

type RetentionKind =
  | "receipts"
  | "runs"
  | "console"
  | "mutations"
  | "metric_sources"
  | "audit"
  | "home_openers"
  | "oauth_states"
  | "webhook_deliveries";

/** Rows deleted per kind; `more` names the kinds that hit the batch bound (the next firing goes on). */
export interface RetentionReport {
  deleted: Record<RetentionKind, number>;
  more: RetentionKind[];
}

/** The part of D1Database retention uses; the real `env.DB` satisfies it. */
export interface RetentionDb {
  prepare(query: string): RetentionStatement;
  batch(statements: RetentionStatement[]): Promise<{ meta: { changes?: number } }[]>;
}
interface RetentionStatement {
  bind(...values: unknown[]): RetentionStatement;
  run(): Promise<{ meta: { changes?: number } }>;
}

/** ISO-8601 UTC `days` before `now` (D1's times are ISO text, compared as text). */
function cutoff(now: number, days: number): string {
  return new Date(now - days * MS_PER_DAY).toISOString();
}

/** One batch of one kind: deletes at most `limit` rows, answers how many of the kind's rows it deleted. */
type Batch = (db: RetentionDb, limit: number) => Promise<number>;

const single =
  (sql: string, ...values: unknown[]): Batch =>
  async (db, limit) =>
    (
      await db
        .prepare(sql)
        .bind(...values, limit)
        .run()
    ).meta.changes ?? 0;

function batches(settings: RetentionSettings, now: number): [RetentionKind, Batch | null][] {
  const receipts = cutoff(now, settings.RECEIPT_RETENTION_DAYS);
  const index = cutoff(now, settings.INDEX_RETENTION_DAYS);
  const nowIso = new Date(now).toISOString();
  const endedRuns = `SELECT run_id FROM runs WHERE status <> 'running' AND ended_at < ?1 ORDER BY ended_at, run_id LIMIT ?2`;
  return [
    [
      "receipts",
      single(
        `DELETE FROM deliveries WHERE delivery_id IN (SELECT delivery_id FROM deliveries WHERE accepted_at < ? ORDER BY accepted_at LIMIT ?)`,
        receipts,
      ),
    ],
    [
      "runs",
      // One atomic batch: the same ended runs' approvals, questions, metric row and replay rows, then the runs themselves.
      async (db, limit) => {
        const results = await db.batch([
          db.prepare(`DELETE FROM approvals WHERE run_id IN (${endedRuns})`).bind(index, limit),
          db.prepare(`DELETE FROM inputs WHERE run_id IN (${endedRuns})`).bind(index, limit),
          db.prepare(`DELETE FROM metric_sources WHERE source IN (${endedRuns})`).bind(index, limit),
          // Policy replay's rows of the same runs (contract section 24): a window before retention is refused anyway.
          db.prepare(`DELETE FROM policy_replay_votes WHERE run_id IN (${endedRuns})`).bind(index, limit),
          db.prepare(`DELETE FROM policy_replay_calls WHERE run_id IN (${endedRuns})`).bind(index, limit),
          // Contract section 24: the run's shadow differences go with its other index rows.
          db.prepare(`DELETE FROM policy_shadow_differences WHERE run_id IN (${endedRuns})`).bind(index, limit),
          db.prepare(`DELETE FROM runs WHERE run_id IN (${endedRuns})`).bind(index, limit),
        ]);
        return results[6]?.meta.changes ?? 0;
      },
    ],
    // Ended: expired, or signed out (revoked). Either way its cookie is refused already.
    [
      "console",
      single(
        `DELETE FROM console_sessions WHERE id IN (SELECT id FROM console_sessions WHERE expires_at <= ? OR revoked = 1 LIMIT ?)`,
        nowIso,
      ),
    ],
    // A run object's metric row with no run left to index it (its run was never indexed, or is gone).
    [
      "metric_sources",
      single(
        `DELETE FROM metric_sources WHERE source IN (SELECT source FROM metric_sources WHERE updated_at < ? ORDER BY updated_at LIMIT ?)`,
        index,
      ),
    ],
    [
      "mutations",
      settings.MUTATION_RETENTION_DAYS === undefined
        ? null
        : single(
            // Only settled rows; the partial index holds no unresolved or outcome_unknown row, and the WHERE says so again.
            `DELETE FROM mutation_outcomes WHERE mutation_id IN (
               SELECT mutation_id FROM mutation_outcomes
                WHERE state IN ('completed', 'not_executed') AND settled_at < ? ORDER BY settled_at LIMIT ?)`,
            cutoff(now, settings.MUTATION_RETENTION_DAYS),
          ),
    ],
    // The audit log (contract sections 18 and 25) past AUDIT_RETENTION_DAYS (default 400), sealed entries only and
    // always from the start of the chain, so what is kept still verifies: with checkpoints, up to and including the
    // newest checkpoint older than that (kept, so the rest verifies from it); without, the entries before the first
    // one that is not that old (the chain then starts unanchored).
    [
      "audit",
      single(
        `DELETE FROM audit_log WHERE id IN (
           SELECT id FROM audit_log WHERE seq IS NOT NULL AND seq <= (
             CASE WHEN EXISTS (SELECT 1 FROM audit_checkpoints)
               THEN COALESCE((SELECT MAX(seq) FROM audit_checkpoints WHERE at < ?1), 0)
               ELSE COALESCE((SELECT MIN(seq) - 1 FROM audit_log WHERE seq IS NOT NULL AND at >= ?1), (SELECT seq FROM audit_chain WHERE id = 1))
             END)
           ORDER BY seq LIMIT ?2)`,
        cutoff(now, settings.AUDIT_RETENTION_DAYS),
      ),
    ],
    // Slack Home tab openers (contract section 19) who have not opened it within the republish window: nobody
    // publishes to them again until they open it, which records them anew.
    [
      "home_openers",
      single(
        `DELETE FROM slack_home_openers WHERE user_id IN (SELECT user_id FROM slack_home_openers WHERE opened_at < ? ORDER BY opened_at LIMIT ?)`,
        new Date(now - HOME_OPENERS_WINDOW_MS).toISOString(),
      ),
    ],
    // MCP OAuth connect states (contract section 21) past their 10 minutes: nobody can use them any more.
    [
      "oauth_states",
      single(
        `DELETE FROM mcp_oauth_states WHERE state_digest IN (SELECT state_digest FROM mcp_oauth_states WHERE expires_at < ? ORDER BY expires_at LIMIT ?)`,
        nowIso,
      ),
    ],
    // The deployment's webhook outbox (contract section 26): rows delivered or given up.
    [
      "webhook_deliveries",
      single(
        `DELETE FROM webhook_outbox WHERE seq IN (SELECT seq FROM webhook_outbox WHERE state IN ('sent', 'failed') ORDER BY seq LIMIT ?)`,
      ),
    ],
  ];
}

export async function runRetention(
  db: RetentionDb,
  settings: RetentionSettings,
  now: number,
  bounds: RetentionBounds = { batchRows: RETENTION_BATCH_ROWS, maxBatches: RETENTION_MAX_BATCHES },
): Promise<RetentionReport> {
  const report: RetentionReport = {
    deleted: {
      receipts: 0,
      runs: 0,
      console: 0,
      mutations: 0,
      metric_sources: 0,
      audit: 0,
      home_openers: 0,
      oauth_states: 0,
      webhook_deliveries: 0,
    },
    more: [],
  };
  for (const [kind, batch] of batches(settings, now)) {
    if (batch === null) continue;
    for (let round = 0; ; round++) {
      const deleted = await batch(db, bounds.batchRows);
      report.deleted[kind] += deleted;
      if (deleted < bounds.batchRows) break;
      if (round + 1 >= bounds.maxBatches) {
        report.more.push(kind);
        break;
      }
    }
  }
  return report;
}
