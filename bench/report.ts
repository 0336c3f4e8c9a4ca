// The benchmark's report: every phase's figures as tables, the server CPU per
// 1,000 delivered events beside the raw floor's, and the goals (goals.ts).
import { cpus } from "node:os";
import { CPU_SOURCES, FIGURES, GOALS, serverCpuGoal } from "./goals";
import { percentile, sortedCopy } from "./http-client";
import type { ProcessMemory } from "./phases/memory";
import {
  type BenchResults,
  type CpuPath,
  type CpuSource,
  cpuSourceLabel,
  latencyKey,
  type PathResults,
  serverCpuMsPer1000Delivered,
  serverCpuRatio,
} from "./results";
import {
  APPROVAL_WARMUP,
  CREATE_DASHBOARD,
  FLOOR_REQUESTS,
  KIB_PER_MIB,
  LATENCY_INTERVAL_MS,
  LATENCY_PROBES,
  LATENCY_SUBSCRIBER_COUNTS,
  LIST_DASHBOARDS,
  LOAD_APPROVE_CONCURRENCY,
  MEMORY_STREAMS,
  MEMORY_SUBSCRIBERS_PER_STREAM,
  MS_PER_SECOND,
  POOL_CAPACITY,
  QUICK,
  SLACK_SAMPLES,
  SLACK_WARMUP,
  CONSOLE_INTERVAL_MS,
  CONSOLE_SAMPLES,
  CONSOLE_WARMUP,
  REPLAY_EVENTS,
  REPLAY_REPEATS,
  ROUND_TRIPS_BEFORE,
  SETTLE_TIMEOUT_MS,
  STORAGE_WAIT_MS,
  TEXT_BYTES,
  THROUGHPUT_BATCH_EVENTS,
  THROUGHPUT_EVENTS,
  THROUGHPUT_TRIALS,
} from "./settings";
import { engine, rawFloor } from "./targets";

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const met = (ok: boolean) => (ok ? "met" : "NOT MET");
/** "a 3, b 1", largest first; "-" when empty. */
const counts = (map: Map<string, number>) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(", ") || "-";

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n")
    .replace(/^/gm, "   ");
}

export function report(results: BenchResults): string {
  const { paths, memory, approvals, pool, line, load } = results;
  const out: string[] = [];
  out.push("");
  out.push(
    `Engine benchmark: wrangler dev on loopback, ${TEXT_BYTES}-byte message text, Node ${process.version}, ` +
      `${cpus().length} CPUs, 1-min load average ${load.before} at start, ${load.after} at end`,
  );
  out.push(`"wrangler dev" = through wrangler dev's public port (its proxy); "direct" = the worker runtime's own socket.`);
  if (QUICK) out.push("BENCH_QUICK=1: small counts, a check that the benchmark works end to end; these figures are not to be quoted.");
  out.push("");

  out.push(
    `1. Throughput: ${THROUGHPUT_EVENTS} events, batches of ${THROUGHPUT_BATCH_EVENTS} per append request, 1 SSE subscriber ` +
      `(events/s, median of ${THROUGHPUT_TRIALS} alternating trials)`,
  );
  const tpRows = [["path", "target", "appended/s", "delivered/s", "engine/raw delivered", "CPU µs/event: runtime", "proxy"]];
  for (const p of paths) {
    for (const target of [engine, rawFloor]) {
      const t = p.throughput.get(target)!;
      const ratio = target === engine ? fmt(t.deliveredPerSecond / p.throughput.get(rawFloor)!.deliveredPerSecond, 2) : "";
      tpRows.push([
        p.label,
        target.name,
        fmt(t.appendedPerSecond, 0),
        fmt(t.deliveredPerSecond, 0),
        ratio,
        fmt(t.runtimeCpuUsPerEvent),
        fmt(t.proxyCpuUsPerEvent),
      ]);
    }
  }
  out.push(table(tpRows));
  out.push("");

  out.push(...latencySection(paths));

  out.push(
    `3. Replay of ${REPLAY_EVENTS} events of an ended run (events?after=0, request to end of response; ${REPLAY_REPEATS} reads after a warm-up)`,
  );
  const rpRows = [["path", "median ms", "min ms", "max ms", "first byte ms", "MiB", "events/s"]];
  for (const p of paths) {
    const r = p.replay;
    rpRows.push([
      p.label,
      fmt(r.medianMs),
      fmt(r.minMs),
      fmt(r.maxMs),
      fmt(r.firstByteMedianMs),
      fmt(r.bytes / (KIB_PER_MIB * KIB_PER_MIB), 2),
      fmt(REPLAY_EVENTS / (r.medianMs / MS_PER_SECOND), 0),
    ]);
  }
  out.push(table(rpRows));
  out.push("");

  const subscriberCount = MEMORY_STREAMS * MEMORY_SUBSCRIBERS_PER_STREAM;
  out.push(
    `4. Memory: ${subscriberCount} idle subscribers on ${MEMORY_STREAMS} streams (engine: running runs), VmRSS in MiB, fresh server each`,
  );
  const memRows = [["target", "process", "before", "attached", "released", "delta KiB/subscriber"]];
  for (const [target, m] of memory) {
    const sum = (f: (p: ProcessMemory) => number) => m.processes.reduce((a, p) => a + f(p), 0);
    const rows: [string, number, number, number][] = [
      ...m.processes.map((p): [string, number, number, number] => [p.role, p.beforeKiB, p.attachedKiB, p.releasedKiB]),
      ["both workerd", sum((p) => p.beforeKiB), sum((p) => p.attachedKiB), sum((p) => p.releasedKiB)],
    ];
    for (const [role, before, attached, released] of rows) {
      memRows.push([
        target.name,
        role,
        fmt(before / KIB_PER_MIB),
        fmt(attached / KIB_PER_MIB),
        fmt(released / KIB_PER_MIB),
        fmt((attached - before) / subscriberCount),
      ]);
    }
    memRows.push([target.name, `(subscribers registered: ${m.registered})`, "", "", "", ""]);
  }
  out.push(table(memRows));
  out.push('   (RSS rarely shrinks after a release: freed heap stays with the allocator, so "released" shows reuse, not leaks.)');
  out.push("");

  out.push(
    `5. Approval decision → tool_execution_started at the run's subscriber (ms): one run at a time, paths alternating, ` +
      `${APPROVAL_WARMUP} warm-up runs per path left out; each run proposes one call to the demo MCP server on loopback`,
  );
  out.push(
    `   timed from just before POST /api/runs/{id}/approvals/{approval_id} is sent to the frame's arrival at the subscriber; ` +
      `the previous run has ended first. ${LIST_DASHBOARDS} (read-only, approval by host config) is the control: no durable row, no storage pool.`,
  );
  const apRows = [
    ["tool", "path", "p50", "p99", "max", "approval_resolved p50", "p99", "POST answer p50", "samples", "tool_execution of the calls"],
  ];
  for (const a of approvals) {
    const started = sortedCopy(a.started);
    const resolved = sortedCopy(a.resolved);
    apRows.push([
      a.tool === CREATE_DASHBOARD ? "create_dashboard (mutation)" : "list_dashboards (control)",
      a.label,
      fmt(percentile(started, 50), 2),
      fmt(percentile(started, 99), 2),
      fmt(started[started.length - 1] ?? NaN, 2),
      fmt(percentile(resolved, 50), 2),
      fmt(percentile(resolved, 99), 2),
      fmt(percentile(sortedCopy(a.rtts), 50), 2),
      String(started.length),
      counts(a.executions),
    ]);
  }
  out.push(table(apRows));
  out.push("");

  const pl = pool;
  const settled = pl.settledAtMs.length;
  /** Seconds from the first approval sent until `pct` % of the settled rows had settled. */
  const settledBy = (pct: number) => percentile(pl.settledAtMs, pct) / MS_PER_SECOND;
  out.push(
    `6. Storage pool under load: ${pl.runs} concurrent runs, one approved ${CREATE_DASHBOARD} each (budget 1 per run), ` +
      `all approved with ${LOAD_APPROVE_CONCURRENCY} approval requests in flight, wrangler dev path`,
  );
  const errorRows: string[][] = [...pl.errors]
    .sort((a, b) => b[1] - a[1])
    .map(([message, n]) => ["  error (executed calls)", `${n} x ${message}`]);
  out.push(
    table([
      ["runs", `${pl.runs} triggered, ${pl.asked} reached approval_requested; approval answers: ${counts(pl.approveStatuses)}`],
      ["terminal events", counts(pl.terminals)],
      ["tool_execution", counts(pl.executions)],
      ...errorRows,
      ["durable rows (state/reason)", counts(pl.rowStates)],
      [
        "runs with a settled row",
        `${pl.runsWithSettledRow} of ${pl.runs}; rows unresolved or unread when reading stopped (bound ${SETTLE_TIMEOUT_MS / MS_PER_SECOND} s): ${pl.rowsUnsettled}`,
      ],
      [
        "dispatches",
        `demo server received ${pl.demoCreateCalls} create_dashboard calls; ${pl.executedCalls} calls executed (stream); ` +
          `${pl.dispatchedRows} rows dispatched: true; titles received more than once: ${pl.repeatedTitles}; calls not from these runs: ${pl.foreignCalls}`,
      ],
      [
        "storage pool",
        `high-water mark ${pl.highWater} of ${POOL_CAPACITY} slots (recorded in the pool at every grant); ` +
          `highest in_use seen from outside ${pl.maxInUse} (${pl.poolSamples} samples of GET /api/storage-pool, ${pl.samplerPath} path, one in flight)`,
      ],
      [
        "wait for a slot (ms, in the pool, every granted acquire)",
        `p50 ${fmt(percentile(pl.slotWaits, 50))}, p99 ${fmt(percentile(pl.slotWaits, 99))}, max ${fmt(pl.slotWaits.at(-1) ?? Number.NaN)} ` +
          `over ${pl.slotWaits.length} grants`,
      ],
      [
        "pool counters",
        `acquired_total +${pl.pool.acquired}, rejected_total +${pl.pool.rejected} (engine ${pl.pool.rejected - pl.readerRejections}, ` +
          `this bench's row reads ${pl.readerRejections}), reclaimed_total +${pl.pool.reclaimed}`,
      ],
      [
        "timing (s after the first approval sent)",
        `last approval answered ${fmt(pl.approvalsAnsweredMs / MS_PER_SECOND, 2)}; last run ended ${fmt(pl.runsEndedMs / MS_PER_SECOND, 2)}; ` +
          `rows settled (settled_at): 50% by ${fmt(settledBy(50), 2)}, 90% by ${fmt(settledBy(90), 2)}, all ${settled} by ${fmt(settledBy(100), 2)}`,
      ],
      [
        "mutations settled/s",
        `${fmt(settled / settledBy(100), 1)} (all ${settled} settled rows / time to the last settled_at); ` +
          `${fmt((0.9 * settled) / settledBy(90), 1)} over the first 90%`,
      ],
      [
        "per run, from its approval sent (ms)",
        `tool_execution_started p50 ${fmt(percentile(pl.toStarted, 50))}, p99 ${fmt(percentile(pl.toStarted, 99))}; ` +
          `tool_execution p50 ${fmt(percentile(pl.toExecution, 50))}, p99 ${fmt(percentile(pl.toExecution, 99))}`,
      ],
    ]),
  );
  out.push("");

  const { stalled, reads, trips } = line;
  out.push(
    `6b-6d. The storage pool's waiting line and the round trips of a mutation (issue 11), each on a server of its own, ` +
      `STORAGE_WAIT_MS ${STORAGE_WAIT_MS} ms`,
  );
  const tripRows: string[][] = trips.map((t) => [
    `6d. approval → tools/call at the MCP server, +${t.delayMs} ms per pool acquire and D1 statement`,
    `p50 ${fmt(percentile(t.toRequest, 50))} ms, p99 ${fmt(percentile(t.toRequest, 99))} ms over ${t.toRequest.length} runs; ` +
      `round trips counted ${t.trips.length > 0 ? `${t.trips[0]}..${t.trips.at(-1)}` : "n/a"} (before issue 11: ${ROUND_TRIPS_BEFORE}); ` +
      `tool_execution ${counts(t.executions)}`,
  ]);
  out.push(
    table([
      [
        `6b. ${stalled.runs} approvals, D1 stalled`,
        `tool_execution ${counts(stalled.executions)}; approval_resolved → tool_execution (engine clock) ` +
          `p50 ${fmt(percentile(stalled.serverToExecution, 50))} ms, max ${fmt(stalled.serverToExecution.at(-1) ?? Number.NaN)} ms; ` +
          `approval sent → tool_execution at the client p50 ${fmt(percentile(stalled.toExecution, 50))} ms, ` +
          `p99 ${fmt(percentile(stalled.toExecution, 99))} ms, max ${fmt(stalled.toExecution.at(-1) ?? Number.NaN)} ms; ` +
          `requests received by the MCP server ${stalled.received}; approval answers ${counts(stalled.approveStatuses)}`,
      ],
      [
        `6c. ${reads.reads} reads during ${reads.runs} approvals`,
        `reads ${counts(reads.readStatuses)} (p50 ${fmt(percentile(reads.readMs, 50))} ms, p99 ${fmt(percentile(reads.readMs, 99))} ms); ` +
          `tool_execution ${counts(reads.executions)}; received ${reads.received}`,
      ],
      ...tripRows,
    ]),
  );
  out.push("");

  out.push(...cpuSection(paths, CPU_SOURCES));

  out.push(...slackAndConsole(results));

  out.push('10. Goals (and, marked "no goal", the figures no issue sets a goal for)');
  const goalRows = [["figure", "goal", "judged on", "where", "measured", ""]];
  for (const goal of GOALS) {
    for (const verdict of goal.evaluate(results)) {
      goalRows.push([goal.figure, goal.goal, goal.judged, verdict.where, verdict.measured, met(verdict.met)]);
    }
  }
  for (const figure of FIGURES) {
    for (const { where, measured } of figure.evaluate(results))
      goalRows.push([figure.figure, "no goal", figure.judged, where, measured, "-"]);
  }
  out.push(table(goalRows));
  out.push(
    `   (not_executed(storage_unavailable) is the pool failing closed, an accepted outcome: ` +
      `${pl.executions.get("not_executed/storage_unavailable") ?? 0} of ${pl.runs} calls here.)`,
  );
  return `${out.join("\n")}\n`;
}

/** Phase 2's measures of one path; BENCH_ONLY=latency measures nothing else. */
type LatencyPath = Pick<PathResults, "label" | "floor" | "latency">;

/** Section 2: append-to-delivery latency per path, subscriber count and target, with the server CPU per probe. */
function latencySection(paths: readonly LatencyPath[], subscriberCounts: readonly number[] = LATENCY_SUBSCRIBER_COUNTS): string[] {
  const out: string[] = [];
  out.push(
    `2. Append-to-delivery latency (ms): ${LATENCY_PROBES} probes per target, engine and raw alternating, ` +
      `one append request in flight, at most one every ${LATENCY_INTERVAL_MS} ms`,
  );
  const latRows = [["path", "subscribers", "target", "p50", "p99", "max", "append RTT p50", "samples", "CPU µs/probe: runtime", "proxy"]];
  for (const p of paths) {
    latRows.push([
      p.label,
      "-",
      "GET /healthz (request floor)",
      "",
      "",
      "",
      `${fmt(p.floor.p50, 2)} (p99 ${fmt(p.floor.p99, 2)})`,
      String(FLOOR_REQUESTS),
      "",
      "",
    ]);
    for (const subscribers of subscriberCounts) {
      for (const target of [engine, rawFloor]) {
        const l = p.latency.get(latencyKey(target, subscribers))!;
        latRows.push([
          p.label,
          String(subscribers),
          target.name,
          fmt(l.p50, 2),
          fmt(l.p99, 2),
          fmt(l.max, 2),
          fmt(l.appendRttP50, 2),
          String(l.samples),
          fmt(l.runtimeCpuUsPerProbe, 0),
          fmt(l.proxyCpuUsPerProbe, 0),
        ]);
      }
    }
  }
  out.push(table(latRows));
  out.push("");

  return out;
}

/** Section 7: server CPU per 1,000 delivered events, engine beside raw floor, each against its goal. */
function cpuSection(paths: readonly CpuPath[], sources: readonly CpuSource[]): string[] {
  const out: string[] = [];
  out.push("7. Server CPU time per 1,000 delivered events (ms): both workerd processes (runtime + wrangler dev proxy), /proc schedstat");
  const cpuRows = [["path", "measured in", "engine", "raw floor", "engine/raw", "goal"]];
  for (const p of paths) {
    for (const source of sources) {
      const ratio = serverCpuRatio(p, source);
      const goal = serverCpuGoal(source);
      cpuRows.push([
        p.label,
        cpuSourceLabel(source),
        fmt(serverCpuMsPer1000Delivered(p, engine, source), 2),
        fmt(serverCpuMsPer1000Delivered(p, rawFloor, source), 2),
        `${fmt(ratio, 2)}x`,
        `<= ${goal}x: ${met(ratio <= goal)}`,
      ]);
    }
  }
  out.push(table(cpuRows));
  out.push("");
  return out;
}

/** BENCH_ONLY=latency: phase 2 alone, its latency table and its server CPU beside the raw floor's. */
export function latencyReport(
  paths: readonly (LatencyPath & CpuPath)[],
  subscriberCounts: readonly number[],
  load: { before: string; after: string },
): string {
  const out = [
    "",
    `Phase 2 alone (BENCH_ONLY=latency): Node ${process.version}, ${cpus().length} CPUs, 1-min load average ${load.before} at start, ${load.after} at end`,
    "",
    ...latencySection(paths, subscriberCounts),
    ...cpuSection(
      paths,
      subscriberCounts.map((subscribers): CpuSource => ({ phase: "latency", subscribers })),
    ),
  ];
  return `${out.join("\n")}\n`;
}

/** "p50 1.2, p99 3.4, max 5.6" over sorted samples, ms. */
const spread = (sorted: readonly number[]) =>
  `${fmt(percentile(sorted, 50), 2)}  ${fmt(percentile(sorted, 99), 2)}  ${fmt(sorted.at(-1) ?? Number.NaN, 2)}  ${sorted.length}`;

/** Sections 8 (Slack, issue 10) and 9 (console, issue 13). */
function slackAndConsole({ slack, console: c }: BenchResults): string[] {
  const out: string[] = [];
  out.push(
    `8. Slack (issue 10): ${SLACK_SAMPLES} signed app_mention runs after ${SLACK_WARMUP} warm-up, one at a time, each with one ` +
      `${CREATE_DASHBOARD} approved by a signed click; Slack Web API stand-in in this process; wrangler dev's port (ms)`,
  );
  const rows = [["figure", "p50", "p99", "max", "samples"]];
  const row = (figure: string, sorted: readonly number[]) => rows.push([figure, ...spread(sorted).split("  ")]);
  row("request → acknowledgement (app_mention)", slack.ack);
  row(`event → first Web API call at the stand-in (${counts(slack.firstMethods)})`, slack.firstCall);
  row("click (approval_approve) → its response", slack.clickAck);
  row("click (approval_approve) → chat.update of the approval at the stand-in", slack.clickToUpdate);
  out.push(table(rows));
  out.push("");
  if (c.kind === "skipped") {
    out.push(`9. Console (issue 13): skipped: ${c.reason}`);
  } else {
    out.push(
      `9. Console (issue 13): ${CONSOLE_SAMPLES} assistant_message events after ${CONSOLE_WARMUP} warm-up, one at a time (then ` +
        `${CONSOLE_INTERVAL_MS} ms), appended to a running run whose timeline page is open in headless Chromium; append request sent → ` +
        `the event's <li> in the page's DOM (MutationObserver, page clock shifted by the measured offset, ±${fmt(c.clockUncertaintyMs, 2)} ms) (ms)`,
    );
    const consoleRows = [["figure", "p50", "p99", "max", "samples"]];
    consoleRows.push(["event appended → visible in the page", ...spread(c.visible).split("  ")]);
    consoleRows.push(["append request round trip", ...spread(c.appendRtt).split("  ")]);
    out.push(table(consoleRows));
  }
  out.push("");
  return out;
}
