// The benchmark's sizes, paces and bounds. `BENCH_QUICK=1` shrinks every
// count (not the paces or bounds) so the whole benchmark runs end to end in a
// couple of minutes: a check that it works, not figures to quote.

/** BENCH_QUICK=1: small counts, to prove the benchmark works end to end. */
export const QUICK = process.env.BENCH_QUICK === "1";
export const count = (full: number, quick: number) => (QUICK ? quick : full);

/** Text of each synthetic assistant_message, bytes (a short model reply). */
export const TEXT_BYTES = 200;
/** Phase 1: events appended to one run, and per append request. */
export const THROUGHPUT_EVENTS = count(5_000, 500);
export const THROUGHPUT_BATCH_EVENTS = 100;
/**
 * Phase 1 trials per target, alternating engine and raw floor; the median is
 * reported. The machine is shared (wrangler, two workerds, this client, and
 * whatever else runs), so one trial each would mostly measure who got the CPU.
 */
export const THROUGHPUT_TRIALS = count(3, 1);
/** Warm-up (JIT, SQLite pages, connections) per path and target before anything is timed, events. */
export const WARMUP_EVENTS = count(500, 100);
/** Phase 2: probes per configuration, discarded warm-up probes before them, and their pace. */
export const LATENCY_PROBES = count(400, 40);
export const LATENCY_WARMUP_PROBES = count(20, 4);
export const LATENCY_INTERVAL_MS = 10;
/**
 * After a probe has reached every subscriber, at least this long before the
 * next, ms: the server finishes the probe's trailing work (stream reads,
 * the RPC's teardown) inside the probe's own CPU accounting.
 */
export const LATENCY_SETTLE_MS = 2;
/** Phase 2's subscriber counts; issue 16 judges server CPU per delivered event at 50. */
export const LATENCY_SUBSCRIBER_COUNTS: readonly number[] = [1, 50, 100];
/** Round trips of GET /healthz (Worker only, no Durable Object): the request floor of each path. */
export const FLOOR_REQUESTS = count(200, 20);
/**
 * Phase 3: events in the replayed run. RUN_MAX_EVENTS defaults to 10,000, so
 * 9,998 synthetic events + run_started + the run_failed of a cancel make a
 * full, ended run whose replay is exactly 10,000 events and ends by itself.
 */
export const REPLAY_EVENTS = count(10_000, 1_000);
export const REPLAY_APPEND_BATCH_EVENTS = 1_000;
export const REPLAY_REPEATS = count(5, 2);
/** Phase 4: streams and idle subscribers per stream. */
export const MEMORY_STREAMS = count(100, 10);
export const MEMORY_SUBSCRIBERS_PER_STREAM = count(10, 5);
/** Let GC and the allocator settle before each RSS sample, ms. */
export const MEMORY_SETTLE_MS = count(2_000, 200);
/** Concurrent subscriber connects, and concurrent API requests in bulk steps. */
export const ATTACH_CONCURRENCY = 50;
export const API_CONCURRENCY = 10;
/** The scripted turn that keeps a bench run "running": the longest delay the trigger accepts, ms. */
export const KEEP_RUNNING_DELAY_MS = 600_000;

/** Bounds: one API request, one wait for frames, the whole benchmark (ms). */
export const REQUEST_TIMEOUT_MS = 30_000;
export const DELIVERY_TIMEOUT_MS = 30_000;
// 15 min: phase 2 at 50 subscribers (issue 16) added about a minute per path to a run that took about ten;
// 25 min: phase 16 (issue 28) adds about five on a quiet machine and ten on a busy one.
export const BENCH_DEADLINE_MS = 25 * 60_000;

/** The mutating tool phases 5 and 6 call, on the demo MCP server the benchmark starts. */
export const CREATE_DASHBOARD = "mcp__demo__create_dashboard";
/** Phase 5's control: a read-only tool the host config puts behind an approval (no durable row, no storage pool). */
export const LIST_DASHBOARDS = "mcp__demo__list_dashboards";
/** Phase 5: timed approvals per path, and discarded warm-up approvals before them; fewer for the control. */
export const APPROVAL_SAMPLES = count(200, 10);
export const APPROVAL_CONTROL_SAMPLES = count(100, 5);
export const APPROVAL_WARMUP = count(10, 2);
/** Phase 6: concurrent runs, and approval requests in flight at once. */
export const LOAD_RUNS = count(200, 20);
export const LOAD_APPROVE_CONCURRENCY = count(50, 10);
/** Phase 6: pace of GET /api/storage-pool while the runs execute (one request in flight), ms. */
export const POOL_SAMPLE_INTERVAL_MS = 5;
/** Phase 6: concurrent GET /api/runs/{id}/mutations (reads take no pool slot), and the pause between rounds, ms. */
export const ROW_READ_CONCURRENCY = 4;
export const ROW_POLL_INTERVAL_MS = 500;
/**
 * Phase 6 bounds, ms: all runs to reach approval_requested, and all to end;
 * then every row to settle (a background settlement that found the pool full
 * retries up to 5 times, one STORAGE_WAIT_MS of 5 s apart).
 */
export const LOAD_TIMEOUT_MS = 120_000;
export const SETTLE_TIMEOUT_MS = 40_000;
/** Contract section 9. */
export const POOL_CAPACITY = 16;
/** The bound the bench's servers run with (they leave STORAGE_WAIT_MS at its default), ms. */
export const STORAGE_WAIT_MS = 5_000;
/** Phase 6b: concurrent approved mutations against stalled D1 (bench seam BENCH_D1_STALL). */
export const STALL_RUNS = count(200, 20);
/** Phase 6b goal: every one refused within STORAGE_WAIT_MS plus this, ms (issue 11). */
export const STALL_REFUSAL_SLACK_MS = 100;
/** Phase 6c: approvals, and the reads of GET /api/runs/{id}/mutations sent meanwhile, READ_CONCURRENCY at a time. */
export const READ_RUNS = count(50, 10);
export const READS = count(2_000, 200);
export const READ_CONCURRENCY = 100;
/** Phase 6d: the delay the bench seam adds to every pool acquire and outcome D1 statement, ms; timed and warm-up approvals per server. */
export const STORAGE_DELAY_MS = 50;
export const TRIP_SAMPLES = count(30, 5);
export const TRIP_WARMUP = count(3, 1);
/** Phase 6d goal (issue 11): sequential remote round trips between the approval and the tools/call, at most. */
export const GOAL_ROUND_TRIPS = 4;
/** Before issue 11: intent, prior-outcome check and checkpoint, each acquire + D1 + an awaited release (the count). */
export const ROUND_TRIPS_BEFORE = 9;
/** Phase 8 (Slack, issue 10): timed Slack-started runs, one at a time, and discarded warm-up runs before them. */
export const SLACK_SAMPLES = count(100, 5);
export const SLACK_WARMUP = count(5, 1);
/** Phase 17 (webhooks, contract section 26): timed notifications, one run at a time, and discarded warm-up runs before them. */
export const WEBHOOK_SAMPLES = count(100, 5);
export const WEBHOOK_WARMUP = count(5, 1);
/** Phase 9 (console, issue 13): timed events, discarded warm-up events, and the pause after each is shown, ms. */
export const CONSOLE_SAMPLES = count(200, 10);
export const CONSOLE_WARMUP = count(10, 2);
export const CONSOLE_INTERVAL_MS = 20;
/** Phase 9: round trips to the page to measure its clock's offset from this process's; the shortest is used. */
export const CONSOLE_CLOCK_PROBES = 20;
/** Error messages in the report are cut to this length. */
export const ERROR_TEXT_CHARS = 160;

export const MS_PER_SECOND = 1_000;
export const NS_PER_US = 1_000;
export const KIB_PER_MIB = 1_024;

/** Phase 11: timed metrics scrapes at each index size. */
export const SCRAPE_REPEATS = count(50, 5);
/** Phase 13, authentication's cost: timed requests per credential (and for the bare route), after a warm-up each. */
export const AUTH_REQUESTS = count(400, 40);
export const AUTH_WARMUP_REQUESTS = count(20, 4);
/** Phase 16 (issue 28): timed runs per path (Slack click, POST approvals), alternating, and discarded warm-up runs per path before them. */
export const CLICK_TRIP_SAMPLES = count(20, 3);
export const CLICK_TRIP_WARMUP = count(3, 1);
/** Phase 16 goal (issue 28): sequential remote round trips from a Slack Approve click to the tools/call, at most (9 before). */
export const GOAL_CLICK_TRIPS = 6;
/** Phase 17 (issue 33): events per trial, the gap after each append request (ms), subscriber counts, trials per stream. */
export const PEER_EVENTS = count(300, 60);
export const PEER_GAP_MS = 10;
export const PEER_SUBSCRIBER_COUNTS: readonly number[] = [1, 50];
export const PEER_TRIALS = count(3, 1);
