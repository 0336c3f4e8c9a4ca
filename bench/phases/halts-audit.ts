// Phases 19 and 20 (issues 30 and 32, contract sections 23 and 25).
//
// 19a. The checkpoint with and without the halt and limit checks, in the same
//      server and the same loop: each sample is one request to a bench route
//      (bench/bench-checkpoint.ts) that runs only the checkpoint statement on
//      a fresh row, `guarded` (the engine's statement: three active halts that
//      cover nothing here, two limits whose window already holds
//      CHECKPOINT_WINDOW dispatched rows) and `bare` (the same UPDATE without
//      those clauses) alternating, beside GET /bench/auth/bare (the HTTP hop
//      alone). Timed by this process around each request.
// 19b. POST /api/halts → the last affected run refusing a decision: HALT_RUNS
//      runs wait on an approval of create_dashboard; per trial the halt
//      (server:demo) is posted and, as soon as it answers 201, every run's
//      approval is sent at once; timed from just before the POST to each 409.
//      Released (DELETE) between trials. Any answer but 409 is counted.
// 20a. Audit append throughput through the one sealer: AUDIT_BACKLOG entries
//      written straight to D1 unsealed, then sealed by the sealer object's
//      seal() (bench route); and AUDIT_API_APPENDS audited API actions
//      (token create, 16 at a time) with the time until all are sealed.
// 20b. The p99 the audit chain adds to a decision: approve → the subscriber's
//      tool_execution_started, runs one at a time, while two clients append
//      audited actions (token creates), each at most one per 50 ms, on a server with the
//      sealer on and on one with it off (BENCH_SEALER_OFF: entries written,
//      never chained), each on a server of its own, the same run.
// `BENCH_ONLY=halts npm run bench` runs 19 and 20 alone.
import { performance } from "node:perf_hooks";
import { type Client, log, mapLimit, percentile, range, sortedCopy, tally, Waiter } from "../http-client";
import { startDemo, withServer } from "../servers";
import { count, CREATE_DASHBOARD } from "../settings";
import { approvalVars, approve, watchRun } from "../watched-run";

const CHECKPOINT_SAMPLES = count(400, 40);
const CHECKPOINT_WARMUP = count(20, 4);
/** Dispatched rows already in the guarded limits' window. */
const CHECKPOINT_WINDOW = count(500, 50);
const HALT_RUNS = count(20, 5);
const HALT_TRIALS = count(10, 2);
const AUDIT_BACKLOG = count(10_000, 1_000);
const AUDIT_API_APPENDS = count(1_000, 100);
const AUDIT_API_CONCURRENCY = 16;
const DECISION_SAMPLES = count(100, 10);
const DECISION_WARMUP = count(5, 2);
const LOAD_CLIENTS = 2;
/** Each load client sends one audited action per this many ms (at most): the same load on both servers. */
const LOAD_INTERVAL_MS = 50;

const now = () => performance.now();

export interface HaltsAuditFigures {
  checkpoint: { bare: number[]; guarded: number[]; floor: number[]; notDispatched: number; window: number };
  reach: { runs: number; trials: number; engage: number[]; refusal: number[]; last: number[]; others: Map<string, number> };
  sealer: { backlog: number; sealMs: number; apiAppends: number; appendMs: number; sealedAfterMs: number };
  decisions: { sealer: "on" | "off"; started: number[]; executions: Map<string, number>; loadEntries: number; loadMs: number }[];
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = now();
  const value = await work();
  return { ms: now() - start, value };
}

async function checkpointCost(client: Client): Promise<HaltsAuditFigures["checkpoint"]> {
  const total = CHECKPOINT_WARMUP + CHECKPOINT_SAMPLES;
  const prepared = await client.api<{ mutation_ids: string[] }>(
    "POST",
    `/bench/checkpoint/prepare?count=${2 * total}&window=${CHECKPOINT_WINDOW}`,
  );
  if (prepared.status !== 200) throw new Error(`checkpoint prepare: ${prepared.status} ${JSON.stringify(prepared.body)}`);
  const ids = prepared.body.mutation_ids;
  const out = { bare: [] as number[], guarded: [] as number[], floor: [] as number[], notDispatched: 0, window: CHECKPOINT_WINDOW };
  for (const i of range(total)) {
    const order = i % 2 === 0 ? (["guarded", "bare"] as const) : (["bare", "guarded"] as const);
    for (const [k, variant] of order.entries()) {
      const id = ids[2 * i + k]!;
      const { ms, value } = await timed(() => client.api<{ dispatched: boolean }>("POST", `/bench/checkpoint/${id}?variant=${variant}`));
      if (value.status !== 200 || !value.body.dispatched) out.notDispatched += 1;
      if (i >= CHECKPOINT_WARMUP) out[variant].push(ms);
    }
    const floor = await timed(() => client.api("GET", "/bench/auth/bare"));
    if (i >= CHECKPOINT_WARMUP) out.floor.push(floor.ms);
  }
  return { ...out, bare: sortedCopy(out.bare), guarded: sortedCopy(out.guarded), floor: sortedCopy(out.floor) };
}

async function haltReach(client: Client): Promise<HaltsAuditFigures["reach"]> {
  const runIds: string[] = [];
  for (const i of range(HALT_RUNS)) {
    const { run_id } = await client.engine.trigger({
      message: "bench: halt reach",
      script: [{ tool_calls: [{ tool_name: CREATE_DASHBOARD, tool_call_id: "call-1", arguments: { title: `halt ${i} ${Date.now()}` } }] }],
    });
    runIds.push(run_id);
  }
  const approvals = new Map<string, string>();
  const deadline = Date.now() + 60_000;
  while (approvals.size < HALT_RUNS) {
    if (Date.now() > deadline) throw new Error(`only ${approvals.size} of ${HALT_RUNS} approvals were asked`);
    const page = await client.api<{ approvals: { run_id: string; approval_id: string }[] }>(
      "GET",
      "/api/approvals?status=pending&limit=200",
    );
    for (const a of page.body.approvals ?? []) if (runIds.includes(a.run_id)) approvals.set(a.run_id, a.approval_id);
    if (approvals.size < HALT_RUNS) await new Promise((r) => setTimeout(r, 100));
  }
  const out = {
    runs: HALT_RUNS,
    trials: HALT_TRIALS,
    engage: [] as number[],
    refusal: [] as number[],
    last: [] as number[],
    others: new Map(),
  };
  for (const trial of range(HALT_TRIALS)) {
    const start = now();
    const engaged = await client.api<{ halt_id: string }>("POST", "/api/halts", { scope: "server:demo", reason: `bench trial ${trial}` });
    if (engaged.status !== 201) throw new Error(`POST /api/halts: ${engaged.status} ${JSON.stringify(engaged.body)}`);
    out.engage.push(now() - start);
    const answers = await Promise.all(
      runIds.map(async (runId) => {
        const res = await client.api<{ error?: string }>("POST", `/api/runs/${runId}/approvals/${approvals.get(runId)}`, {
          decision: "approve",
        });
        return { ms: now() - start, status: res.status, error: res.body.error };
      }),
    );
    for (const a of answers) {
      if (a.status === 409 && a.error === "halted") out.refusal.push(a.ms);
      else tally(out.others, `${a.status} ${a.error ?? ""}`.trim());
    }
    out.last.push(Math.max(...answers.map((a) => a.ms)));
    const released = await client.api("DELETE", `/api/halts/${engaged.body.halt_id}`);
    if (released.status !== 200) throw new Error(`DELETE /api/halts: ${released.status} ${JSON.stringify(released.body)}`);
  }
  return { ...out, engage: sortedCopy(out.engage), refusal: sortedCopy(out.refusal), last: sortedCopy(out.last) };
}

async function sealedThrough(client: Client): Promise<number> {
  return (await client.api<{ sealed_through_seq: number }>("GET", "/api/audit?limit=1")).body.sealed_through_seq ?? 0;
}

async function sealerThroughput(client: Client): Promise<HaltsAuditFigures["sealer"]> {
  // The API's own appends first: tokens made AUDIT_API_CONCURRENCY at a time, then the wait until the sealer has them all.
  const before = await sealedThrough(client);
  const append = await timed(() =>
    mapLimit(range(AUDIT_API_APPENDS), AUDIT_API_CONCURRENCY, async (i) => {
      const res = await client.api("POST", "/api/tokens", { name: `bench-seal-${i}`, roles: ["viewer"] });
      if (res.status !== 201) throw new Error(`POST /api/tokens: ${res.status}`);
    }),
  );
  const appendedAt = now();
  const deadline = Date.now() + 60_000;
  while ((await sealedThrough(client)) < before + AUDIT_API_APPENDS) {
    if (Date.now() > deadline) throw new Error("the API's audit entries were not sealed within 60 s");
    await new Promise((r) => setTimeout(r, 20));
  }
  const sealedAfterMs = now() - appendedAt;
  // Then a backlog straight into D1, sealed by the one sealer.
  const backlog = await client.api("POST", `/bench/audit/backlog?count=${AUDIT_BACKLOG}`);
  if (backlog.status !== 200) throw new Error(`backlog: ${backlog.status} ${JSON.stringify(backlog.body)}`);
  const seal = await timed(() => client.api<{ sealed: number }>("POST", "/bench/audit/seal"));
  if (seal.value.body.sealed < AUDIT_BACKLOG) throw new Error(`sealed ${seal.value.body.sealed} of ${AUDIT_BACKLOG}`);
  return { backlog: seal.value.body.sealed, sealMs: seal.ms, apiAppends: AUDIT_API_APPENDS, appendMs: append.ms, sealedAfterMs };
}

async function decisionsUnderAudit(client: Client, sealer: "on" | "off") {
  let loading = true;
  let loadEntries = 0;
  const loadStart = now();
  const load = Promise.all(
    range(LOAD_CLIENTS).map(async (c) => {
      for (let i = 0; loading; i++) {
        const sent = now();
        const res = await client.api("POST", "/api/tokens", { name: `bench-load-${sealer}-${c}-${i}`, roles: ["viewer"] });
        if (res.status === 201) loadEntries += 1;
        await new Promise((r) => setTimeout(r, Math.max(0, LOAD_INTERVAL_MS - (now() - sent))));
      }
    }),
  );
  const waiter = new Waiter();
  const started: number[] = [];
  const executions = new Map<string, number>();
  try {
    for (const step of range(DECISION_WARMUP + DECISION_SAMPLES)) {
      const run = await watchRun(client, CREATE_DASHBOARD, `audit ${sealer} ${step} ${Date.now()}`, waiter);
      try {
        await waiter.until(() => run.approvalId !== undefined || run.terminal !== undefined, `approval_requested in ${run.runId}`);
        const answer = await approve(client, run);
        if (answer !== "200") throw new Error(`approve in ${run.runId}: ${answer}`);
        await waiter.until(
          () => run.first.has("tool_execution_started") || run.terminal !== undefined,
          `tool_execution_started in ${run.runId}`,
        );
        const seen = run.first.get("tool_execution_started");
        await waiter.until(() => run.terminal !== undefined, `the end of ${run.runId}`);
        if (step < DECISION_WARMUP || seen === undefined) continue;
        started.push(seen.at - run.approvalSentAt);
        tally(executions, run.execution);
      } finally {
        run.sub?.close();
      }
    }
  } finally {
    loading = false;
    await load;
  }
  return { sealer, started: sortedCopy(started), executions, loadEntries, loadMs: now() - loadStart };
}

/** Phases 19-20 on servers of their own; `demo` is the run's demo MCP server (started here when absent). */
export async function haltsAuditPhase(given?: { url: string }): Promise<HaltsAuditFigures> {
  const demo = given ?? (await startDemo());
  const vars = { ...approvalVars(demo.url), TRIGGER_RATE_PER_MINUTE: "0", APPROVAL_TIMEOUT_MS: "600000" };
  const { checkpoint, reach } = await withServer(async (_server, client) => {
    log(`19a. checkpoint: ${CHECKPOINT_WARMUP} + ${CHECKPOINT_SAMPLES} pairs (guarded, bare), window ${CHECKPOINT_WINDOW} rows`);
    const checkpoint = await checkpointCost(client);
    log(`19b. halt reach: ${HALT_RUNS} waiting runs, ${HALT_TRIALS} trials`);
    return { checkpoint, reach: await haltReach(client) };
  }, vars);
  const sealer = await withServer(async (_server, client) => {
    log(`20a. sealer: ${AUDIT_API_APPENDS} API appends, then a backlog of ${AUDIT_BACKLOG}`);
    return sealerThroughput(client);
  }, vars);
  const decisions = [];
  for (const state of ["off", "on"] as const) {
    decisions.push(
      await withServer(
        async (_server, client) => {
          log(
            `20b. decisions with the sealer ${state}: ${DECISION_WARMUP} + ${DECISION_SAMPLES} runs under ${LOAD_CLIENTS} audit appenders`,
          );
          return decisionsUnderAudit(client, state);
        },
        { ...vars, ...(state === "off" ? { BENCH_SEALER_OFF: "1" } : {}) },
      ),
    );
  }
  return { checkpoint, reach, sealer, decisions };
}

export function haltsAuditReport(f: HaltsAuditFigures, load: { before: string; after: string }): string {
  const ms = (n: number) => `${n.toFixed(2)} ms`.padStart(10);
  const pp = (xs: number[]) => `p50 ${ms(percentile(xs, 50))}  p99 ${ms(percentile(xs, 99))}`;
  const c = f.checkpoint;
  const perSecond = (n: number, t: number) => `${Math.round((n / t) * 1000).toLocaleString("en-US")}/s`;
  return [
    "",
    `Halts, limits and the audit chain (issues 30, 32; through wrangler dev's port; load average ${load.before} → ${load.after}, a shared machine)`,
    `  19a. the checkpoint as one request to a bench route, ${c.bare.length} each, alternating (window: ${c.window} dispatched rows):`,
    `    guarded (3 active halts, 2 limits)  ${pp(c.guarded)}`,
    `    bare (no halt or limit clause)      ${pp(c.bare)}`,
    `    HTTP hop alone (GET /bench/auth/bare) ${pp(c.floor)}`,
    `    the checks add p50 ${ms(percentile(c.guarded, 50) - percentile(c.bare, 50))}, p99 ${ms(percentile(c.guarded, 99) - percentile(c.bare, 99))}; not dispatched: ${c.notDispatched}`,
    `  19b. POST /api/halts → each of ${f.reach.runs} runs' approve refused 409 halted, ${f.reach.trials} trials (goal: within 1 s):`,
    `    the halt's 201 ${pp(f.reach.engage)}; each refusal ${pp(f.reach.refusal)}; the last of each trial ${pp(f.reach.last)} max ${ms(Math.max(...f.reach.last))}`,
    `    answers other than 409 halted: ${f.reach.others.size === 0 ? "none" : [...f.reach.others].map(([k, v]) => `${k}=${v}`).join(" ")}`,
    `  20a. the one sealer: a backlog of ${f.sealer.backlog} sealed in ${f.sealer.sealMs.toFixed(0)} ms (${perSecond(f.sealer.backlog, f.sealer.sealMs)});`,
    `    ${f.sealer.apiAppends} audited API actions (16 at a time) in ${f.sealer.appendMs.toFixed(0)} ms (${perSecond(f.sealer.apiAppends, f.sealer.appendMs)}), all sealed ${f.sealer.sealedAfterMs.toFixed(0)} ms after the last`,
    `  20b. approve → tool_execution_started, one run at a time, under audited appends from ${LOAD_CLIENTS} clients (each at most 1 per ${LOAD_INTERVAL_MS} ms):`,
    ...f.decisions.map(
      (d) =>
        `    sealer ${d.sealer.padEnd(3)}  ${d.started.length} runs  ${pp(d.started)}  load ${perSecond(d.loadEntries, d.loadMs)} entries` +
        `  executions ${[...d.executions].map(([k, v]) => `${k}=${v}`).join(" ")}`,
    ),
    "",
  ].join("\n");
}
