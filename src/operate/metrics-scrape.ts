// GET /api/metrics (contract section 22): one D1 batch of a fixed four
// statements (the pre-aggregated metric_counters, about sixty rows, and two
// single-row index seeks for the oldest pending approval and the oldest
// unknown outcome, and the count of active halts) plus the storage pool's stats() RPC, rendered as
// Prometheus text. The cost does not grow with the number of runs: nothing
// here scans the index. The scrape reports its own statements and rows read.
import type { StoragePoolStats } from "../outcomes/storage-pool-rpc";
import { type Family, renderFamilies, type Sample } from "./prometheus-text";
import { STORED_SERIES } from "./metric-series";
import { logger } from "./logger";

/** The part of D1Database the scrape uses (a test counts the statements through it); the real `env.DB` is one. */
export type ScrapeDb = Pick<D1Database, "prepare" | "batch">;

export interface MetricsSnapshot {
  /** metric_counters: name → label → value. */
  counters: Map<string, Map<string, number>>;
  oldestPendingApprovalAt: string | null;
  oldestUnknownMutationAt: string | null;
  /** Active halts (contract section 23); absent: not read. */
  haltsActive?: number;
  /** Null when the pool did not answer (its series are left out). */
  pool: StoragePoolStats | null;
  d1Statements: number;
  d1RowsRead: number;
}

const STATEMENTS = [
  `SELECT name, label, value FROM metric_counters`,
  `SELECT MIN(requested_at) AS oldest FROM approvals WHERE status = 'pending'`,
  `SELECT MIN(settled_at) AS oldest FROM mutation_outcomes WHERE state = 'outcome_unknown'`,
  // Contract section 23: aee_halts_active (halts are few; an index seek on status).
  `SELECT COUNT(*) AS n FROM halts WHERE status = 'active'`,
] as const;

export async function readMetrics(db: ScrapeDb, pool: () => Promise<StoragePoolStats>): Promise<MetricsSnapshot> {
  const poolStats = pool().catch((err: unknown) => {
    logger.warn("metrics: the storage pool did not answer; its series are left out", { error: String(err) });
    return null;
  });
  const results = await db.batch(STATEMENTS.map((q) => db.prepare(q)));
  const counters = new Map<string, Map<string, number>>();
  for (const row of (results[0]?.results ?? []) as { name: string; label: string; value: number }[]) {
    const byLabel = counters.get(row.name) ?? new Map<string, number>();
    byLabel.set(row.label, Number(row.value));
    counters.set(row.name, byLabel);
  }
  const oldest = (i: number) => (results[i]?.results[0] as { oldest: string | null } | undefined)?.oldest ?? null;
  return {
    counters,
    oldestPendingApprovalAt: oldest(1),
    oldestUnknownMutationAt: oldest(2),
    haltsActive: Number((results[3]?.results[0] as { n: number } | undefined)?.n ?? 0),
    pool: await poolStats,
    d1Statements: STATEMENTS.length,
    d1RowsRead: results.reduce((n, r) => n + (r.meta?.rows_read ?? 0), 0),
  };
}

const ageSeconds = (iso: string | null, now: number): number => {
  if (iso === null) return 0;
  const at = Date.parse(iso);
  return Number.isFinite(at) ? Math.max(0, (now - at) / 1000) : 0;
};

/** The snapshot as the families of section 22, in a fixed order. */
export function metricFamilies(snapshot: MetricsSnapshot, now: number): Family[] {
  const value = (name: string, label = "") => snapshot.counters.get(name)?.get(label) ?? 0;
  const families: Family[] = [];
  for (const spec of STORED_SERIES) {
    let samples: Sample[];
    if (spec.type === "histogram") {
      const bounds = (spec.values ?? []).filter((v) => v !== "sum");
      let cumulative = 0;
      samples = bounds.map((le) => {
        cumulative += value(spec.name, le);
        return { name: `${spec.name}_bucket`, labels: { le }, value: cumulative };
      });
      samples.push({ name: `${spec.name}_sum`, value: value(spec.name, "sum") }, { name: `${spec.name}_count`, value: cumulative });
    } else if (spec.label !== undefined) {
      const label = spec.label;
      const values = spec.openValues ? [...(snapshot.counters.get(spec.name)?.keys() ?? [])].sort() : (spec.values ?? []);
      samples = values.map((v) => ({ name: spec.name, labels: { [label]: v }, value: value(spec.name, v) }));
    } else {
      samples = [{ name: spec.name, value: value(spec.name) }];
    }
    families.push({ name: spec.name, type: spec.type, help: spec.help, samples });
    if (spec.name === "aee_runs") {
      families.push(gauge("aee_runs_active", "Runs running now (indexed as running).", value("aee_runs", "running")));
    }
    if (spec.name === "aee_approvals_pending") {
      families.push(
        gauge(
          "aee_approval_oldest_pending_seconds",
          "Age of the oldest approval still pending (0 when none).",
          ageSeconds(snapshot.oldestPendingApprovalAt, now),
        ),
      );
    }
    if (spec.name === "aee_mutations") {
      families.push(
        gauge(
          "aee_mutation_oldest_unknown_seconds",
          "Time since the oldest outcome_unknown row became unknown (0 when none).",
          ageSeconds(snapshot.oldestUnknownMutationAt, now),
        ),
      );
    }
  }
  families.push(gauge("aee_halts_active", "Halts engaged and not released (contract section 23).", snapshot.haltsActive ?? 0));
  const pool = snapshot.pool;
  if (pool) {
    families.push(
      gauge("aee_storage_pool_in_use", "Storage-pool slots held.", pool.in_use),
      gauge("aee_storage_pool_waiting", "Callers waiting in line for a storage-pool slot.", pool.waiting),
      {
        name: "aee_storage_pool_rejected_total",
        type: "counter",
        help: "Storage-pool acquires refused.",
        samples: [{ name: "aee_storage_pool_rejected_total", value: pool.rejected_total }],
      },
    );
  }
  families.push(
    gauge("aee_scrape_d1_statements", "D1 statements this scrape ran.", snapshot.d1Statements),
    gauge("aee_scrape_d1_rows_read", "D1 rows this scrape read.", snapshot.d1RowsRead),
  );
  return families;
}

function gauge(name: string, help: string, v: number): Family {
  return { name, type: "gauge", help, samples: [{ name, value: v }] };
}

export function renderMetrics(snapshot: MetricsSnapshot, now: number): string {
  return renderFamilies(metricFamilies(snapshot, now));
}
