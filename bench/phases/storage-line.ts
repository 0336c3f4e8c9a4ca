// Phases 6b-6d, the storage pool's waiting line and the round trips of a mutation
// (issue 11), each on a fresh server of its own:
//   6b. STALL_RUNS concurrent approved mutations with D1 stalled (bench seam
//       BENCH_D1_STALL): every one refused within STORAGE_WAIT_MS + 100 ms,
//       none dispatched (the demo server's call log).
//   6c. READS reads of GET /api/runs/{id}/mutations, READ_CONCURRENCY at a
//       time, while READ_RUNS approved mutations run: reads take no slot, so
//       no mutation is refused.
//   6d. approval → the tools/call request at the demo MCP server, one run at
//       a time, without and with STORAGE_DELAY_MS added to every pool acquire
//       and outcome D1 statement (bench seam BENCH_STORAGE_DELAY_MS), and the
//       counted sequential round trips: the pool acquires and D1 statements of
//       the call's row issued between the approval and the request's arrival.
import { performance } from "node:perf_hooks";
import { ApiError } from "../../src/client";
import { type Client, log, mapLimit, range, sleep, sortedCopy, tally, Waiter } from "../http-client";
import { withServer } from "../servers";
import {
  API_CONCURRENCY,
  CREATE_DASHBOARD,
  LOAD_APPROVE_CONCURRENCY,
  LOAD_TIMEOUT_MS,
  READ_CONCURRENCY,
  READ_RUNS,
  READS,
  REQUEST_TIMEOUT_MS,
  STALL_RUNS,
  STORAGE_DELAY_MS,
  TRIP_SAMPLES,
  TRIP_WARMUP,
} from "../settings";
import { approve, watchRun, type WatchedRun } from "../watched-run";
import type { DemoCalls } from "./pool-load";

interface StalledLoad {
  runs: number;
  approveStatuses: Map<string, number>;
  executions: Map<string, number>;
  /** Per run, approval sent → tool_execution at its subscriber, ms, sorted (runs that ended only). */
  toExecution: number[];
  /**
   * Per run, approval_resolved → tool_execution by the events' own `at` (the engine's clock), ms,
   * sorted: the engine's side of the bound, without the HTTP and SSE hops of this loaded machine.
   */
  serverToExecution: number[];
  /** create_dashboard requests of these runs that reached the demo server. */
  received: number;
}

interface ReadsDuringApprovals {
  runs: number;
  reads: number;
  readStatuses: Map<string, number>;
  /** Per read, ms, sorted. */
  readMs: number[];
  executions: Map<string, number>;
  received: number;
}

interface TripSeries {
  delayMs: number;
  /** Per timed run, approval sent → tools/call at the demo server, ms, sorted. */
  toRequest: number[];
  /** Per timed run, pool acquires + D1 statements of its row before the request arrived, sorted. */
  trips: number[];
  executions: Map<string, number>;
}

export interface StorageLine {
  stalled: StalledLoad;
  reads: ReadsDuringApprovals;
  trips: TripSeries[];
}

async function demoCalls(demoBase: string): Promise<DemoCalls> {
  const res = await fetch(`${demoBase}/control/calls`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`GET /control/calls: ${res.status}`);
  return (await res.json()) as DemoCalls;
}

async function demoReset(demoBase: string): Promise<void> {
  const res = await fetch(`${demoBase}/control/reset`, { method: "POST", signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`POST /control/reset: ${res.status}`);
}

/** create_dashboard requests whose title is one of these runs'. */
async function received(demoBase: string, runs: WatchedRun[]): Promise<number> {
  const titles = new Set(runs.map((r) => r.title));
  return (await demoCalls(demoBase)).calls.filter((c) => c.tool === "create_dashboard" && titles.has(String(c.arguments?.title))).length;
}

/** `count` runs of one create_dashboard each, waiting at approval_requested. */
async function askedRuns(client: Client, count: number, label: string, waiter: Waiter): Promise<WatchedRun[]> {
  const runs = await mapLimit(range(count), API_CONCURRENCY, (i) => watchRun(client, CREATE_DASHBOARD, `${label} ${i}`, waiter));
  await waiter.until(
    () => runs.every((r) => r.approvalId !== undefined || r.terminal !== undefined),
    `${count} approval_requested`,
    LOAD_TIMEOUT_MS,
  );
  return runs;
}

async function endAll(runs: WatchedRun[], waiter: Waiter): Promise<void> {
  try {
    await waiter.until(() => runs.every((r) => r.terminal !== undefined), `${runs.length} runs to end`, LOAD_TIMEOUT_MS);
  } catch (err) {
    log(`${(err as Error).message}; reporting what ended`);
  }
}

/** An event's own `at` (epoch ms), NaN when the run has none. */
function eventAt(run: WatchedRun, type: string): number {
  const at = run.first.get(type)?.data.at;
  return typeof at === "string" ? Date.parse(at) : Number.NaN;
}

function executionsOf(runs: WatchedRun[]): Map<string, number> {
  const executions = new Map<string, number>();
  for (const run of runs) tally(executions, run.execution);
  return executions;
}

/** 6b: every approval at once (LOAD_APPROVE_CONCURRENCY in flight) against a D1 that never answers. */
async function measureStalled(client: Client, demoBase: string): Promise<StalledLoad> {
  await demoReset(demoBase);
  const waiter = new Waiter();
  const runs = await askedRuns(client, STALL_RUNS, "stalled", waiter);
  try {
    const asked = runs.filter((r) => r.approvalId !== undefined);
    const approveStatuses = new Map<string, number>();
    await mapLimit(asked, LOAD_APPROVE_CONCURRENCY, async (run) => tally(approveStatuses, await approve(client, run)));
    await endAll(runs, waiter);
    return {
      runs: runs.length,
      approveStatuses,
      executions: executionsOf(runs),
      toExecution: sortedCopy(asked.map((r) => (r.first.get("tool_execution")?.at ?? NaN) - r.approvalSentAt).filter(Number.isFinite)),
      serverToExecution: sortedCopy(
        asked.map((r) => eventAt(r, "tool_execution") - eventAt(r, "approval_resolved")).filter(Number.isFinite),
      ),
      received: await received(demoBase, runs),
    };
  } finally {
    for (const run of runs) run.sub?.close();
  }
}

/** 6c: the approvals and the reads start together; the reads go round-robin over the runs' row listings. */
async function measureReads(client: Client, demoBase: string): Promise<ReadsDuringApprovals> {
  await demoReset(demoBase);
  const waiter = new Waiter();
  const runs = await askedRuns(client, READ_RUNS, "reads", waiter);
  try {
    const asked = runs.filter((r) => r.approvalId !== undefined);
    const readStatuses = new Map<string, number>();
    const readMs: number[] = [];
    const reading = mapLimit(range(READS), READ_CONCURRENCY, async (i) => {
      const run = runs[i % runs.length]!;
      const t0 = performance.now();
      try {
        await client.engine.runMutations(run.runId);
        tally(readStatuses, "200");
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        tally(readStatuses, `${err.status} ${err.code}`);
      }
      readMs.push(performance.now() - t0);
    });
    await Promise.all([mapLimit(asked, READ_RUNS, (run) => approve(client, run)), reading]);
    await endAll(runs, waiter);
    return {
      runs: runs.length,
      reads: READS,
      readStatuses,
      readMs: sortedCopy(readMs),
      executions: executionsOf(runs),
      received: await received(demoBase, runs),
    };
  } finally {
    for (const run of runs) run.sub?.close();
  }
}

interface StorageLog {
  statements: { kind: string; at: number }[];
}

/** 6d on one server: runs one at a time; each timed from the approval to its request's arrival at the demo server. */
async function measureTrips(client: Client, demoBase: string, delayMs: number): Promise<TripSeries> {
  await demoReset(demoBase);
  const toRequest: number[] = [];
  const trips: number[] = [];
  const timed: WatchedRun[] = [];
  for (const step of range(TRIP_WARMUP + TRIP_SAMPLES)) {
    const waiter = new Waiter();
    const run = await watchRun(client, CREATE_DASHBOARD, `trips ${delayMs} ${step} ${Date.now()}`, waiter);
    let sentWall = Number.NaN;
    try {
      await waiter.until(() => run.approvalId !== undefined || run.terminal !== undefined, "approval_requested");
      sentWall = Date.now(); // the approval's wall-clock time (the demo server stamps arrivals with the same clock)
      await approve(client, run);
      await waiter.until(() => run.terminal !== undefined, "the run's end", LOAD_TIMEOUT_MS);
    } finally {
      run.sub?.close();
    }
    if (step < TRIP_WARMUP) continue;
    timed.push(run);
    const call = (await demoCalls(demoBase)).calls.find((c) => c.tool === "create_dashboard" && c.arguments?.title === run.title);
    const mutationId = run.first.get("tool_execution")?.data.mutation_id;
    if (call === undefined || typeof mutationId !== "string") continue; // not sent: no request to time (see executions)
    const arrived = Date.parse((call as { at?: string }).at ?? "");
    toRequest.push(arrived - sentWall);
    const storage = await client.expect<StorageLog>(200, "GET", `/bench/runs/${run.runId}/storage`);
    const { acquires } = await client.expect<{ acquires: { holder: string; at: number }[] }>(200, "GET", "/bench/storage-pool/acquires");
    // Timestamps are whole ms from three clocks of one machine: a step issued in the approval's or the request's ms counts.
    const inWindow = (at: number) => at >= Math.floor(sentWall) && at <= arrived;
    const d1 = storage.statements.filter((s) => inWindow(s.at)).length;
    const pool = acquires.filter((a) => a.holder.endsWith(mutationId) && inWindow(a.at)).length;
    trips.push(d1 + pool);
    await sleep(10);
  }
  return { delayMs, toRequest: sortedCopy(toRequest), trips: sortedCopy(trips), executions: executionsOf(timed) };
}

/** Phases 6b-6d: 6b and 6c on fresh servers of their own, 6d on one server without and one with the delay. */
export async function storageLinePhase(vars: Record<string, string>, demoBase: string): Promise<StorageLine> {
  log(`6b. D1 stalled: ${STALL_RUNS} concurrent approved mutations, approvals ${LOAD_APPROVE_CONCURRENCY} in flight`);
  const stalled = await withServer((_server, client) => measureStalled(client, demoBase), { ...vars, BENCH_D1_STALL: "1" });
  log(`6c. ${READS} reads (${READ_CONCURRENCY} at a time) during ${READ_RUNS} approvals`);
  const reads = await withServer((_server, client) => measureReads(client, demoBase), vars);
  const trips: TripSeries[] = [];
  for (const delayMs of [0, STORAGE_DELAY_MS]) {
    log(`6d. approval → request at the MCP server, ${TRIP_SAMPLES} runs one at a time, ${delayMs} ms added to every pool and D1 call`);
    trips.push(
      await withServer((_server, client) => measureTrips(client, demoBase, delayMs), { ...vars, BENCH_STORAGE_DELAY_MS: String(delayMs) }),
    );
  }
  return { stalled, reads, trips };
}
