// Phase 16, a Slack Approve click → the tools/call at the MCP server (issue
// 28): the sequential remote round trips on the way, counted, and the time,
// beside the same approval through `POST /api/runs/{id}/approvals/{id}` (the
// floor), runs alternating between the two paths, one at a time. Every run
// is started by a signed app_mention (so its approval is posted to the Slack
// stand-in with buttons, as a real click's is) and has one create_dashboard
// call, on a demo MCP server of the 2026-07-28 revision of its own
// (stateless: the tools/call is the one MCP request, so what is counted is
// the engine's); it is approved by a signed block_actions click of an
// approver in SLACK_APPROVERS, or by the root token over HTTP.
//
// Counted, not read from the code: the servers run with the bench seam
// BENCH_TRIPS="1" (bench/bench-trips.ts), which logs every D1 statement,
// Durable Object RPC and outbound fetch (the Slack Web API calls, the MCP
// requests) the Worker and the run objects start. Which of them the path
// waits for, one after another, is measured by time: a second server adds
// TRIP_DELAY_MS before every logged trip but the MCP requests
// (BENCH_TRIP_DELAY_MS), so each sequential round trip adds that much to the
// window and a trip beside the path (the run index's D1 writes, the Slack
// posts the decision triggers, a release nobody awaits) adds nothing. Per
// run, sequential trips = (its window with the delay − the path's median
// window without) / TRIP_DELAY_MS, rounded; the window is taken on the
// isolate's clock from the trip log, from the approval's arrival at the
// Worker to the tools/call leaving it. The log of the runs without the delay
// names what was in the window.
import { performance } from "node:perf_hooks";
import { startDemoMcpProcess } from "../../test/support/demo-mcp-process";
import { postSlackInteraction } from "../../test/support/slack-signing";
import type { RecordedCall } from "../../test/support/slack-stand-in";
import { type Client, log, percentile, range, sleep, sortedCopy, tally, Waiter } from "../http-client";
import { withServer } from "../servers";
import { CLICK_TRIP_SAMPLES, CLICK_TRIP_WARMUP, DELIVERY_TIMEOUT_MS, GOAL_CLICK_TRIPS, REQUEST_TIMEOUT_MS } from "../settings";
import { buttonsOf, clickPayload, mentionRun, SIGNING_SECRET, slackVars, startBenchSlack, waitForEnd } from "./slack";

/** One entry of the bench Worker's trip log (bench/bench-trips.ts). */
export interface Trip {
  origin: string;
  kind: string;
  start: number;
  /** Wall-clock ms in the isolate at the start. */
  startAt: number;
}

type PathName = "slack click" | "POST approvals";

/** The trip log's quiet spell before an approval is sent (the previous run's trailing writes done), ms beyond twice the delay; and its bound. */
const QUIET_MS = 150;
const QUIET_TIMEOUT_MS = 15_000;
/** Pause between polls of the demo server's call log while waiting for the tools/call (no request reaches the Worker), ms. */
const CALL_POLL_MS = 2;
/** The delay the second server adds before every logged trip, ms: well above the run-to-run noise of this machine. */
const TRIP_DELAY_MS = 200;

export async function tripsAfter(client: Client, after: number): Promise<{ tick: number; trips: Trip[] }> {
  return client.expect<{ tick: number; trips: Trip[] }>(200, "GET", `/bench/trips?after=${after}`);
}

/** Waits until the log has been still for QUIET_MS + twice the delay, and answers its tick. */
export async function quietTick(client: Client, delayMs: number): Promise<number> {
  const deadline = performance.now() + QUIET_TIMEOUT_MS;
  let { tick } = await tripsAfter(client, Number.MAX_SAFE_INTEGER);
  for (;;) {
    await sleep(QUIET_MS + 2 * delayMs);
    const now = (await tripsAfter(client, Number.MAX_SAFE_INTEGER)).tick;
    if (now === tick) return tick;
    if (performance.now() > deadline) throw new Error(`the trip log did not go quiet within ${QUIET_TIMEOUT_MS} ms`);
    tick = now;
  }
}

/**
 * The trips started between the approval's arrival at the Worker and the tools/call, and the time
 * between the two in the isolate (its own clock: without the client's and the dev proxy's hops).
 */
function windowOf(trips: Trip[], path: PathName): { trips: Trip[]; ms: number } {
  const arrival = trips.find((t) => t.kind.startsWith(path === "slack click" ? "in POST /slack/interactivity" : "in POST /api/runs/"));
  const call = trips.find((t) => t.kind === "fetch mcp tools/call");
  if (!arrival || !call)
    throw new Error(`the trip log has no ${arrival ? "tools/call" : `${path} request`}: ${trips.map((t) => t.kind).join(", ")}`);
  return {
    trips: trips.filter((t) => t.start > arrival.start && t.start < call.start && !t.kind.startsWith("in ")),
    ms: call.startAt - arrival.startAt,
  };
}

/** The demo server's create_dashboard call for `title`, once it has arrived (its wall-clock `at`, ms). */
async function callArrival(demoBase: string, title: string): Promise<number> {
  const deadline = performance.now() + DELIVERY_TIMEOUT_MS;
  for (;;) {
    const res = await fetch(`${demoBase}/control/calls`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const { calls } = (await res.json()) as { calls: { tool: string; arguments?: { title?: string }; at?: string }[] };
    const call = calls.find((c) => c.tool === "create_dashboard" && c.arguments?.title === title);
    if (call?.at) return Date.parse(call.at);
    if (performance.now() > deadline) throw new Error(`no tools/call for "${title}" within ${DELIVERY_TIMEOUT_MS} ms`);
    await sleep(CALL_POLL_MS);
  }
}

/** One path's runs on one server. */
interface PathRuns {
  /** Per run, approval sent → the tools/call's arrival at the demo server (its call log, wall clock), ms, in run order. */
  toCall: number[];
  /** Per run, the trips started in the window. */
  windows: Trip[][];
  /** Per run, the window's length in the isolate (approval's arrival → the tools/call sent), ms. */
  inner: number[];
  /** How each timed run ended, by status. */
  ends: Map<string, number>;
}

const PATHS: PathName[] = ["slack click", "POST approvals"];

/** Runs on one server, the paths alternating (the order flips every round), one at a time. */
async function measure(client: Client, url: string, demoBase: string, posts: RecordedCall[], waiter: Waiter, delayMs: number) {
  const results = new Map<PathName, PathRuns>(PATHS.map((p) => [p, { toCall: [], windows: [], inner: [], ends: new Map() }]));
  const stamp = Date.now();
  const steps = range(CLICK_TRIP_WARMUP + CLICK_TRIP_SAMPLES).flatMap((i) =>
    (i % 2 === 0 ? PATHS : [...PATHS].reverse()).map((p) => [i, p] as const),
  );
  for (const [n, [i, path]] of steps.entries()) {
    const channel = `CTRIPS${delayMs}x${stamp}${n}`;
    const title = `click trips ${delayMs} ${stamp} ${n}`;
    const approvalPost = () =>
      posts.find(
        (c) =>
          c.method === "chat.postMessage" && c.params.channel === channel && buttonsOf(c).some((b) => b.action_id === "approval_approve"),
      );
    await mentionRun(url, channel, `EvTrips${delayMs}x${stamp}${n}`, title, n);
    await waiter.until(() => approvalPost() !== undefined, `the approval post in ${channel}`);
    const value = buttonsOf(approvalPost()!).find((b) => b.action_id === "approval_approve")!.value!;
    const { run_id: runId, approval_id: approvalId } = JSON.parse(value) as { run_id: string; approval_id: string };
    const tick = await quietTick(client, delayMs);
    const sentWall = Date.now(); // the demo server stamps arrivals with the same wall clock
    if (path === "slack click") {
      const res = await postSlackInteraction(`${url}/slack/interactivity`, SIGNING_SECRET, clickPayload(channel, value, n));
      await res.text();
      if (res.status !== 200) throw new Error(`approve click in ${channel}: ${res.status}`);
    } else {
      await client.engine.decideApproval(runId, approvalId, { decision: "approve" });
    }
    const arrived = await callArrival(demoBase, title);
    const { trips } = await tripsAfter(client, tick);
    await waitForEnd(client, runId);
    if (i < CLICK_TRIP_WARMUP) continue;
    const result = results.get(path)!;
    result.toCall.push(arrived - sentWall);
    const window = windowOf(trips, path);
    result.windows.push(window.trips);
    result.inner.push(window.ms);
    tally(result.ends, (await client.engine.summary(runId)).status);
  }
  return results;
}

/** A path's figures: the time without the delay, the time with it, and the round trips that difference counts. */
export interface ClickTrips {
  path: PathName;
  runs: number;
  /** Approval sent → tools/call at the MCP server without the delay, ms, sorted. */
  toCall: number[];
  /** The same with TRIP_DELAY_MS before every remote call, ms, sorted. */
  delayed: number[];
  /** Per delayed run, round((its window in the isolate − the path's median window without) / TRIP_DELAY_MS), sorted. */
  sequential: number[];
  /** The window in the isolate (approval's arrival → tools/call sent), p50 without and with the delay, ms. */
  inner: [number, number];
  /** Per run without the delay, the remote calls started in the window, sorted. */
  inWindow: number[];
  /** Those calls of the last run without the delay, by kind. */
  kinds: Map<string, number>;
  ends: Map<string, number>;
  delayMs: number;
}

function figuresOf(path: PathName, base: PathRuns, delayed: PathRuns, delayMs: number): ClickTrips {
  const baseSorted = sortedCopy(base.toCall);
  const median = percentile(sortedCopy(base.inner), 50);
  const kinds = new Map<string, number>();
  for (const t of base.windows.at(-1) ?? []) tally(kinds, `${t.origin}: ${t.kind}`);
  const ends = new Map(base.ends);
  for (const [k, v] of delayed.ends) tally(ends, k, v);
  return {
    path,
    runs: base.toCall.length + delayed.toCall.length,
    toCall: baseSorted,
    delayed: sortedCopy(delayed.toCall),
    sequential: sortedCopy(delayed.inner.map((t) => Math.round((t - median) / delayMs))),
    inner: [median, percentile(sortedCopy(delayed.inner), 50)],
    inWindow: sortedCopy(base.windows.map((w) => w.length)),
    kinds,
    ends,
    delayMs,
  };
}

/** Phase 16: two servers (without and with the delay), each with the Slack app on against the stand-in, a 2026-07-28 demo server, the trip log on. */
export async function clickTripsPhase(): Promise<ClickTrips[]> {
  const posts: RecordedCall[] = [];
  const waiter = new Waiter();
  const demo = await startDemoMcpProcess({ DEMO_MCP_ERA: "2026-07-28" });
  const slack = await startBenchSlack((call) => {
    posts.push(call);
    waiter.notify();
  });
  try {
    const runs: Map<PathName, PathRuns>[] = [];
    for (const delayMs of [0, TRIP_DELAY_MS]) {
      runs.push(
        await withServer(
          async (server, client) => {
            log(
              `16. Slack click → tools/call, ${delayMs} ms added to every remote call: ${CLICK_TRIP_WARMUP} + ${CLICK_TRIP_SAMPLES} runs per path, alternating, one at a time`,
            );
            return measure(client, server.url, demo.baseUrl, posts, waiter, delayMs);
          },
          // Two runs per sample from one Slack user: past the default trigger rate.
          { ...slackVars(demo.url, slack), BENCH_TRIPS: "1", BENCH_TRIP_DELAY_MS: String(delayMs), TRIGGER_RATE_PER_MINUTE: "0" },
        ),
      );
    }
    return PATHS.map((p) => figuresOf(p, runs[0]!.get(p)!, runs[1]!.get(p)!, TRIP_DELAY_MS));
  } finally {
    await slack.stop();
    await demo.stop();
  }
}

/** The phase's lines for the report: the row beside its floor (the HTTP route), then what the window held. */
export function clickTripsReport(results: ClickTrips[]): string {
  const click = results.find((r) => r.path === "slack click");
  const floor = results.find((r) => r.path === "POST approvals");
  if (!click || !floor) return "";
  const span = (xs: number[]) => (xs.length === 0 ? "n/a" : xs[0] === xs.at(-1) ? `${xs[0]} in every run` : `${xs[0]}..${xs.at(-1)}`);
  const trips = (r: ClickTrips) => `${percentile(r.sequential, 50)} (runs: ${span(r.sequential)})`;
  const latency = (xs: number[]) => `${percentile(xs, 50).toFixed(1)} / ${percentile(xs, 99).toFixed(1)} ms`;
  const counted = percentile(click.sequential, 50);
  const rows = [
    ["figure", "Slack Approve click", "floor: POST /api/runs/{id}/approvals/{id}", "goal"],
    [
      "sequential remote round trips, approval → tools/call (p50)",
      trips(click),
      trips(floor),
      `at most ${GOAL_CLICK_TRIPS} (9 before): ${counted <= GOAL_CLICK_TRIPS ? "met" : "NOT MET"}`,
    ],
    ["approval sent → tools/call at the MCP server, p50 / p99", latency(click.toCall), latency(floor.toCall), ""],
    [`the same, ${click.delayMs} ms added to every remote call`, latency(click.delayed), latency(floor.delayed), ""],
    [
      "arrival at the Worker → tools/call sent, in the isolate, p50, without / with the delay",
      `${click.inner[0]} / ${click.inner[1]} ms`,
      `${floor.inner[0]} / ${floor.inner[1]} ms`,
      "",
    ],
    ["remote calls started in the window (on the path and beside it)", span(click.inWindow), span(floor.inWindow), ""],
    ["runs timed (how they ended)", `${click.runs} (${counts(click.ends)})`, `${floor.runs} (${counts(floor.ends)})`, ""],
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const lines = [
    "",
    "16. Slack Approve click → tools/call (issue 28; wrangler dev's port, one run at a time, the paths alternating; remote calls from the bench's trip log)",
    ...rows.map((r) => `  ${r.map((cell, c) => cell.padEnd(widths[c]!)).join("  ")}`.trimEnd()),
  ];
  for (const r of results) lines.push(`  ${r.path}, the window of its last run: ${counts(r.kinds)}`);
  lines.push("");
  return lines.join("\n");
}

const counts = (map: Map<string, number>) => [...map].map(([k, n]) => (n > 1 ? `${k} x${n}` : k)).join(", ") || "-";
