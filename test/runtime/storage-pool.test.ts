// The StoragePool semaphore Durable Object (contract section 9): 16 slots, a
// first-come waiting line bounded by each caller's own time and by
// STORAGE_POOL_MAX_WAITERS, idempotent release, leases reclaimed by the alarm
// (fired with runDurableObjectAlarm after moving a lease's expiry into the
// past) and handed to the head of the line, counters that survive eviction,
// and GET /api/storage-pool.
// Most tests use their own instance so they cannot disturb each other; the
// route test uses the global one and only looks at differences.
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { StoragePool } from "../../durable-objects/storage-pool";
import { parseConfig } from "../../src/config/config";
import { type AcquireResult, globalStoragePool, POOL_CAPACITY_SLOTS } from "../../src/outcomes/storage-pool-rpc";
import { api } from "./helpers";

/** The contract's literal numbers (sections 8, 9, 13), not the code's constants. */
const CONTRACT = { capacity: 16, leaseMs: 120_000, storageWaitMs: 5_000, maxWaiters: 256 } as const;
/** Long enough that no waiter's own time passes during a test unless the test means it to. */
const PATIENT_MS = 10_000;

let instances = 0;
function freshPool(): DurableObjectStub<StoragePool> {
  return env.STORAGE_POOL.get(env.STORAGE_POOL.idFromName(`pool-test-${++instances}-${crypto.randomUUID()}`));
}

async function fill(pool: DurableObjectStub<StoragePool>, n: number): Promise<string[]> {
  const leases: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await pool.acquire(`holder-${i}`);
    if (!r.ok) throw new Error(`acquire ${i} failed`);
    leases.push(r.lease_id);
  }
  return leases;
}

function leaseRows(pool: DurableObjectStub<StoragePool>) {
  return runInDurableObject(pool, (_i, state) =>
    state.storage.sql
      .exec<{ lease_id: string; holder: string; acquired_at: number; expires_at: number }>(`SELECT * FROM leases ORDER BY lease_id`)
      .toArray(),
  );
}

const holders = async (pool: DurableObjectStub<StoragePool>) => (await leaseRows(pool)).map((r) => r.holder).sort();

function expireLease(pool: DurableObjectStub<StoragePool>, leaseId: string) {
  return runInDurableObject(pool, (_i, state) => {
    state.storage.sql.exec(`UPDATE leases SET expires_at = ? WHERE lease_id = ?`, Date.now() - 1, leaseId);
  });
}

/** Waits (polling the pool) until `waiting` callers are in line. */
async function lineIs(pool: DurableObjectStub<StoragePool>, waiting: number): Promise<void> {
  await expect.poll(async () => (await pool.stats()).waiting, { timeout: 5_000, interval: 5 }).toBe(waiting);
}

/** An acquire whose answer is recorded when it arrives, without anyone waiting for it. */
function tracked(pool: DurableObjectStub<StoragePool>, holder: string, waitMs: number) {
  const t: { answer?: AcquireResult; done: Promise<AcquireResult> } = {
    done: Promise.resolve(pool.acquire(holder, waitMs)).then((a) => (t.answer = a)),
  };
  return t;
}

describe("storage pool", () => {
  it("has the contract's defaults: 16 slots, 120000 ms leases, 5000 ms storage wait, 256 waiters", async () => {
    expect(POOL_CAPACITY_SLOTS).toBe(CONTRACT.capacity);
    const parsed = parseConfig({ API_TOKEN: "t".repeat(32) });
    if (parsed.state !== "ready") throw new Error(parsed.state);
    expect(parsed.config).toMatchObject({
      STORAGE_LEASE_MS: CONTRACT.leaseMs,
      STORAGE_WAIT_MS: CONTRACT.storageWaitMs,
      STORAGE_POOL_MAX_WAITERS: CONTRACT.maxWaiters,
    });
    expect(parseConfig({ API_TOKEN: "t".repeat(32), STORAGE_POOL_MAX_WAITERS: "12" })).toMatchObject({
      config: { STORAGE_POOL_MAX_WAITERS: 12 },
    });
    expect(parseConfig({ API_TOKEN: "t".repeat(32), STORAGE_POOL_MAX_WAITERS: "-1" })).toMatchObject({
      state: "bad_config",
      details: [{ path: "STORAGE_POOL_MAX_WAITERS" }],
    });
  });

  it("has 16 slots: 16 acquires succeed; the 17th, with no time to wait, is refused at once and counted", async () => {
    const pool = freshPool();
    const leases = await fill(pool, 16);
    expect(new Set(leases).size).toBe(16);
    expect(await pool.acquire("one too many")).toEqual({ ok: false });
    expect(await pool.acquire("no time left", 0)).toEqual({ ok: false });
    expect(await pool.stats()).toStrictEqual({
      capacity: 16,
      in_use: 16,
      waiting: 0,
      acquired_total: 16,
      waited_total: 0,
      rejected_total: 2,
      reclaimed_total: 0,
    });
  });

  it("serves the line first come, first served: each freed slot goes to the oldest waiter", async () => {
    const pool = freshPool();
    const leases = await fill(pool, 16);
    // One after another: each is in line before the next one asks.
    const waiters: { name: string; t: ReturnType<typeof tracked> }[] = [];
    for (const name of ["first", "second", "third"]) {
      waiters.push({ name, t: tracked(pool, name, PATIENT_MS) });
      await lineIs(pool, waiters.length);
    }
    expect(await pool.stats()).toMatchObject({ in_use: 16, waiting: 3, waited_total: 3 });

    const granted: string[] = [];
    for (const w of waiters) void w.t.done.then(() => granted.push(w.name));
    for (let i = 0; i < 3; i++) {
      await pool.release(leases[i]!);
      await expect.poll(() => granted.length, { timeout: 5_000, interval: 5 }).toBe(i + 1);
      // The freed slot went straight to a waiter: the pool stays full, never over.
      expect(await pool.stats()).toMatchObject({ in_use: 16, waiting: 2 - i });
    }
    expect(granted).toEqual(["first", "second", "third"]);
    expect(waiters.every((w) => w.t.answer?.ok === true)).toBe(true);
    expect(await holders(pool)).toEqual(expect.arrayContaining(["first", "second", "third"]));
    expect(await pool.stats()).toMatchObject({ acquired_total: 19, waited_total: 3, rejected_total: 0 });
  });

  it("refuses a waiter whose time passed, and never hands it a slot afterwards", async () => {
    const pool = freshPool();
    const leases = await fill(pool, 16);
    const hasty = tracked(pool, "hasty", 40);
    await lineIs(pool, 1);
    const patient = tracked(pool, "patient", PATIENT_MS);
    await lineIs(pool, 2);
    expect(await hasty.done).toEqual({ ok: false });
    expect(await pool.stats()).toMatchObject({ waiting: 1, rejected_total: 1, waited_total: 2 });

    await pool.release(leases[0]!);
    expect(await patient.done).toMatchObject({ ok: true });
    expect(await holders(pool)).not.toContain("hasty");
    // One more release: nobody waits any more, the slot is simply free.
    await pool.release(leases[1]!);
    expect(await pool.stats()).toMatchObject({ in_use: 15, waiting: 0, acquired_total: 17, rejected_total: 1 });
    expect(await holders(pool)).not.toContain("hasty");
  });

  it("lets a waiter whose caller went away leave the line on its own time; its slot is never taken", async () => {
    const pool = freshPool();
    const leases = await fill(pool, 16);
    // The caller sends its acquire and stops listening (a cancelled request): nothing reads the answer.
    void Promise.resolve(pool.acquire("gone", 40)).catch(() => undefined);
    await lineIs(pool, 1);
    // The pool cannot see the caller leave; only the time it said it would wait takes it out of the line.
    await lineIs(pool, 0);
    await pool.release(leases[0]!);
    expect(await pool.stats()).toMatchObject({ in_use: 15, waiting: 0, acquired_total: 16, waited_total: 1, rejected_total: 1 });
    expect(await holders(pool)).not.toContain("gone");
  });

  it("bounds the line at STORAGE_POOL_MAX_WAITERS (256): the 257th waiter is refused at once", async () => {
    const pool = freshPool();
    await fill(pool, 16);
    // Long enough to still be in line when the 257th comes, short enough to end the test soon after.
    const LINE_MS = 1_500;
    const line = Array.from({ length: CONTRACT.maxWaiters }, (_, i) => tracked(pool, `waiter-${i}`, LINE_MS));
    await lineIs(pool, CONTRACT.maxWaiters);
    const started = Date.now();
    expect(await pool.acquire("257th", PATIENT_MS)).toEqual({ ok: false });
    const refusedAfter = Date.now() - started;
    // Refused at once: the line was still full, nobody in it had been answered yet.
    expect(line.every((t) => t.answer === undefined)).toBe(true);
    expect(await pool.stats()).toMatchObject({ waiting: CONTRACT.maxWaiters, waited_total: CONTRACT.maxWaiters, rejected_total: 1 });
    expect(refusedAfter).toBeLessThan(LINE_MS);

    // Then every waiter's own time passes: all refused, no slot handed out.
    const answers = await Promise.all(line.map((t) => t.done));
    expect(answers.every((a) => !a.ok)).toBe(true);
    expect(await pool.stats()).toMatchObject({ in_use: 16, waiting: 0, acquired_total: 16, rejected_total: CONTRACT.maxWaiters + 1 });
  });

  it("serves 60 concurrent waiting acquires through 16 slots: all succeed, in_use never above 16", async () => {
    const pool = freshPool();
    let held = 0;
    let maxHeld = 0;
    const samples: number[] = [];
    // Each holder keeps its slot briefly (a storage call), then releases it; the others wait their turn.
    const results = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const r = await pool.acquire(`burst-${i}`, PATIENT_MS);
        if (!r.ok) return r;
        held++;
        maxHeld = Math.max(maxHeld, held);
        samples.push((await pool.stats()).in_use);
        await new Promise((resolve) => setTimeout(resolve, 5));
        held--;
        await pool.release(r.lease_id);
        return r;
      }),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(60);
    expect(Math.max(...samples)).toBeLessThanOrEqual(16);
    expect(maxHeld).toBeLessThanOrEqual(16);
    const stats = await pool.stats();
    expect(stats).toMatchObject({ in_use: 0, waiting: 0, acquired_total: 60, rejected_total: 0 });
    expect(stats.waited_total).toBeGreaterThan(0);
  });

  it("releases idempotently, and a released slot can be taken again", async () => {
    const pool = freshPool();
    const leases = await fill(pool, 16);
    expect(await pool.release(leases[3]!)).toEqual({ released: true });
    expect(await pool.release(leases[3]!)).toEqual({ released: false });
    expect(await pool.release("lease_never_issued")).toEqual({ released: false });
    expect((await pool.stats()).in_use).toBe(15);
    expect((await pool.acquire("next")).ok).toBe(true);
    expect(await pool.acquire("after that")).toEqual({ ok: false });
  });

  it("persists each lease with expires_at = acquired_at + 120000 ms and arms the alarm", async () => {
    const pool = freshPool();
    const [lease] = await fill(pool, 1);
    const [row] = await leaseRows(pool);
    expect(row).toMatchObject({ lease_id: lease, holder: "holder-0" });
    expect(row!.expires_at - row!.acquired_at).toBe(CONTRACT.leaseMs);
    const alarm = await runInDurableObject(pool, (_i, state) => state.storage.getAlarm());
    expect(alarm).toBe(row!.expires_at);
  });

  it("counts an expired lease as held until the alarm reclaims it", async () => {
    const pool = freshPool();
    const leases = await fill(pool, 16);
    await expireLease(pool, leases[0]!);
    // Expired but not reclaimed: still held, the pool is still full.
    expect(await pool.acquire("too early")).toEqual({ ok: false });
    expect((await pool.stats()).in_use).toBe(16);

    expect(await runDurableObjectAlarm(pool)).toBe(true);
    expect(await pool.stats()).toMatchObject({ in_use: 15, reclaimed_total: 1 });
    expect((await leaseRows(pool)).map((r) => r.lease_id)).not.toContain(leases[0]);
    // The holder coming back late changes nothing.
    expect(await pool.release(leases[0]!)).toEqual({ released: false });
    expect((await pool.acquire("now there is room")).ok).toBe(true);
  });

  it("hands a reclaimed slot to the head of the line while others wait", async () => {
    const pool = freshPool();
    const leases = await fill(pool, 16);
    const head = tracked(pool, "head", PATIENT_MS);
    await lineIs(pool, 1);
    const next = tracked(pool, "next", PATIENT_MS);
    await lineIs(pool, 2);
    await expireLease(pool, leases[5]!);
    expect(await runDurableObjectAlarm(pool)).toBe(true);
    expect(await head.done).toMatchObject({ ok: true });
    expect(next.answer).toBeUndefined();
    expect(await pool.stats()).toMatchObject({ in_use: 16, waiting: 1, reclaimed_total: 1, acquired_total: 17 });
    expect(await holders(pool)).toContain("head");
    expect(await holders(pool)).not.toContain("next");
    // The next freed slot goes to the next in line.
    await pool.release(leases[0]!);
    expect(await next.done).toMatchObject({ ok: true });
    expect(await pool.stats()).toMatchObject({ in_use: 16, waiting: 0 });
  });

  it("reclaims only expired leases and re-arms the alarm for the next expiry", async () => {
    const pool = freshPool();
    const [a, b, c] = await fill(pool, 3);
    await expireLease(pool, a!);
    await expireLease(pool, b!);
    expect(await runDurableObjectAlarm(pool)).toBe(true);
    expect(await pool.stats()).toMatchObject({ in_use: 1, reclaimed_total: 2 });
    const rows = await leaseRows(pool);
    expect(rows.map((r) => r.lease_id)).toEqual([c]);
    expect(await runInDurableObject(pool, (_i, state) => state.storage.getAlarm())).toBe(rows[0]!.expires_at);
    // Nothing expired now: the alarm reclaims nothing.
    expect(await runDurableObjectAlarm(pool)).toBe(true);
    expect(await pool.stats()).toMatchObject({ in_use: 1, reclaimed_total: 2 });
  });

  it("keeps leases and counters across an eviction (state reloaded in blockConcurrencyWhile)", async () => {
    const pool = freshPool();
    const leases = await fill(pool, 16);
    await pool.acquire("rejected");
    expect(await pool.acquire("waited, then refused", 20)).toEqual({ ok: false });
    await pool.release(leases[0]!);
    const before = await pool.stats();
    await evictDurableObject(pool);
    expect(await pool.stats()).toEqual(before);
    expect(before).toStrictEqual({
      capacity: 16,
      in_use: 15,
      waiting: 0,
      acquired_total: 16,
      waited_total: 1,
      rejected_total: 2,
      reclaimed_total: 0,
    });
  });

  it("GET /api/storage-pool answers the global pool's slots, line and counters", async () => {
    const global = globalStoragePool(env.STORAGE_POOL);
    const read = async () => {
      const res = await api("/api/storage-pool");
      expect(res.status).toBe(200);
      return res.json<any>();
    };
    const before = await read();
    expect(Object.keys(before)).toEqual([
      "capacity",
      "in_use",
      "waiting",
      "acquired_total",
      "waited_total",
      "rejected_total",
      "reclaimed_total",
    ]);
    expect(before.capacity).toBe(16);
    const r = await global.acquire("route-test");
    expect(r.ok).toBe(true);
    const during = await read();
    expect(during.in_use).toBe(before.in_use + 1);
    expect(during.acquired_total).toBe(before.acquired_total + 1);
    if (r.ok) await global.release(r.lease_id);
    expect((await read()).in_use).toBe(before.in_use);
    // Like every /api route, it needs the token.
    expect((await api("/api/storage-pool", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
  });

  it("GET /api/storage-pool shows the waiting line of a full global pool", async () => {
    const global = globalStoragePool(env.STORAGE_POOL);
    const before = await global.stats();
    const leases: string[] = [];
    for (;;) {
      const r = await global.acquire("route-test:fill");
      if (!r.ok) break;
      leases.push(r.lease_id);
    }
    try {
      const waiter = Promise.resolve(global.acquire("route-test:waiter", PATIENT_MS));
      await expect.poll(async () => (await (await api("/api/storage-pool")).json<any>()).waiting, { timeout: 5_000, interval: 5 }).toBe(1);
      const shown = await (await api("/api/storage-pool")).json<any>();
      expect(shown).toMatchObject({ in_use: 16, waiting: 1, waited_total: before.waited_total + 1 });
      await global.release(leases.pop()!);
      const granted = await waiter;
      expect(granted.ok).toBe(true);
      if (granted.ok) leases.push(granted.lease_id);
    } finally {
      for (const id of leases) await global.release(id);
    }
    expect(await global.stats()).toMatchObject({ in_use: before.in_use, waiting: 0 });
  });
});
