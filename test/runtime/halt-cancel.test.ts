// A halt engaged with `cancel_runs: true` (contract section 23): the runs the
// runs index lists as `running` in scope are cancelled by the halt's alarm
// (fired here with runDurableObjectAlarm), in batches of at most 50, each as
// the engaging principal and audited `run.cancel` (by the run); the halt carries
// `cancel: {requested, done, finished_at?}`. Real run objects and the real D1
// of miniflare; the batch test drives the job's step over 120 indexed rows.
import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newRunId } from "../../src/ids";
import { CANCEL_START, type CancelProgress, cancelStep, resumeCancelJobs } from "../../src/outcomes/halt-cancel-job";
import { engageHalt, getHalt, toHaltProjection } from "../../src/outcomes/halts";
import { api, apiAs, namedToken, runStub } from "./helpers";

const CREATE = "mcp__demo__create_dashboard";
/** Contract section 23: the job cancels in batches of at most 50. */
const BATCH_MAX = 50;

const canceller = (haltId: string) => env.HALT_CANCELLER.get(env.HALT_CANCELLER.idFromName(haltId));

async function json(res: Response): Promise<any> {
  return res.json();
}

/** A run waiting for an approval, triggered with `token`; its index row is flushed (the run's alarm). */
async function waitingRun(token: string): Promise<string> {
  const res = await apiAs(token, "/api/trigger", {
    method: "POST",
    body: JSON.stringify({
      message: "cancel me",
      channel_id: "C-halt-cancel",
      script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "hc-1", arguments: { title: "x" } }] }, { text: "Done." }],
    }),
  });
  expect(res.status, await res.clone().text()).toBe(202);
  const runId: string = (await json(res)).run_id;
  for (let i = 0; i < 100; i++) {
    await runDurableObjectAlarm(runStub(runId));
    const pending = (await json(await api(`/api/runs/${runId}`))).pending_approvals ?? [];
    const row = await env.DB.prepare(`SELECT status FROM runs WHERE run_id = ?`).bind(runId).first<{ status: string }>();
    if (row?.status === "running" && pending.length === 1) return runId;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`run ${runId} never waited indexed`);
}

/**
 * Fires the halt's alarm until its job says it finished (the alarm armed by
 * the 201 may also fire on its own meanwhile: then this waits for it), with a bound.
 */
async function jobFinished(haltId: string): Promise<any> {
  for (let i = 0; i < 100; i++) {
    await runDurableObjectAlarm(canceller(haltId));
    const halt = await json(await api(`/api/halts/${haltId}`));
    if (halt.cancel?.finished_at !== undefined) return halt;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the cancel job of ${haltId} did not finish`);
}

describe("POST /api/halts with cancel_runs", () => {
  it("cancels the principal's running runs as the engager (run.cancel), not others'; the halt shows the job", async () => {
    const target = await namedToken(["requester"], "hc");
    const mine = await waitingRun(target.token);
    const other = await waitingRun((await namedToken(["requester"], "hc-other")).token);

    const res = await api("/api/halts", {
      method: "POST",
      body: JSON.stringify({ scope: `principal:${target.principal}`, reason: "stop them", cancel_runs: true }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const engaged = await json(res);
    // From the 201 on, the halt carries its job (before the first batch: nothing requested or done yet).
    expect((await json(await api(`/api/halts/${engaged.halt_id}`))).cancel).toMatchObject({
      requested: expect.any(Number),
      done: expect.any(Number),
    });

    const halt = await jobFinished(engaged.halt_id);
    expect(halt.cancel).toMatchObject({ requested: 1, done: 1 });
    expect(typeof halt.cancel.finished_at).toBe("string");
    const listed = (await json(await api("/api/halts?status=active"))).halts.find((h: any) => h.halt_id === engaged.halt_id);
    expect(listed.cancel).toEqual(halt.cancel);

    // A cancelled run ends failed (contract section 6); the other still waits.
    expect((await json(await api(`/api/runs/${mine}`))).status).toBe("failed");
    expect((await json(await api(`/api/runs/${other}`))).status).toBe("running");
    // The run audits the accepted cancel (run.cancel) as the engager, through its index flush (its alarm).
    let audited: { principal: string; target: string }[] = [];
    for (let i = 0; i < 100 && audited.length === 0; i++) {
      await runDurableObjectAlarm(runStub(mine));
      audited = (
        await env.DB.prepare(`SELECT principal, target FROM audit_log WHERE action = 'run.cancel' AND target IN (?, ?)`)
          .bind(mine, other)
          .all<{ principal: string; target: string }>()
      ).results;
    }
    expect(audited).toEqual([{ principal: engaged.engaged_by, target: mine }]);
    // The job is done: another alarm changes nothing.
    await runDurableObjectAlarm(canceller(engaged.halt_id));
    expect((await json(await api(`/api/halts/${engaged.halt_id}`))).cancel).toEqual(halt.cancel);
    expect((await api(`/api/halts/${engaged.halt_id}`, { method: "DELETE" })).status).toBe(200);
  });

  it("is 400 invalid_scope for a server: or tool: scope, and a halt without it carries no cancel", async () => {
    for (const scope of ["server:demo", `tool:${CREATE}`]) {
      const res = await api("/api/halts", { method: "POST", body: JSON.stringify({ scope, reason: "r", cancel_runs: true }) });
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ error: "invalid_scope" });
    }
    const plain = await json(await api("/api/halts", { method: "POST", body: JSON.stringify({ scope: "server:demo", reason: "r" }) }));
    expect((await json(await api(`/api/halts/${plain.halt_id}`))).cancel).toBeUndefined();
    expect((await api(`/api/halts/${plain.halt_id}`, { method: "DELETE" })).status).toBe(200);
  });
});

describe("the cancel job's batches", () => {
  it("120 running runs in scope: batches of at most 50, a failed batch repeated without counting twice", async () => {
    const principal = `token:hc-batch-${crypto.randomUUID().slice(0, 8)}`;
    const runIds: string[] = [];
    const inserts = [];
    for (let i = 0; i < 120; i++) {
      const runId = newRunId();
      runIds.push(runId);
      inserts.push(
        env.DB.prepare(
          `INSERT INTO runs (run_id, channel_id, user_id, source, status, created_at, requested_by) VALUES (?, 'C-batch', 'u', 'api', 'running', ?, ?)`,
        ).bind(runId, new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), i % 2 === 0 ? principal : "token:someone-else"),
      );
      // Half are the principal's as on_behalf_of.
      if (i % 2 === 1) inserts.push(env.DB.prepare(`UPDATE runs SET on_behalf_of = ? WHERE run_id = ?`).bind(principal, runId));
    }
    // And one running run of another principal, out of scope.
    const outside = newRunId();
    inserts.push(
      env.DB.prepare(
        `INSERT INTO runs (run_id, channel_id, user_id, source, status, created_at, requested_by) VALUES (?, 'C-batch', 'u', 'api', 'running', ?, 'token:someone-else')`,
      ).bind(outside, new Date().toISOString()),
    );
    await env.DB.batch(inserts);
    const halt = await engageHalt(env.DB, {
      scope: { kind: "principal", value: principal },
      scopePerson: null,
      reason: "batch test",
      engagedBy: "token:root",
      required: 1,
      cancelRuns: true,
    });

    // Never armed (as if the 201's arming was lost): the Cron Trigger arms it.
    const armed: string[] = [];
    expect(await resumeCancelJobs(env.DB, async (id) => void armed.push(id))).toContain(halt.halt_id);
    expect(armed).toContain(halt.halt_id);
    const cancelled: string[] = [];
    const batches: number[] = [];
    let failAt: number | null = 60;
    // As the halt's object keeps it: stored only after a step succeeded.
    let progress: CancelProgress = CANCEL_START;
    for (let step = 0; step < 10; step++) {
      const before = cancelled.length;
      let result: Awaited<ReturnType<typeof cancelStep>>;
      try {
        result = await cancelStep(env.DB, halt.halt_id, progress, async (runId, as) => {
          expect(as).toBe("token:root");
          if (failAt !== null && cancelled.length === failAt) {
            failAt = null;
            throw new Error("the run did not answer");
          }
          cancelled.push(runId);
        });
      } catch {
        batches.push(cancelled.length - before);
        continue;
      }
      batches.push(cancelled.length - before);
      if (result.kind === "nothing") throw new Error("the job stopped early");
      progress = result.progress;
      const row = toHaltProjection((await getHalt(env.DB, halt.halt_id))!);
      expect(row.cancel?.requested).toBe(120);
      if (result.kind === "finished") break;
    }
    for (const n of batches) expect(n).toBeLessThanOrEqual(BATCH_MAX);
    // Every run in scope was cancelled (those of the failed batch once more), the outside one never.
    expect(new Set(cancelled)).toEqual(new Set(runIds));
    expect(cancelled).not.toContain(outside);
    const final = toHaltProjection((await getHalt(env.DB, halt.halt_id))!);
    expect(final.cancel).toMatchObject({ requested: 120, done: 120 });
    expect(final.cancel?.finished_at).toBeDefined();
    // The Cron Trigger's safety net armed it while unfinished, and no longer once finished.
    expect(await resumeCancelJobs(env.DB, async () => undefined)).not.toContain(halt.halt_id);
    // Finished: a further step does nothing.
    expect(await cancelStep(env.DB, halt.halt_id, progress, async () => expect.unreachable())).toEqual({ kind: "nothing" });
  });
});
