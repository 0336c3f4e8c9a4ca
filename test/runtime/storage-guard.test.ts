// The storage guard (contract sections 8 and 9) with the real StoragePool
// stub and a D1 seam that holds writes: one bound for the wait in the pool's
// line and the storage call together, the caller's time left passed to the
// pool, the slot held until the work really settles (late cleanup) and then
// handed to the next waiter, the release off the caller's path, fail closed
// when no slot frees in time or the pool is unreachable, pool saturation
// with more holders than slots, and the slot-less bounded read.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { StoragePool } from "../../durable-objects/storage-pool";
import {
  getOutcome,
  insertIntent,
  markDispatchedUnlessPrior,
  settle,
  type OutcomeDb,
  type OutcomeStatement,
} from "../../src/outcomes/mutation-outcomes";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";
import { boundedStorage, guardedStorage, type SlotPool } from "../../src/outcomes/storage-guard";

/** Short bound for the tests; production is STORAGE_WAIT_MS (5000). */
const WAIT_MS = 50;

function freshPool(): DurableObjectStub<StoragePool> {
  return env.STORAGE_POOL.get(env.STORAGE_POOL.idFromName(`guard-test-${crypto.randomUUID()}`));
}

interface Gate {
  promise: Promise<void>;
  open(): void;
}
function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * Wraps the real D1 binding. Statements whose SQL matches `pattern` are sent
 * to D1 at once, but their answer is held until `answer` opens: the write
 * has landed, its acknowledgement has not arrived (a slow network or backend).
 */
function holdingDb(pattern: RegExp, landed: Gate, answer: Gate): OutcomeDb {
  const wrap = (sql: string, stmt: D1PreparedStatement): OutcomeStatement => ({
    bind: (...values: unknown[]) => wrap(sql, stmt.bind(...values)),
    async first<T>() {
      const result = await stmt.first<T>();
      if (pattern.test(sql)) {
        landed.open();
        await answer.promise;
      }
      return result;
    },
    async all<T>() {
      const result = await stmt.all<T>();
      if (pattern.test(sql)) {
        landed.open();
        await answer.promise;
      }
      return result;
    },
  });
  return { prepare: (sql: string) => wrap(sql, env.DB.prepare(sql)) };
}

/** A D1 seam whose every statement fails, like a backend error. */
const failingDb: OutcomeDb = {
  prepare: () => {
    const stmt: OutcomeStatement = {
      bind: () => stmt,
      first: () => Promise.reject(new Error("D1_ERROR: backend unavailable")),
      all: () => Promise.reject(new Error("D1_ERROR: backend unavailable")),
    };
    return stmt;
  },
};

async function newIntent() {
  const { row } = await insertIntent(env.DB, {
    runId: newRunId(),
    channelId: "C-guard",
    deliveryId: null,
    toolCallId: newToolCallId(),
    approvalId: newApprovalId(),
    toolName: "mcp__last9__create_dashboard",
    // A digest of its own: the checkpoint's cross-run check finds no identical row.
    argumentsDigest: `sha256:${crypto.randomUUID().replaceAll("-", "").repeat(2)}`,
    approvedBy: "U-guard",
    approvedAt: new Date().toISOString(),
  });
  return row;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Releases are off the caller's path: they land shortly after the guard answered. */
async function inUseBecomes(pool: DurableObjectStub<StoragePool>, n: number): Promise<void> {
  await expect.poll(async () => (await pool.stats()).in_use, { timeout: 5_000, interval: 5 }).toBe(n);
}

async function fillPool(pool: DurableObjectStub<StoragePool>, n: number): Promise<string[]> {
  const leases: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await pool.acquire(`fill-${i}`);
    if (!r.ok) throw new Error(`filler ${i} got no slot`);
    leases.push(r.lease_id);
  }
  return leases;
}

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await condition()) return;
    await sleep(5);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("storage guard", () => {
  it("runs the work holding a slot and gives the slot back when it returns", async () => {
    const pool = freshPool();
    const row = await newIntent();
    let inUseDuring = -1;
    const result = await guardedStorage(pool, 1_000, "test:checkpoint", async () => {
      inUseDuring = (await pool.stats()).in_use;
      return markDispatchedUnlessPrior(env.DB, row.mutation_id);
    });
    expect(result).toMatchObject({ status: "ok", value: { ok: true, row: { dispatched: 1 } } });
    expect(inUseDuring).toBe(1);
    await inUseBecomes(pool, 0);
    expect(await pool.stats()).toMatchObject({ acquired_total: 1, rejected_total: 0, waited_total: 0 });
  });

  it("times out at its bound, keeps the slot through late cleanup, then releases it", async () => {
    const pool = freshPool();
    const row = await newIntent();
    const landed = gate();
    const answer = gate();
    const db = holdingDb(/SET dispatched = 1/, landed, answer);

    const started = Date.now();
    const result = await guardedStorage(pool, WAIT_MS, "test:checkpoint", () => markDispatchedUnlessPrior(db, row.mutation_id));
    const waited = Date.now() - started;
    expect(result.status).toBe("timeout");
    expect(waited).toBeGreaterThanOrEqual(WAIT_MS - 5);
    expect(waited).toBeLessThan(2_000);

    // The caller stopped waiting (and must not dispatch), but the storage call is still running: its slot is held.
    await landed.promise;
    expect(await pool.stats()).toMatchObject({ in_use: 1 });
    expect((await getOutcome(env.DB, row.mutation_id))?.dispatched).toBe(1);
    await sleep(WAIT_MS);
    expect((await pool.stats()).in_use).toBe(1);

    answer.open();
    if (result.status !== "timeout") throw new Error("unreachable");
    expect(await result.late).toMatchObject({ ok: true, row: { dispatched: 1 } });
    // `late` settles only after the slot went back.
    expect(await pool.stats()).toMatchObject({ in_use: 0, acquired_total: 1 });

    // The intent was abandoned before dispatch: it settles not_executed, though the checkpoint landed.
    const settled = await guardedStorage(pool, 1_000, "test:settle", () =>
      settle(env.DB, row.mutation_id, { state: "not_executed", reason: "storage_unavailable", settledAt: new Date().toISOString() }),
    );
    expect(settled).toMatchObject({ status: "ok", value: { ok: true, row: { state: "not_executed", dispatched: 1 } } });
    await inUseBecomes(pool, 0);
  });

  it("waits in line while every slot is held, then fails closed within its bound without running the work", async () => {
    const pool = freshPool();
    await fillPool(pool, 16);
    let ran = false;
    const started = Date.now();
    const result = await guardedStorage(pool, WAIT_MS, "test:settle", async () => {
      ran = true;
      return 1;
    });
    const waited = Date.now() - started;
    expect(result).toEqual({ status: "unavailable" });
    expect(ran).toBe(false);
    // It waited (not refused at once), and no longer than its bound allows.
    expect(waited).toBeGreaterThanOrEqual(WAIT_MS - 5);
    expect(waited).toBeLessThan(2_000);
    // The pool's own timer for this waiter runs out at about the moment the guard's did (same duration, passed
    // as time left): it leaves the line and counts as refused once that timer fired, never granted a slot.
    await expect
      .poll(() => pool.stats(), { timeout: 2_000, interval: 10 })
      .toMatchObject({ in_use: 16, waiting: 0, waited_total: 1, rejected_total: 1, acquired_total: 16 });
  });

  it("passes the pool the time it has left of its bound, never more", async () => {
    const asked: number[] = [];
    const recording: SlotPool = {
      acquire: async (_holder, waitMs) => {
        asked.push(waitMs);
        return { ok: true, lease_id: "lease_recorded" };
      },
      release: async () => undefined,
    };
    expect(await guardedStorage(recording, 800, "test", async () => "done")).toEqual({ status: "ok", value: "done" });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toBeGreaterThan(0);
    expect(asked[0]).toBeLessThanOrEqual(800);
  });

  it("counts the wait in line and the storage call against ONE bound", async () => {
    const pool = freshPool();
    const BOUND_MS = 200;
    const LINE_MS = 150;
    const leases = await fillPool(pool, 16);
    const hold = gate();
    let workStartedAfter = -1;
    const started = Date.now();
    const call = guardedStorage(pool, BOUND_MS, "test:slow", async () => {
      workStartedAfter = Date.now() - started;
      await hold.promise;
      return "too late";
    });
    await sleep(LINE_MS);
    await pool.release(leases[0]!); // the waiter gets this slot; its work then hangs
    const result = await call;
    const answeredAfter = Date.now() - started;
    expect(result.status).toBe("timeout");
    expect(workStartedAfter).toBeGreaterThanOrEqual(LINE_MS - 5);
    // A fresh bound for the work would answer no sooner than LINE_MS + BOUND_MS.
    expect(answeredAfter).toBeLessThan(workStartedAfter + BOUND_MS);
    hold.open();
    if (result.status === "timeout") expect(await result.late).toBe("too late");
    await inUseBecomes(pool, 15);
  });

  it("sends the release off the caller's path: the caller goes on while the release is still out", async () => {
    const released: string[] = [];
    const neverAnswers: SlotPool = {
      acquire: async () => ({ ok: true, lease_id: "lease_slow_release" }),
      release: (id) => {
        released.push(id);
        return new Promise(() => undefined); // the release is sent, its answer never comes
      },
    };
    const kept: Promise<unknown>[] = [];
    const result = await guardedStorage(neverAnswers, 1_000, "test", async () => "written", { waitUntil: (p) => kept.push(p) });
    expect(result).toEqual({ status: "ok", value: "written" });
    expect(released).toEqual(["lease_slow_release"]);
    // Still kept alive for the Worker (its answer outstanding), not awaited by the caller.
    expect(kept).toHaveLength(1);
    const outcome = await Promise.race([kept[0]!.then(() => "settled"), sleep(30).then(() => "pending")]);
    expect(outcome).toBe("pending");
  });

  it("hands a slot freed by late cleanup to the next waiter in line", async () => {
    const pool = freshPool();
    await fillPool(pool, 15);
    const hold = gate();
    const order: string[] = [];
    const stuck = await guardedStorage(pool, WAIT_MS, "test:stuck", async () => {
      await hold.promise;
      order.push("stuck work finished");
      return "stuck";
    });
    expect(stuck.status).toBe("timeout");
    expect(await pool.stats()).toMatchObject({ in_use: 16, waiting: 0 });
    // Late cleanup: the timed-out work still holds its slot, so the next caller waits in line.
    const next = guardedStorage(pool, 5_000, "test:next", async () => {
      order.push("next work ran");
      return "next";
    });
    await until(async () => (await pool.stats()).waiting === 1, "the next caller in line");
    expect(order).toEqual([]);
    hold.open();
    expect(await next).toEqual({ status: "ok", value: "next" });
    expect(order).toEqual(["stuck work finished", "next work ran"]);
    await inUseBecomes(pool, 15);
    expect(await pool.stats()).toMatchObject({ acquired_total: 17, waited_total: 1, rejected_total: 0 });
  });

  it("rethrows a storage error within the bound, after giving the slot back", async () => {
    const pool = freshPool();
    const row = await newIntent();
    await expect(guardedStorage(pool, 1_000, "test:read", () => getOutcome(failingDb, row.mutation_id))).rejects.toThrow(
      /backend unavailable/,
    );
    await inUseBecomes(pool, 0);
    expect(await pool.stats()).toMatchObject({ acquired_total: 1 });
  });

  it("rejects `late` with an error that comes after the bound, and still releases the slot", async () => {
    const pool = freshPool();
    const failLater = gate();
    const result = await guardedStorage(pool, WAIT_MS, "test:settle", async () => {
      await failLater.promise;
      throw new Error("D1_ERROR: write failed late");
    });
    expect(result.status).toBe("timeout");
    expect((await pool.stats()).in_use).toBe(1);
    failLater.open();
    if (result.status !== "timeout") throw new Error("unreachable");
    await expect(result.late).rejects.toThrow(/write failed late/);
    expect((await pool.stats()).in_use).toBe(0);
  });

  it("hands every outliving promise to waitUntil", async () => {
    const pool = freshPool();
    const kept: Promise<unknown>[] = [];
    const hold = gate();
    const result = await guardedStorage(pool, WAIT_MS, "test:read", () => hold.promise.then(() => "late value"), {
      waitUntil: (p) => kept.push(p),
    });
    expect(result.status).toBe("timeout");
    expect(kept).toHaveLength(1);
    hold.open();
    await Promise.all(kept);
    expect((await pool.stats()).in_use).toBe(0);
  });

  it("treats an unreachable or stuck pool as unavailable, bounded, and returns a slot granted too late", async () => {
    let ran = 0;
    const work = async () => ++ran;
    const broken: SlotPool = {
      acquire: () => Promise.reject(new Error("Durable Object reset because its code was updated")),
      release: async () => undefined,
    };
    expect(await guardedStorage(broken, 1_000, "test", work)).toEqual({ status: "unavailable" });

    const grant = gate();
    const released: string[] = [];
    const stuck: SlotPool = {
      acquire: async () => {
        await grant.promise;
        return { ok: true, lease_id: "lease_late" };
      },
      release: async (id) => void released.push(id),
    };
    const kept: Promise<unknown>[] = [];
    const started = Date.now();
    expect(await guardedStorage(stuck, WAIT_MS, "test", work, { waitUntil: (p) => kept.push(p) })).toEqual({ status: "unavailable" });
    expect(Date.now() - started).toBeLessThan(2_000);
    grant.open();
    await Promise.all(kept);
    expect(released).toEqual(["lease_late"]);
    expect(ran).toBe(0);
  });

  it("under saturation (20 slow holders, 16 slots) runs 16 works, queues 4, then runs them all: never more than 16", async () => {
    const pool = freshPool();
    const hold = gate();
    let running = 0;
    let maxRunning = 0;
    let maxInUse = 0;
    const work = async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await hold.promise;
      running--;
      return "written";
    };
    const settledCalls: string[] = [];
    const calls = Array.from({ length: 20 }, (_, i) =>
      guardedStorage(pool, 5_000, `test:slow-${i}`, work).then((r) => {
        settledCalls.push(r.status);
        return r;
      }),
    );
    // The 4 without a slot wait in line (holding nothing, running nothing) while the 16 run.
    await until(async () => {
      const stats = await pool.stats();
      maxInUse = Math.max(maxInUse, stats.in_use);
      return running === 16 && stats.waiting === 4;
    }, "16 running works and 4 waiters");
    expect(settledCalls).toEqual([]);
    const during = await pool.stats();
    maxInUse = Math.max(maxInUse, during.in_use);
    expect(during).toMatchObject({ in_use: 16, waiting: 4, acquired_total: 16, waited_total: 4, rejected_total: 0 });

    hold.open();
    const results = await Promise.all(calls);
    expect(results.filter((r) => r.status === "ok")).toHaveLength(20);
    expect(maxRunning).toBe(16);
    expect(maxInUse).toBe(16);
    await inUseBecomes(pool, 0);
    expect(await pool.stats()).toMatchObject({ waiting: 0, acquired_total: 20, waited_total: 4, rejected_total: 0 });
  });

  it("keeps slots held by timed-out work: further callers wait their bound and are refused until it settles", async () => {
    const pool = freshPool();
    const hold = gate();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => guardedStorage(pool, WAIT_MS, `test:stuck-${i}`, () => hold.promise.then(() => i))),
    );
    // Every call came back within its bound: 16 timed out holding a slot, 4 waited in line and got none.
    expect(results.filter((r) => r.status === "timeout")).toHaveLength(16);
    expect(results.filter((r) => r.status === "unavailable")).toHaveLength(4);
    // The pool's own timer for each waiter started a hop after the guard's bound: it leaves the line just after.
    await until(async () => (await pool.stats()).waiting === 0, "the 4 waiters to leave the line");
    expect(await pool.stats()).toMatchObject({ in_use: 16, waiting: 0, waited_total: 4, rejected_total: 4 });
    let ran = false;
    expect(await guardedStorage(pool, WAIT_MS, "test:next", async () => (ran = true))).toEqual({ status: "unavailable" });
    expect(ran).toBe(false);
    await until(async () => (await pool.stats()).waiting === 0, "the next caller to leave the line");

    hold.open();
    await Promise.all(results.map((r) => (r.status === "timeout" ? r.late : undefined)));
    expect(await pool.stats()).toMatchObject({ in_use: 0, acquired_total: 16, rejected_total: 5 });
    expect(await guardedStorage(pool, 1_000, "test:after", async () => "free again")).toEqual({ status: "ok", value: "free again" });
  });
});

describe("bounded storage (the read routes: no slot)", () => {
  it("answers the work's value, rethrows its error, and times out at its bound with the late work", async () => {
    expect(await boundedStorage(1_000, async () => "row")).toEqual({ status: "ok", value: "row" });
    await expect(boundedStorage(1_000, () => getOutcome(failingDb, "mut_x"))).rejects.toThrow(/backend unavailable/);

    const hold = gate();
    const kept: Promise<unknown>[] = [];
    const started = Date.now();
    const result = await boundedStorage(WAIT_MS, () => hold.promise.then(() => "late row"), { waitUntil: (p) => kept.push(p) });
    expect(result.status).toBe("timeout");
    expect(Date.now() - started).toBeGreaterThanOrEqual(WAIT_MS - 5);
    expect(kept).toHaveLength(1);
    hold.open();
    if (result.status === "timeout") expect(await result.late).toBe("late row");
  });
});
