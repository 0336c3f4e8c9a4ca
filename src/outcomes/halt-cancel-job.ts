// The cancel job of a halt engaged with `cancel_runs: true` (contract section
// 23): the runs the runs index lists as `running` in the halt's scope (`all`,
// or for `principal:` those whose `requested_by` or `on_behalf_of` is the
// principal, or its person as `on_behalf_of`) are cancelled in batches of at
// most 50, each as POST /api/runs/{id}/cancel by the engaging principal (the
// run object audits the accepted cancel as `run.cancel`). One step is one
// batch; the halt's own alarm (the HaltCanceller object) calls steps until
// the job is finished.
//
// The caller keeps the progress (the keyset cursor and the count done) and
// stores it only after the step's D1 write succeeded, so a step that dies
// anywhere is simply run again: cancelling an ended run is a no-op (and not
// audited again), `cancel_requested` is counted once (first step), and
// `cancel_done` is written as an absolute value, never incremented blindly.
import { D1_NOW, getHalt, type HaltRow } from "./halts";

/** Contract section 23: batches of at most 50 runs. */
const CANCEL_BATCH_RUNS = 50;

/** The run's cancel as the engaging principal; resolves when the run took it (an ended or unknown run too). */
export type CancelRun = (runId: string, asPrincipal: string) => Promise<void>;

/** Where the job is: the last run it cancelled (keyset order of runs_by_status), and how many. */
export interface CancelProgress {
  after: { created_at: string; run_id: string } | null;
  done: number;
}

export const CANCEL_START: CancelProgress = { after: null, done: 0 };

export type CancelStep = { kind: "more"; progress: CancelProgress } | { kind: "finished"; progress: CancelProgress } | { kind: "nothing" };

/** The scope's clause over `runs` and its binds; null: the halt's scope cancels nothing (not all/principal). */
function scopeClause(halt: HaltRow): { sql: string; binds: unknown[] } | null {
  if (halt.scope_kind === "all") return { sql: "1 = 1", binds: [] };
  if (halt.scope_kind !== "principal" || halt.scope_value === null) return null;
  const person = halt.scope_person;
  return person === null
    ? { sql: "(requested_by = ? OR on_behalf_of = ?)", binds: [halt.scope_value, halt.scope_value] }
    : { sql: "(requested_by = ? OR on_behalf_of = ? OR on_behalf_of = ?)", binds: [halt.scope_value, halt.scope_value, person] };
}

/** One batch of the halt's cancel job, from `progress` (CANCEL_START the first time). */
export async function cancelStep(db: D1Database, haltId: string, progress: CancelProgress, cancelRun: CancelRun): Promise<CancelStep> {
  const halt = await getHalt(db, haltId);
  if (halt === null || halt.cancel_requested === null || halt.cancel_finished_at !== null) return { kind: "nothing" };
  const scope = scopeClause(halt);
  if (scope === null) return { kind: "nothing" };
  const { after } = progress;
  if (after === null) {
    // The first step: how many runs the job is to cancel, as the index lists them now.
    const n = await db
      .prepare(`SELECT COUNT(*) AS n FROM runs WHERE status = 'running' AND ${scope.sql}`)
      .bind(...scope.binds)
      .first<{ n: number }>();
    await db
      .prepare(`UPDATE halts SET cancel_requested = ? WHERE halt_id = ?`)
      .bind(Number(n?.n ?? 0), haltId)
      .run();
  }
  const keyset = after === null ? "" : "AND (created_at, run_id) > (?, ?)";
  const { results } = await db
    .prepare(
      `SELECT run_id, created_at FROM runs WHERE status = 'running' AND ${scope.sql} ${keyset}
        ORDER BY created_at, run_id LIMIT ${CANCEL_BATCH_RUNS}`,
    )
    .bind(...scope.binds, ...(after === null ? [] : [after.created_at, after.run_id]))
    .all<{ run_id: string; created_at: string }>();
  for (const { run_id } of results) await cancelRun(run_id, halt.engaged_by);
  const last = results.at(-1);
  const next: CancelProgress = {
    after: last ? { created_at: last.created_at, run_id: last.run_id } : after,
    done: progress.done + results.length,
  };
  const finished = results.length < CANCEL_BATCH_RUNS;
  await db
    .prepare(
      `UPDATE halts SET cancel_done = ?1, cancel_requested = MAX(cancel_requested, ?1),
              cancel_finished_at = CASE WHEN ?2 THEN ${D1_NOW} ELSE NULL END
        WHERE halt_id = ?3`,
    )
    .bind(next.done, finished ? 1 : 0, haltId)
    .run();
  return finished ? { kind: "finished", progress: next } : { kind: "more", progress: next };
}

/** Unfinished jobs the Cron Trigger arms again, at most this many per firing. */
const RESUME_MAX = 100;

/**
 * The Cron Trigger's safety net: arms again (`arm`) every cancel job not finished, so a job whose
 * first arming failed after the halt committed still runs. Returns the halts armed.
 */
export async function resumeCancelJobs(db: D1Database, arm: (haltId: string) => Promise<void>): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT halt_id FROM halts WHERE cancel_requested IS NOT NULL AND cancel_finished_at IS NULL
        AND scope_kind IN ('all', 'principal') ORDER BY engaged_at LIMIT ?`,
    )
    .bind(RESUME_MAX)
    .all<{ halt_id: string }>();
  for (const { halt_id } of results) await arm(halt_id);
  return results.map((r) => r.halt_id);
}
