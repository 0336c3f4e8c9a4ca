// GET /api/metrics (contract section 22) over SELF.fetch, the real D1 of
// miniflare (migrations/0011: pre-aggregated counters kept by triggers and
// run-object batches) and the real storage pool. Proves: the series D1 seeds
// are the ones the code declares; a real approved run moves the run, approval
// and mutation series and both histograms; pool waits and refusals move the
// pool series; a 401 counts; a run object's delta batch is applied exactly
// once; and a scrape over 10,000 indexed runs runs the same D1 statements
// (and reads no more rows) than over 10, within the contract's bounds.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newRunId } from "../../src/ids";
import { STORED_SERIES, storedRows } from "../../src/operate/metric-series";
import { readMetrics, type ScrapeDb } from "../../src/operate/metrics-scrape";
import { RunMetrics } from "../../src/operate/run-metrics";
import { globalStoragePool } from "../../src/outcomes/storage-pool-rpc";
import { api, freshAddress, runStub, trigger, runTablesOf } from "./helpers";

/** Contract section 22: a scrape runs at most 8 D1 statements reading at most 1,000 rows. */
const SCRAPE_MAX_STATEMENTS = 8;
const SCRAPE_MAX_ROWS_READ = 1_000;
/** Contract section 9: one global pool of 16 slots. */
const POOL_CAPACITY_SLOTS = 16;

/** Every sample of a scrape: `name{labels}` → value. */
async function scrape(): Promise<Map<string, number>> {
  const res = await api("/api/metrics");
  expect(res.status, await res.clone().text()).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

const sample = (samples: Map<string, number>, series: string): number => {
  const v = samples.get(series);
  if (v === undefined) throw new Error(`the scrape has no ${series}: ${[...samples.keys()].join(", ")}`);
  return v;
};

async function summary(runId: string): Promise<any> {
  return (await api(`/api/runs/${runId}`)).json();
}

/** Fires the run's alarm (its index and metrics flush) until `done` holds on a fresh scrape, with a bound. */
async function flushUntil(runId: string, done: (s: Map<string, number>) => boolean): Promise<Map<string, number>> {
  let last = new Map<string, number>();
  for (let round = 0; round < 40; round++) {
    await runDurableObjectAlarm(runStub(runId));
    last = await scrape();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the scrape did not show the expected change: ${JSON.stringify([...last])}`);
}

describe("GET /api/metrics", () => {
  it("D1 holds exactly the stored series the code declares", async () => {
    const { results } = await env.DB.prepare(`SELECT name, label FROM metric_counters ORDER BY name, label`).all<{
      name: string;
      label: string;
    }>();
    const key = (r: { name: string; label: string }) => `${r.name}|${r.label}`;
    // A series with open label values gains its rows as they occur (migrations/0032).
    const open = new Set(STORED_SERIES.filter((s) => s.openValues).map((s) => s.name));
    expect(
      results
        .filter((r) => !open.has(r.name))
        .map(key)
        .sort(),
    ).toEqual(storedRows().map(key).sort());
  });

  it("needs a credential, and the refusal counts in aee_auth_failures_total", async () => {
    const before = sample(await scrape(), "aee_auth_failures_total");
    const res = await api("/api/metrics", { headers: { authorization: "Bearer wrong" } });
    expect(res.status).toBe(401);
    await expect.poll(async () => sample(await scrape(), "aee_auth_failures_total")).toBe(before + 1);
  });

  it("a 429 counts in aee_rate_limited_total (the 11th failure of an address within its window)", async () => {
    const before = await scrape();
    const address = freshAddress();
    const wrong = () => api("/api/runs", { headers: { authorization: "Bearer wrong", "cf-connecting-ip": address } });
    // Contract section 18: past 10 failures in the window, the address is refused 429.
    for (let i = 1; i <= 10; i++) expect((await wrong()).status, `failure ${i}`).toBe(401);
    expect((await wrong()).status).toBe(429);
    await expect.poll(async () => sample(await scrape(), "aee_rate_limited_total")).toBe(sample(before, "aee_rate_limited_total") + 1);
    expect(sample(await scrape(), "aee_auth_failures_total")).toBe(sample(before, "aee_auth_failures_total") + 10);
  });

  it("an approved mutation moves the run, approval and mutation series and both histograms", async () => {
    const before = await scrape();
    const title = `metrics ${crypto.randomUUID().slice(0, 8)}`;
    const { status, json } = await trigger({
      message: "metrics",
      channel_id: `C-metrics-${crypto.randomUUID().slice(0, 8)}`,
      script: [{ tool_calls: [{ tool_name: "mcp__demo__create_dashboard", tool_call_id: "w1", arguments: { title } }] }, { text: "done" }],
    });
    expect(status).toBe(202);
    const runId: string = json.run_id;
    await expect.poll(async () => (await summary(runId)).pending_approvals.length).toBe(1);
    const approvalId: string = (await summary(runId)).pending_approvals[0].approval_id;

    const asked = await flushUntil(runId, (s) => sample(s, "aee_approvals_pending") === sample(before, "aee_approvals_pending") + 1);
    expect(sample(asked, "aee_runs_started_total")).toBe(sample(before, "aee_runs_started_total") + 1);
    expect(sample(asked, 'aee_runs{status="running"}')).toBe(sample(before, 'aee_runs{status="running"}') + 1);
    expect(sample(asked, "aee_runs_active")).toBe(sample(asked, 'aee_runs{status="running"}'));
    expect(sample(asked, "aee_approval_oldest_pending_seconds")).toBeGreaterThan(0);

    const res = await api(`/api/runs/${runId}/approvals/${approvalId}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(res.status).toBe(200);
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("completed");

    const after = await flushUntil(
      runId,
      (s) =>
        sample(s, 'aee_runs{status="completed"}') === sample(before, 'aee_runs{status="completed"}') + 1 &&
        sample(s, "aee_approval_to_dispatch_seconds_count") === sample(before, "aee_approval_to_dispatch_seconds_count") + 1,
    );
    expect(sample(after, "aee_approvals_pending")).toBe(sample(before, "aee_approvals_pending"));
    expect(sample(after, 'aee_runs{status="running"}')).toBe(sample(before, 'aee_runs{status="running"}'));
    expect(sample(after, 'aee_mutations{state="completed"}')).toBe(sample(before, 'aee_mutations{state="completed"}') + 1);
    expect(sample(after, 'aee_mutations_settled_total{state="completed"}')).toBe(
      sample(before, 'aee_mutations_settled_total{state="completed"}') + 1,
    );
    expect(sample(after, "aee_approval_decision_seconds_count")).toBe(sample(before, "aee_approval_decision_seconds_count") + 1);
    expect(sample(after, 'aee_approval_decision_seconds_bucket{le="+Inf"}')).toBe(sample(after, "aee_approval_decision_seconds_count"));
    // Approved to sent within the run's own step: the 10 s bucket holds it.
    expect(sample(after, 'aee_approval_to_dispatch_seconds_bucket{le="10"}')).toBe(
      sample(before, 'aee_approval_to_dispatch_seconds_bucket{le="10"}') + 1,
    );
    expect(sample(after, "aee_approval_to_dispatch_seconds_sum")).toBeGreaterThanOrEqual(
      sample(before, "aee_approval_to_dispatch_seconds_sum"),
    );
  });

  it("pool waits and refusals move aee_storage_pool_in_use, _waiting and _rejected_total", async () => {
    const pool = globalStoragePool(env.STORAGE_POOL);
    const before = await scrape();
    const leases: string[] = [];
    for (let i = 0; i < POOL_CAPACITY_SLOTS - sample(before, "aee_storage_pool_in_use"); i++) {
      const got = await pool.acquire(`metrics-test-${i}`);
      if (!got.ok) throw new Error("the pool refused a free slot");
      leases.push(got.lease_id);
    }
    try {
      expect(sample(await scrape(), "aee_storage_pool_in_use")).toBe(POOL_CAPACITY_SLOTS);
      const waiting = pool.acquire("metrics-test-waiter", 10_000);
      await expect.poll(async () => sample(await scrape(), "aee_storage_pool_waiting")).toBe(1);
      expect(await pool.acquire("metrics-test-refused")).toEqual({ ok: false });
      expect(sample(await scrape(), "aee_storage_pool_rejected_total")).toBe(sample(before, "aee_storage_pool_rejected_total") + 1);
      // The waiter gets the first freed slot.
      await pool.release(leases.pop()!);
      const granted = await waiting;
      if (!granted.ok) throw new Error("the waiter was not granted the freed slot");
      leases.push(granted.lease_id);
      expect(sample(await scrape(), "aee_storage_pool_waiting")).toBe(0);
    } finally {
      for (const lease of leases) await pool.release(lease);
    }
    expect(sample(await scrape(), "aee_storage_pool_in_use")).toBe(sample(before, "aee_storage_pool_in_use"));
  });

  it("a call ended not_executed(rate_limited) counts in aee_mutations_limited_total{tool}, per tool", async () => {
    const tool = `demo__limited_${Math.random().toString(36).slice(2, 8)}`;
    const other = `${tool}_other`;
    const source = newRunId();
    const ended = (tool_name: string, reason: string) =>
      ({
        type: "tool_execution",
        tool_name,
        tool_call_id: `tc_${Math.random().toString(36).slice(2)}`,
        execution_status: "not_executed",
        reason,
      }) as unknown as Parameters<RunMetrics["observeEvent"]>[0];
    await runInDurableObject(runStub(source), async (_instance, state) => {
      const metrics = new RunMetrics(runTablesOf(state), source);
      expect(metrics.observeEvent(ended(tool, "rate_limited"), Date.now())).toBe(true);
      expect(await metrics.flush(env.DB, Date.now())).toEqual({ status: "ok", sent: true });
      metrics.observeEvent(ended(tool, "rate_limited"), Date.now());
      metrics.observeEvent(ended(other, "rate_limited"), Date.now());
      // Another reason is not a limit's refusal.
      metrics.observeEvent(ended(tool, "halted"), Date.now());
      expect(await metrics.flush(env.DB, Date.now())).toEqual({ status: "ok", sent: true });
    });
    const after = await scrape();
    expect(sample(after, `aee_mutations_limited_total{tool="${tool}"}`)).toBe(2);
    expect(sample(after, `aee_mutations_limited_total{tool="${other}"}`)).toBe(1);
    const text = await (await api("/api/metrics")).text();
    expect(text).toContain("# TYPE aee_mutations_limited_total counter");
  });

  it("a run object's delta batch (Slack posts, dropped spans) is applied once, even when sent again", async () => {
    const before = await scrape();
    const source = newRunId();
    await runInDurableObject(runStub(source), async (_instance, state) => {
      const metrics = new RunMetrics(runTablesOf(state), source);
      metrics.slackCounts({ pending: 3, failed: 0 });
      metrics.add("aee_trace_spans_dropped_total", "", 2);
      // A flush whose answer was lost: D1 applied the batch, the object did not hear it.
      let calls = 0;
      const lostAnswer = {
        prepare: (q: string) => ({
          bind: (...v: unknown[]) => ({
            run: async () => {
              calls += 1;
              await env.DB.prepare(q)
                .bind(...v)
                .run();
              throw new Error("the answer was lost");
            },
          }),
        }),
      };
      expect((await metrics.flush(lostAnswer, Date.now())).status).toBe("failed");
      metrics.slackCounts({ pending: 1, failed: 2 });
      // The retry resends the same batch (a no-op in D1), then the next one carries the later change.
      expect(await metrics.flush(env.DB, Date.now())).toEqual({ status: "ok", sent: true });
      expect(await metrics.flush(env.DB, Date.now())).toEqual({ status: "ok", sent: true });
      expect(await metrics.flush(env.DB, Date.now())).toEqual({ status: "ok", sent: false });
      expect(calls).toBe(1);
      expect(metrics.pending).toBe(false);
    });
    const after = await scrape();
    expect(sample(after, "aee_slack_posts_pending")).toBe(sample(before, "aee_slack_posts_pending") + 1);
    expect(sample(after, "aee_slack_posts_failed_total")).toBe(sample(before, "aee_slack_posts_failed_total") + 2);
    expect(sample(after, "aee_trace_spans_dropped_total")).toBe(sample(before, "aee_trace_spans_dropped_total") + 2);
  });

  it("a scrape over 10,000 indexed runs runs the same D1 statements as over 10, within the contract's bounds", async () => {
    const counted = (): { db: ScrapeDb; statements: () => number } => {
      let statements = 0;
      return {
        db: {
          prepare: (q: string) => env.DB.prepare(q),
          batch: (s: D1PreparedStatement[]) => {
            statements += s.length;
            return env.DB.batch(s);
          },
        } as ScrapeDb,
        statements: () => statements,
      };
    };
    const prefix = `run_scrape${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`;
    const insert = (n: number, offset: number) =>
      env.DB.prepare(
        `WITH RECURSIVE k(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM k WHERE i < ?)
         INSERT INTO runs (run_id, channel_id, user_id, delivery_id, source, status, created_at, ended_at)
         SELECT ? || i, 'C-scrape', 'U', NULL, 'api', CASE WHEN i % 3 = 0 THEN 'running' ELSE 'completed' END,
                '2026-11-01T00:00:00.000Z', CASE WHEN i % 3 = 0 THEN NULL ELSE '2026-11-01T00:01:00.000Z' END FROM k`,
      )
        .bind(offset, offset + n - 1, prefix)
        .run();
    const pool = () => globalStoragePool(env.STORAGE_POOL).stats();
    try {
      await insert(10, 0);
      const small = counted();
      const ten = await readMetrics(small.db, pool);
      await insert(9_990, 10);
      const { results } = await env.DB.prepare(`SELECT COUNT(*) AS n FROM runs WHERE run_id LIKE ? || '%'`)
        .bind(prefix)
        .all<{ n: number }>();
      expect(results[0]?.n).toBe(10_000);
      const large = counted();
      const tenThousand = await readMetrics(large.db, pool);

      expect(large.statements()).toBe(small.statements());
      expect(tenThousand.d1Statements).toBe(large.statements());
      expect(large.statements()).toBeLessThanOrEqual(SCRAPE_MAX_STATEMENTS);
      expect(ten.d1RowsRead).toBeGreaterThan(0);
      expect(tenThousand.d1RowsRead).toBeLessThanOrEqual(ten.d1RowsRead);
      expect(tenThousand.d1RowsRead).toBeLessThanOrEqual(SCRAPE_MAX_ROWS_READ);
      // The counts still come out right: 3,334 of the 10,000 are running (i % 3 = 0).
      const running = (s: typeof ten) => s.counters.get("aee_runs")?.get("running") ?? 0;
      expect(running(tenThousand) - running(ten)).toBe(3_334 - 4);
      // And the endpoint reports the same two numbers.
      const scraped = await scrape();
      expect(sample(scraped, "aee_scrape_d1_statements")).toBe(large.statements());
      expect(sample(scraped, "aee_scrape_d1_rows_read")).toBeLessThanOrEqual(SCRAPE_MAX_ROWS_READ);
    } finally {
      await env.DB.prepare(`DELETE FROM runs WHERE run_id LIKE ? || '%'`).bind(prefix).run();
    }
  });
});
