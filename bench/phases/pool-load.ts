// Phase 6, the storage pool under load: LOAD_RUNS concurrent runs, one
// approved create_dashboard each, all approved LOAD_APPROVE_CONCURRENCY at a
// time; every run's durable row, double dispatches (the demo server's call
// log), the pool's high-water mark and counters, mutations settled per second.
import { performance } from "node:perf_hooks";
import { ApiError } from "../../src/client";
import { type Client, log, mapLimit, range, sleep, sortedCopy, tally, Waiter } from "../http-client";
import { withServer } from "../servers";
import {
  API_CONCURRENCY,
  CREATE_DASHBOARD,
  ERROR_TEXT_CHARS,
  LOAD_APPROVE_CONCURRENCY,
  LOAD_RUNS,
  LOAD_TIMEOUT_MS,
  POOL_SAMPLE_INTERVAL_MS,
  REQUEST_TIMEOUT_MS,
  ROW_POLL_INTERVAL_MS,
  ROW_READ_CONCURRENCY,
  SETTLE_TIMEOUT_MS,
} from "../settings";
import { approve, watchRun, type WatchedRun } from "../watched-run";

interface PoolStats {
  capacity: number;
  in_use: number;
  acquired_total: number;
  rejected_total: number;
  reclaimed_total: number;
}

interface MutationRow {
  state: string;
  dispatched: boolean;
  reason?: string;
  settled_at?: string;
}

export interface DemoCalls {
  total: number;
  by_tool: Record<string, number>;
  calls: { tool: string; arguments: { title?: unknown } }[];
}

export interface PoolLoad {
  runs: number;
  /** Runs that reached approval_requested (the others are not approved). */
  asked: number;
  approveStatuses: Map<string, number>;
  /** Terminal event per run ("none": not ended within the bound). */
  terminals: Map<string, number>;
  executions: Map<string, number>;
  /** Error messages of executed calls that failed, with their tool_execution word. */
  errors: Map<string, number>;
  /** Durable state of each run's row ("no row", or "n rows" when not exactly one). */
  rowStates: Map<string, number>;
  runsWithSettledRow: number;
  /** Rows still unresolved when the settle bound passed, or never read. */
  rowsUnsettled: number;
  dispatchedRows: number;
  executedCalls: number;
  demoCreateCalls: number;
  /** Our titles that reached the demo server more than once, and calls with a title not ours. */
  repeatedTitles: number;
  foreignCalls: number;
  /** The highest in_use GET /api/storage-pool answered while the runs ran, and how often it was asked. */
  maxInUse: number;
  poolSamples: number;
  samplerPath: string;
  /** The most slots in use at once, as the pool itself recorded it (BenchStoragePool). */
  highWater: number;
  /** Per granted acquire of the phase's server, ms from its arrival at the pool to its grant (0: at once), sorted. */
  slotWaits: number[];
  /** Pool counters over the phase; `readerRejections` of them were this benchmark's own row reads. */
  pool: { acquired: number; rejected: number; reclaimed: number };
  readerRejections: number;
  /** From the first approval sent, ms: the last approval answered, the last run ended. */
  approvalsAnsweredMs: number;
  runsEndedMs: number;
  /** Each settled row's settled_at (the engine's clock, same machine) minus the wall time of the first approval sent, ms, sorted. */
  settledAtMs: number[];
  /** Per run, from its approval sent: tool_execution_started and tool_execution at its subscriber, ms, sorted. */
  toStarted: number[];
  toExecution: number[];
}

async function demoCalls(demoBase: string): Promise<DemoCalls> {
  const res = await fetch(`${demoBase}/control/calls`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`GET /control/calls: ${res.status}`);
  return (await res.json()) as DemoCalls;
}

/**
 * LOAD_RUNS runs, each proposing one create_dashboard (its own title, so
 * every call's arguments differ and no run blocks another's prior-outcome
 * check), all waiting at approval_requested with a subscriber each; then all
 * approved, LOAD_APPROVE_CONCURRENCY requests in flight, while one loop
 * samples GET /api/storage-pool. After every run ended (or the bound passed),
 * each run's rows are read until settled (bounded) and the demo server's call
 * log is checked for calls that arrived twice.
 */
async function measurePoolLoad(client: Client, sampler: Client, demoBase: string): Promise<PoolLoad> {
  const reset = await fetch(`${demoBase}/control/reset`, { method: "POST", signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  if (!reset.ok) throw new Error(`POST /control/reset: ${reset.status}`);
  const poolBefore = await client.engine.storagePool();
  const waiter = new Waiter();
  const runs = await mapLimit(range(LOAD_RUNS), API_CONCURRENCY, (i) => watchRun(client, CREATE_DASHBOARD, `load ${i}`, waiter));
  try {
    await waiter.until(
      () => runs.every((r) => r.approvalId !== undefined || r.terminal !== undefined),
      `${LOAD_RUNS} approval_requested`,
      LOAD_TIMEOUT_MS,
    );
    const asked = runs.filter((r) => r.approvalId !== undefined);

    const t0 = performance.now();
    const wall0 = Date.now();
    // The sampler: one request in flight, every POOL_SAMPLE_INTERVAL_MS, until told to stop (or the bounds pass).
    let sampling = true;
    let maxInUse = 0;
    let poolSamples = 0;
    let samplerError: unknown;
    const samplerLoop = (async () => {
      const until = performance.now() + 2 * LOAD_TIMEOUT_MS;
      while (sampling && performance.now() < until) {
        const stats = await sampler.engine.storagePool();
        maxInUse = Math.max(maxInUse, stats.in_use);
        poolSamples++;
        await sleep(POOL_SAMPLE_INTERVAL_MS);
      }
    })().catch((err: unknown) => {
      samplerError = err;
    });

    const approveStatuses = new Map<string, number>();
    await mapLimit(asked, LOAD_APPROVE_CONCURRENCY, async (run) => {
      tally(approveStatuses, await approve(client, run));
    });
    const approvalsAnsweredMs = performance.now() - t0;
    try {
      await waiter.until(() => runs.every((r) => r.terminal !== undefined), `${LOAD_RUNS} runs to end`, LOAD_TIMEOUT_MS);
    } catch (err) {
      log(`${(err as Error).message}; reporting what ended`); // reported below as "none"
    }
    sampling = false;
    await samplerLoop;
    if (samplerError !== undefined) throw samplerError;
    const runsEndedMs = Math.max(...runs.map((r) => r.terminal?.at ?? NaN).filter(Number.isFinite)) - t0;

    // Rows: each run's own, read until none is unresolved (bounded). Reads take no pool slot (section 9);
    // a 503 of theirs is counted apart all the same.
    const rows = new Map<WatchedRun, MutationRow[]>();
    let readerRejections = 0;
    const unsettled = (r: WatchedRun) => {
      const list = rows.get(r);
      return list === undefined || list.length === 0 || list.some((m) => m.state === "unresolved");
    };
    const settleDeadline = performance.now() + SETTLE_TIMEOUT_MS;
    for (let pending = runs; pending.length > 0 && performance.now() < settleDeadline; pending = runs.filter(unsettled)) {
      if (rows.size > 0) await sleep(ROW_POLL_INTERVAL_MS);
      await mapLimit(pending, ROW_READ_CONCURRENCY, async (run) => {
        try {
          rows.set(run, (await client.engine.runMutations(run.runId)).mutations);
        } catch (err) {
          if (!(err instanceof ApiError) || err.status !== 503) throw err;
          if (err.code === "storage_unavailable") readerRejections++;
        }
      });
      // A run without a row may never get one (its intent found no slot); stop once only such runs are left and nothing changes.
      if (runs.filter(unsettled).every((r) => rows.get(r)?.length === 0) && rows.size === runs.length) break;
    }
    const poolAfter = await client.expect<PoolStats & { high_water: number; waits: number[] }>(200, "GET", "/bench/storage-pool");

    const rowStates = new Map<string, number>();
    let runsWithSettledRow = 0;
    let rowsUnsettled = 0;
    let dispatchedRows = 0;
    const settledAt: number[] = [];
    for (const run of runs) {
      const list = rows.get(run);
      if (list === undefined) {
        tally(rowStates, "never read");
        rowsUnsettled++;
        continue;
      }
      if (list.length !== 1) tally(rowStates, list.length === 0 ? "no row" : `${list.length} rows`);
      for (const row of list) {
        if (list.length === 1) tally(rowStates, row.reason ? `${row.state}/${row.reason}` : row.state);
        if (row.dispatched) dispatchedRows++;
        if (row.state === "unresolved") rowsUnsettled++;
        else settledAt.push(row.settled_at ? Date.parse(row.settled_at) - wall0 : NaN);
      }
      if (list.length > 0 && list.every((m) => m.state !== "unresolved")) runsWithSettledRow++;
    }

    const calls = (await demoCalls(demoBase)).calls.filter((c) => c.tool === "create_dashboard");
    const ours = new Set(runs.map((r) => r.title));
    const perTitle = new Map<string, number>();
    for (const call of calls) tally(perTitle, String(call.arguments?.title));
    const terminals = new Map<string, number>();
    const executions = new Map<string, number>();
    const errors = new Map<string, number>();
    for (const run of runs) {
      tally(terminals, run.first.has("run_completed") ? "run_completed" : run.first.has("run_failed") ? "run_failed" : "none");
      tally(executions, run.execution);
      const error = run.executionError;
      if (error !== undefined)
        tally(errors, `${run.execution}: ${error.length > ERROR_TEXT_CHARS ? `${error.slice(0, ERROR_TEXT_CHARS)}...` : error}`);
    }
    const since = (type: string) => sortedCopy(asked.map((r) => (r.first.get(type)?.at ?? NaN) - r.approvalSentAt).filter(Number.isFinite));
    return {
      runs: runs.length,
      asked: asked.length,
      approveStatuses,
      terminals,
      executions,
      errors,
      rowStates,
      runsWithSettledRow,
      rowsUnsettled,
      dispatchedRows,
      executedCalls: runs.filter((r) => r.execution.startsWith("executed")).length,
      demoCreateCalls: calls.length,
      repeatedTitles: [...perTitle].filter(([title, n]) => ours.has(title) && n > 1).length,
      foreignCalls: [...perTitle].filter(([title]) => !ours.has(title)).reduce((a, [, n]) => a + n, 0),
      maxInUse,
      highWater: poolAfter.high_water,
      slotWaits: sortedCopy(poolAfter.waits),
      poolSamples,
      samplerPath: sampler.label,
      pool: {
        acquired: poolAfter.acquired_total - poolBefore.acquired_total,
        rejected: poolAfter.rejected_total - poolBefore.rejected_total,
        reclaimed: poolAfter.reclaimed_total - poolBefore.reclaimed_total,
      },
      readerRejections,
      approvalsAnsweredMs,
      runsEndedMs,
      settledAtMs: sortedCopy(settledAt.filter(Number.isFinite)),
      toStarted: since("tool_execution_started"),
      toExecution: since("tool_execution"),
    };
  } finally {
    for (const run of runs) run.sub?.close();
  }
}

/** Phase 6 on a fresh server, so the pool's counters, its high-water mark and the rows are this phase's alone. */
export function poolPhase(vars: Record<string, string>, demoBase: string): Promise<PoolLoad> {
  return withServer(async (_server, client, direct) => {
    log(`6. storage pool: ${LOAD_RUNS} concurrent runs, one approved mutation each, approvals ${LOAD_APPROVE_CONCURRENCY} in flight`);
    return measurePoolLoad(client, direct ?? client, demoBase);
  }, vars);
}
