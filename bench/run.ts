// The engine benchmark: `npm run bench` (about 5 minutes on 2 cores;
// `BENCH_QUICK=1 npm run bench` runs every phase with small counts, to check
// that it works end to end).
//
// Bundles the bench Worker (bench/bench-worker.ts) once and serves that
// bundle with `wrangler dev` on loopback ports (test/support/worker-server.ts,
// a fresh server per phase group). Measures the engine's append → SSE
// delivery path against a "raw floor" Durable Object (SQLite insert +
// enqueue, nothing else) in the same server, then approved execution against
// the demo MCP server (test/support/demo-mcp-process.ts, a separate process),
// prints the figures next to the goals, and stops every process (also on
// error, on Ctrl-C and past a deadline). Every loop is bounded in count and
// time.
//
//   1. throughput: 5,000 events appended in batches to one run, one SSE
//      subscriber; appended/s (append requests acknowledged) and delivered/s
//      (last frame received), end to end; median of alternating trials.
//   2. latency: one event per append request at a steady pace, with 1, 50
//      and 100 subscribers on the run; p50/p99 from just before the append
//      request is sent to the moment each subscriber's socket hands the frame
//      to this process (see measureLatency for why this method). Engine and
//      raw floor are probed alternately in one loop, so both see the same
//      machine.
//   3. replay: 10,000 events of one ended run read with `events?after=0` to
//      the end of the response, after a warm-up read.
//   4. memory: VmRSS of the workerd processes before and after attaching
//      1,000 idle subscribers (10 each on 100 streams), engine and raw floor,
//      each in a fresh server so neither inherits the other's heap.
//   5. approval decision → tool_execution_started: runs with one scripted
//      create_dashboard call, one at a time, one subscriber each; p50/p99
//      from just before the approval request is sent to the frame's arrival
//      at the subscriber (see measureApprovals). A read-only tool behind an
//      approval is the control: the same path without the durable row and
//      the storage pool.
//   6. the storage pool under load: 200 concurrent runs, one approved
//      create_dashboard each, all approved 50 requests at a time; every run's
//      durable row, double dispatches (the demo server's call log), the
//      pool's high-water mark and counters, mutations settled per second
//      (see measurePoolLoad), and the wait for a slot (p50/p99, from the pool).
//   6b-6d. the waiting line and the round trips (issue 11, phases/storage-line.ts),
//      each on a server of its own: 200 approvals against stalled D1 (all
//      refused within STORAGE_WAIT_MS + 100 ms, none dispatched); 2,000 reads
//      during 50 approvals (none refused); approval → tools/call at the MCP
//      server one run at a time, without and with 50 ms added to every pool
//      acquire and D1 statement (bench seams), and the counted round trips.
//   7. server CPU time (both workerd processes) per 1,000 delivered events,
//      engine beside raw floor, from phases 1 and 2 (goal: within 1.3x; at 50
//      subscribers within 1.1x, issue 16).
//   8. Slack (issue 10, phases/slack.ts): signed app_mention runs, one at a
//      time, each approved by a signed click, against the Slack Web API
//      stand-in; p50/p99 of request → acknowledgement, event → first Web API
//      call at the stand-in, and click → that approval message's chat.update.
//   9. console (issue 13, phases/console.ts): headless Chromium on a run's
//      timeline page; p50/p99 from just before an append request to the
//      event's entry in the page's DOM (skipped without /usr/bin/chromium).
//   10. the goals (bench/goals.ts: figure, goal, how it is judged), met or not,
//      and the figures no issue sets a goal for.
//   11. the metrics scrape (issue 22, phases/scrape.ts): GET /api/metrics p50/p99
//      over 10 and over 10,000 indexed runs, and the scrape's own D1 statements.
//   12. tracing's cost (issue 22, phases/tracing-cpu.ts): the phase 1 trial with
//      tracing off and on (a local OTLP collector), runtime CPU per 1,000 events.
//   13. authentication's cost (issue 18, phases/auth-cost.ts): p50/p99 of one
//      request with API_TOKEN, a named token and an Access JWT (warm JWKS)
//      through the real authenticate(), beside the same route without it and
//      GET /healthz, in one loop. `BENCH_ONLY=auth npm run bench` runs this
//      phase alone.
//  14. the two-person rule (issue 19): deciding vote → tool_execution_started
//      for create_dashboard under approvals_required 2 (two Access users' own tokens
//      voting), beside the same tool under one vote, each on its own server;
//      every call executed once. `BENCH_ONLY=votes npm run bench` runs it alone.
//  15. MCP eras (issue 21, phases/mcp-eras.ts): HTTP requests per approved
//      mutation counted at the server (goal: exactly one, the tools/call, on a
//      2026-07-28 server) and approval → tools/call arrival, beside the
//      2025-11-25 server in the same run. `BENCH_ONLY=eras npm run bench`.
//  16. a Slack Approve click → tools/call (issue 28, phases/click-trips.ts): the
//      sequential remote round trips on the way (counted in the bench Worker's
//      trip log, BENCH_TRIPS) and the time, beside POST .../approvals/... on
//      the same server (goal: at most 6). `BENCH_ONLY=clicks npm run bench`.
//  17. webhook delivery (contract section 26, phases/webhooks.ts): a run's
//      approval_requested → its signed POST at a local receiver, p50/p99.
//      `BENCH_ONLY=webhooks npm run bench` runs it alone.
//  18. the stream beside the Cloudflare Agents SDK (issue 33, phases/peer-stream.ts):
//      300 events 10 ms apart at 1 and 50 subscribers, the engine over SSE and
//      over its WebSocket, the raw floor, and an `agents` Agent's broadcast()
//      (bench/agents-peer.ts) in the same `wrangler dev`: server CPU, events/s
//      and p99 with their ratios to the peer. `BENCH_ONLY=peer npm run bench`.
//  19-20. halts, limits and the audit chain (issues 30 and 32,
//      phases/halts-audit.ts): the checkpoint's p50/p99 with and without the
//      halt and limit clauses in one loop; POST /api/halts → the last
//      affected run's decision refused; the one sealer's entries per second;
//      approve → tool_execution_started with the sealer on and off.
//      `BENCH_ONLY=halts npm run bench` runs them alone.
//  21. policy as versioned data (issue 31, phases/policy.ts): approve →
//      tool_execution_started with version 0 only, after a stored active
//      version, and with a shadow version beside it, on one server, and the
//      D1 statements on the decision path (the trip log).
//      `BENCH_ONLY=policy npm run bench` runs it alone.
//  22. a refused Slack click → its ephemeral, one workspace vs two
//      installations (issue 34, phases/installations.ts).
//      `BENCH_ONLY=installations npm run bench` runs it alone.
//  `BENCH_ONLY=latency npm run bench` runs phase 2 alone on both paths (after
//  the same warm-up), with its server CPU beside the raw floor's (issue 16's
//  goal at 50 subscribers); `BENCH_SUBSCRIBERS=50` picks the counts.
//
// Layout: bench/phases/<phase>.ts measure, bench/report.ts renders,
// bench/goals.ts judges, bench/settings.ts holds the counts and bounds,
// bench/http-client.ts talks to the servers (the engine client for the API,
// node:http for the timed SSE reads), bench/servers.ts starts and stops them.
//
// Two paths. `wrangler dev` runs two workerd processes: a proxy that owns the
// public port, and the runtime that runs the Worker and its Durable Objects.
// "wrangler dev" figures go through the public port, as any client of
// `wrangler dev` would; "direct" figures go to the runtime's own entry socket
// and leave the proxy hop out, which is closer to what production adds (no
// dev proxy). Client, wrangler and both workerds share the machine's cores,
// so the client's own work is part of every figure; that is why phases 1 and
// 2 also report the workerd processes' CPU time per event (from
// /proc/<pid>/task/*/schedstat), a cost that scheduling noise barely moves.
import { readFileSync } from "node:fs";
import { type Client, log } from "./http-client";
import { approvalPhase } from "./phases/approvals";
import { authCostPhase, authCostReport } from "./phases/auth-cost";
import { votesPhase, votesReport } from "./phases/votes";
import { clickTripsPhase, clickTripsReport } from "./phases/click-trips";
import { consolePhase } from "./phases/console";
import { haltsAuditPhase, haltsAuditReport } from "./phases/halts-audit";
import { installationsPhase, installationsReport } from "./phases/installations";
import { policyPhase, policyReport } from "./phases/policy";
import { mcpErasPhase, mcpErasReport } from "./phases/mcp-eras";
import { peerStreamPhase, peerStreamReport } from "./phases/peer-stream";
import { type Latency, latencyPhase, requestFloor } from "./phases/latency";
import { type Memory, memoryPhase } from "./phases/memory";
import { poolPhase } from "./phases/pool-load";
import { prepareReplayRun, replayPhase } from "./phases/replay";
import { scrapePhase, scrapeReport } from "./phases/scrape";
import { slackPhase } from "./phases/slack";
import { tracingCpuPhase, tracingCpuReport } from "./phases/tracing-cpu";
import { webhooksPhase, webhooksReport } from "./phases/webhooks";
import { storageLinePhase } from "./phases/storage-line";
import { measureThroughput, throughputPhase } from "./phases/throughput";
import { latencyReport, report } from "./report";
import { latencyKey, type PathResults } from "./results";
import { approvalVars } from "./watched-run";
import { buildBenchBundle, shutdown, startDemo, withServer } from "./servers";
import {
  BENCH_DEADLINE_MS,
  FLOOR_REQUESTS,
  LATENCY_PROBES,
  LATENCY_SUBSCRIBER_COUNTS,
  MEMORY_STREAMS,
  MEMORY_SUBSCRIBERS_PER_STREAM,
  REPLAY_EVENTS,
  REPLAY_REPEATS,
  THROUGHPUT_BATCH_EVENTS,
  THROUGHPUT_EVENTS,
  THROUGHPUT_TRIALS,
  WARMUP_EVENTS,
} from "./settings";
import { engine, rawFloor, type Target } from "./targets";

/** Phases 1-3 over one path: warm-up, request floor, throughput, latency at each subscriber count, replay. */
async function measurePath(client: Client, replayRunId: string): Promise<PathResults> {
  const label = client.label;
  log(`[${label}] warm-up: ${WARMUP_EVENTS} events per target; request floor: ${FLOOR_REQUESTS} x GET /healthz`);
  for (const target of [engine, rawFloor]) await measureThroughput(client, target, WARMUP_EVENTS);
  const floor = await requestFloor(client);
  log(
    `[${label}] 1. throughput: ${THROUGHPUT_TRIALS} x ${THROUGHPUT_EVENTS} events per target in batches of ${THROUGHPUT_BATCH_EVENTS}, 1 subscriber`,
  );
  const throughput = await throughputPhase(client);
  const latency = new Map<string, Latency>();
  for (const subscribers of LATENCY_SUBSCRIBER_COUNTS) {
    log(`[${label}] 2. latency: ${subscribers} subscriber(s), ${LATENCY_PROBES} probes per target`);
    for (const [target, result] of await latencyPhase(client, subscribers)) latency.set(latencyKey(target, subscribers), result);
  }
  log(`[${label}] 3. replay: ${REPLAY_EVENTS} events, ${REPLAY_REPEATS} timed reads after a warm-up`);
  const replay = await replayPhase(client, replayRunId);
  return { label, floor, throughput, latency, replay };
}

/** BENCH_SUBSCRIBERS="50" or "1,50,100" (default: phase 2's own counts), for BENCH_ONLY=latency. */
function latencyOnlyCounts(): readonly number[] {
  const raw = process.env.BENCH_SUBSCRIBERS;
  if (raw === undefined || raw === "") return LATENCY_SUBSCRIBER_COUNTS;
  const counts = raw.split(",").map(Number);
  if (counts.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error(`BENCH_SUBSCRIBERS: expected counts like "50" or "1,50,100", got "${raw}"`);
  return counts;
}

/** Phase 2 alone over one path (BENCH_ONLY=latency): the same warm-up and request floor, then latency at each count. */
async function measureLatencyOnly(client: Client, counts: readonly number[]) {
  const label = client.label;
  log(`[${label}] warm-up: ${WARMUP_EVENTS} events per target; request floor: ${FLOOR_REQUESTS} x GET /healthz`);
  for (const target of [engine, rawFloor]) await measureThroughput(client, target, WARMUP_EVENTS);
  const floor = await requestFloor(client);
  const latency = new Map<string, Latency>();
  for (const subscribers of counts) {
    log(`[${label}] 2. latency: ${subscribers} subscriber(s), ${LATENCY_PROBES} probes per target`);
    for (const [target, result] of await latencyPhase(client, subscribers)) latency.set(latencyKey(target, subscribers), result);
  }
  return { label, floor, throughput: new Map(), latency };
}

async function main(): Promise<void> {
  await buildBenchBundle();
  if (process.env.BENCH_ONLY === "auth") {
    process.stdout.write(authCostReport(await authCostPhase()));
    return;
  }
  if (process.env.BENCH_ONLY === "latency") {
    const counts = latencyOnlyCounts();
    const loadBefore = loadAverage();
    const paths = await withServer(async (_server, client, direct) => {
      const results = [];
      for (const path of direct ? [client, direct] : [client]) results.push(await measureLatencyOnly(path, counts));
      return results;
    });
    process.stdout.write(latencyReport(paths, counts, { before: loadBefore, after: loadAverage() }));
    return;
  }
  if (process.env.BENCH_ONLY === "peer") {
    const before = loadAverage();
    const results = await withServer((_server, client, direct) => peerStreamPhase(direct ?? client));
    process.stdout.write(peerStreamReport(results, { before, after: loadAverage() }));
    return;
  }
  if (process.env.BENCH_ONLY === "eras") {
    process.stdout.write(mcpErasReport(await mcpErasPhase()));
    return;
  }
  if (process.env.BENCH_ONLY === "clicks") {
    process.stdout.write(clickTripsReport(await clickTripsPhase()));
    return;
  }
  if (process.env.BENCH_ONLY === "webhooks") {
    const demo = await startDemo();
    process.stdout.write(webhooksReport(await webhooksPhase(demo.url)));
    return;
  }
  if (process.env.BENCH_ONLY === "halts") {
    const before = loadAverage();
    const figures = await haltsAuditPhase();
    process.stdout.write(haltsAuditReport(figures, { before, after: loadAverage() }));
    return;
  }
  if (process.env.BENCH_ONLY === "policy") {
    const before = loadAverage();
    const figures = await policyPhase();
    process.stdout.write(policyReport(figures, { before, after: loadAverage() }));
    return;
  }
  if (process.env.BENCH_ONLY === "installations") {
    const before = loadAverage();
    const figures = await installationsPhase();
    process.stdout.write(installationsReport(figures, { before, after: loadAverage() }));
    return;
  }
  if (process.env.BENCH_ONLY === "votes") {
    const demo = await startDemo();
    process.stdout.write(votesReport(await votesPhase(demo.url, demo.baseUrl)));
    return;
  }
  const loadBefore = loadAverage();
  const paths = await withServer(async (_server, client, direct) => {
    const replayRunId = await prepareReplayRun(client);
    const results = [await measurePath(client, replayRunId)];
    if (direct) results.push(await measurePath(direct, replayRunId));
    else log("the runtime's own socket was not found; direct figures are left out");
    return results;
  });
  const memory = new Map<Target, Memory>();
  for (const target of [engine, rawFloor]) {
    log(`4. memory: ${target.name}, ${MEMORY_STREAMS} streams x ${MEMORY_SUBSCRIBERS_PER_STREAM} idle subscribers`);
    memory.set(target, await memoryPhase(target));
  }
  const demo = await startDemo();
  const approvalMcp = approvalVars(demo.url);
  const approvals = await approvalPhase(approvalMcp);
  const poolLoad = await poolPhase(approvalMcp, demo.baseUrl);
  const line = await storageLinePhase(approvalMcp, demo.baseUrl);
  const slack = await slackPhase(demo.url);
  const consoleLatency = await consolePhase();
  const scrape = await scrapePhase();
  const tracing = await tracingCpuPhase();
  const auth = await authCostPhase();
  const votes = await votesPhase(demo.url, demo.baseUrl);
  const eras = await mcpErasPhase();
  const clicks = await clickTripsPhase();
  const webhooks = await webhooksPhase(demo.url);
  const peerBefore = loadAverage();
  const peer = await withServer((_server, client, direct) => peerStreamPhase(direct ?? client));
  const peerLoad = { before: peerBefore, after: loadAverage() };
  const haltsLoad = loadAverage();
  const halts = await haltsAuditPhase(demo);
  const policyLoad = loadAverage();
  const policy = await policyPhase(demo);
  const policyLoadAfter = loadAverage();
  const installations = await installationsPhase(demo);
  process.stdout.write(
    report({
      paths,
      memory,
      approvals,
      pool: poolLoad,
      line,
      slack,
      console: consoleLatency,
      load: { before: loadBefore, after: loadAverage() },
    }) +
      scrapeReport(scrape) +
      tracingCpuReport(tracing) +
      authCostReport(auth) +
      votesReport(votes) +
      mcpErasReport(eras) +
      clickTripsReport(clicks) +
      webhooksReport(webhooks) +
      peerStreamReport(peer, peerLoad) +
      haltsAuditReport(halts, { before: haltsLoad, after: policyLoad }) +
      policyReport(policy, { before: policyLoad, after: policyLoadAfter }) +
      installationsReport(installations, { before: policyLoadAfter, after: loadAverage() }),
  );
}

/** The 1-minute load average: how busy the shared machine was, printed with the figures. */
function loadAverage(): string {
  return readFileSync("/proc/loadavg", "utf8").split(" ")[0] ?? "?";
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the server`);
    void shutdown().finally(() => process.exit(130));
  });
}

const deadline = setTimeout(() => {
  log(`over the ${BENCH_DEADLINE_MS} ms deadline: stopping`);
  void shutdown().finally(() => process.exit(1));
}, BENCH_DEADLINE_MS);

try {
  await main();
} catch (err) {
  process.exitCode = 1;
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  clearTimeout(deadline);
  await shutdown();
}
