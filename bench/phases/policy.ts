// Phase 21, policy as versioned data (issue 31, contract section 24): what
// reading the active version per check costs, and what evaluating a shadow
// version beside it costs. One server (the trip log on, BENCH_TRIPS), three
// stages one after the other, the same runs in each: one create_dashboard
// call behind an approval, one run at a time, one subscriber each, timed
// from just before the approval request to the subscriber's
// tool_execution_started frame (as phases 5 and 20b time it):
//   (a) version 0 only (the settings; no stored version);
//   (b) after `PUT /api/policy` of a tightening version (list_dashboards
//       raised from approve to confirm: active at once, create_dashboard's
//       rule unchanged), so every check reads a stored active version;
//   (c) the same with a shadow version beside it (`"mode":"shadow"`,
//       list_dashboards back at approve: evaluated at every check, no
//       difference on create_dashboard's checks).
// Stage (a) is the floor. The stages cannot alternate (a stored version
// cannot be taken back to version 0), so the load average is printed per
// stage. Per run, the trip log (bench/bench-trips.ts, as phase 16 reads it)
// names every D1 statement started between the approval's arrival at the
// Worker and the tools/call leaving for the MCP server, on the path or beside
// it; the goal is the same count in (b) as in (a): the policy pointer folded
// into the halts read and the document cached per isolate, so no extra D1
// read when nothing changed. `BENCH_ONLY=policy npm run bench` runs it alone.
import { readFileSync } from "node:fs";
import { type Client, log, percentile, range, sortedCopy, tally, Waiter } from "../http-client";
import { startDemo, withServer } from "../servers";
import { CREATE_DASHBOARD, count, LIST_DASHBOARDS } from "../settings";
import { approvalVars, approve, watchRun } from "../watched-run";
import { quietTick, type Trip, tripsAfter } from "./click-trips";

const SAMPLES = count(60, 6);
/** Runs before each stage's timed ones (the first stage's also warm the isolate; after a PUT, the first check reads the new document). */
const WARMUP = count(10, 2);

type Stage = "version 0 (settings)" | "stored active version" | "active + shadow version";

export interface PolicyStageFigures {
  stage: Stage;
  /** The active version (and the shadow's) as GET /api/policy and the PUT answered. */
  versions: string;
  /** Approve sent → tool_execution_started at the subscriber, ms, sorted. */
  started: number[];
  /** Per run, D1 statements started between the approval's arrival and the tools/call, sorted. */
  d1: number[];
  /** Per run, the reads among them (SELECT statements), sorted: where a policy document read would show. */
  reads: number[];
  /** Those of the last run, by statement head. */
  kinds: Map<string, number>;
  executions: Map<string, number>;
  load: [string, string];
}

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0] ?? "?";

/** The D1 statements started in the window: the approval's arrival at the Worker → the first tools/call leaving. */
function d1InWindow(trips: Trip[]): Trip[] {
  const arrival = trips.find((t) => t.kind.startsWith("in POST /api/runs/"));
  const call = trips.find((t) => t.kind === "fetch mcp tools/call");
  if (!arrival || !call)
    throw new Error(`the trip log has no ${arrival ? "tools/call" : "approval request"}: ${trips.map((t) => t.kind).join(", ")}`);
  return trips.filter((t) => t.start > arrival.start && t.start < call.start && t.kind.startsWith("d1 "));
}

async function stage(client: Client, name: Stage, versions: string): Promise<PolicyStageFigures> {
  const load0 = loadAverage();
  log(`21. policy, ${name}: ${WARMUP} + ${SAMPLES} runs, one at a time`);
  const waiter = new Waiter();
  const out: PolicyStageFigures = {
    stage: name,
    versions,
    started: [],
    d1: [],
    reads: [],
    kinds: new Map(),
    executions: new Map(),
    load: [load0, ""],
  };
  for (const step of range(WARMUP + SAMPLES)) {
    const run = await watchRun(client, CREATE_DASHBOARD, `policy ${name} ${step} ${Date.now()}`, waiter);
    try {
      await waiter.until(() => run.approvalId !== undefined || run.terminal !== undefined, `approval_requested in ${run.runId}`);
      const tick = await quietTick(client, 0);
      const answer = await approve(client, run);
      if (answer !== "200") throw new Error(`approve in ${run.runId}: ${answer}`);
      await waiter.until(
        () => run.first.has("tool_execution_started") || run.terminal !== undefined,
        `tool_execution_started in ${run.runId}`,
      );
      await waiter.until(() => run.terminal !== undefined, `the end of ${run.runId}`);
      const seen = run.first.get("tool_execution_started");
      if (step < WARMUP || seen === undefined) continue;
      out.started.push(seen.at - run.approvalSentAt);
      const window = d1InWindow((await tripsAfter(client, tick)).trips);
      out.d1.push(window.length);
      out.reads.push(window.filter((t) => /^d1 (all|first|raw) SELECT/i.test(t.kind)).length);
      out.kinds = new Map();
      for (const t of window) tally(out.kinds, `${t.origin}: ${t.kind}`);
      tally(out.executions, run.execution);
    } finally {
      run.sub?.close();
    }
  }
  return { ...out, started: sortedCopy(out.started), d1: sortedCopy(out.d1), reads: sortedCopy(out.reads), load: [load0, loadAverage()] };
}

interface PolicyAnswer {
  version: number;
  status: string;
  policy: { tools: Record<string, Record<string, unknown>>; groups: unknown; budget: unknown };
}

async function put(client: Client, body: unknown): Promise<PolicyAnswer> {
  const res = await client.api<PolicyAnswer>("PUT", "/api/policy", body);
  if (res.status !== 201) throw new Error(`PUT /api/policy: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Phase 21 on a server of its own; `demo` is the run's demo MCP server (started here when absent). */
export async function policyPhase(given?: { url: string }): Promise<PolicyStageFigures[]> {
  const demo = given ?? (await startDemo());
  const vars = { ...approvalVars(demo.url), BENCH_TRIPS: "1", TRIGGER_RATE_PER_MINUTE: "0", APPROVAL_TIMEOUT_MS: "600000" };
  return withServer(async (_server, client) => {
    const zero = (await client.api<PolicyAnswer>("GET", "/api/policy")).body;
    if (zero.version !== 0) throw new Error(`GET /api/policy: expected version 0, got ${JSON.stringify(zero)}`);
    const results = [await stage(client, "version 0 (settings)", "active 0")];
    const tighter = { ...zero.policy, tools: { ...zero.policy.tools, [LIST_DASHBOARDS]: { level: "confirm" } } };
    const active = await put(client, { policy: tighter, base_version: 0, comment: "bench: list_dashboards needs a typed confirmation" });
    if (active.status !== "active") throw new Error(`the tightening PUT answered status ${active.status}`);
    results.push(await stage(client, "stored active version", `active ${active.version}`));
    const shadow = await put(client, {
      policy: zero.policy,
      base_version: active.version,
      mode: "shadow",
      comment: "bench: list_dashboards back at approve, in shadow",
    });
    if (shadow.status !== "shadow") throw new Error(`the shadow PUT answered status ${shadow.status}`);
    results.push(await stage(client, "active + shadow version", `active ${active.version}, shadow ${shadow.version}`));
    return results;
  }, vars);
}

export function policyReport(figures: PolicyStageFigures[], load: { before: string; after: string }): string {
  const ms = (n: number) => `${n.toFixed(2)} ms`.padStart(10);
  const pp = (xs: number[]) => (xs.length === 0 ? "n/a" : `p50 ${ms(percentile(xs, 50))}  p99 ${ms(percentile(xs, 99))}`);
  const span = (xs: number[]) =>
    xs.length === 0 ? "n/a" : xs[0] === xs.at(-1) ? `${xs[0]} in every run` : `${xs[0]}..${xs.at(-1)} (p50 ${percentile(xs, 50)})`;
  const floor = figures[0];
  const lines = [
    "",
    `21. Policy as versioned data: approve → tool_execution_started, one server, the stages in order (issue 31; wrangler dev's port; load average ${load.before} → ${load.after}, a shared machine)`,
  ];
  for (const f of figures) {
    const extra =
      floor && f !== floor && f.started.length > 0
        ? `  vs version 0: p50 ${(percentile(f.started, 50) - percentile(floor.started, 50)).toFixed(2)} ms, p99 ${(percentile(f.started, 99) - percentile(floor.started, 99)).toFixed(2)} ms`
        : "";
    lines.push(
      `  ${f.stage.padEnd(24)} (${f.versions}) ${f.started.length} runs  ${pp(f.started)}${extra}  load ${f.load[0]} → ${f.load[1]}`,
      `    D1 reads (SELECT), approval's arrival → tools/call: ${span(f.reads)}; all D1 statements started in that window (on the path and beside it): ${span(f.d1)}; executions ${[...f.executions].map(([k, v]) => `${k}=${v}`).join(" ")}`,
      `    the last run's: ${[...f.kinds].map(([k, n]) => (n > 1 ? `${k} x${n}` : k)).join(", ") || "-"}`,
    );
  }
  const [a, b] = figures;
  if (a && b && a.reads.length > 0 && b.reads.length > 0) {
    const extra = Math.max(...b.reads) - Math.max(...a.reads);
    lines.push(
      `  goal: no extra D1 read on the decision path when nothing changed (the most reads of any run, stored version vs version 0): ${extra <= 0 ? "met" : `NOT MET (+${extra})`}`,
    );
  }
  lines.push("");
  return lines.join("\n");
}
