// The StoragePool semaphore Durable Object (contract section 9): 16 slots,
// fail closed at once when full, idempotent release, leases reclaimed by the
// alarm (fired with runDurableObjectAlarm after moving a lease's expiry into
// the past), counters that survive eviction, and GET /api/storage-pool.
// Most tests use their own instance so they cannot disturb each other; the
// route test uses the global one and only looks at differences.
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { StoragePool } from "../../durable-objects/storage-pool";
import { globalStoragePool, POOL_CAPACITY_SLOTS } from "../../src/outcomes/storage-pool-rpc";
import { DEFAULT_STORAGE_LEASE_MS } from "../../src/config/config";
import { api } from "./helpers";

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

function expireLease(pool: DurableObjectStub<StoragePool>, leaseId: string) {
  return runInDurableObject(pool, (_i, state) => {
    state.storage.sql.exec(`UPDATE leases SET expires_at = ? WHERE lease_id = ?`, Date.now() - 1, leaseId);
  });
}

describe("storage pool", () => {
  it("has 16 slots: 16 acquires succeed, the 17th fails and is counted as rejected", async () => {
    expect(POOL_CAPACITY_SLOTS).toBe(16);
    const pool = freshPool();
    const leases = await fill(pool, 16);
    expect(new Set(leases).size).toBe(16);
    expect(await pool.acquire("one too many")).toEqual({ ok: false });
    expect(await pool.stats()).toEqual({ capacity: 16, in_use: 16, acquired_total: 16, rejected_total: 1, reclaimed_total: 0 });
  });

  it("fails at once instead of queueing: 20 concurrent acquires all answer, exactly 16 with a slot", async () => {
    const pool = freshPool();
    // A queued acquire would only answer after a release, which never comes: Promise.all would hang.
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => pool.acquire(`burst-${i}`)));
    expect(results.filter((r) => r.ok)).toHaveLength(16);
    expect(results.filter((r) => !r.ok)).toHaveLength(4);
    expect(await pool.stats()).toMatchObject({ in_use: 16, acquired_total: 16, rejected_total: 4 });
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

  it("persists each lease with expires_at = acquired_at + STORAGE_LEASE_MS and arms the alarm", async () => {
    const pool = freshPool();
    const [lease] = await fill(pool, 1);
    const [row] = await leaseRows(pool);
    expect(row).toMatchObject({ lease_id: lease, holder: "holder-0" });
    expect(row!.expires_at - row!.acquired_at).toBe(DEFAULT_STORAGE_LEASE_MS);
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
    await pool.release(leases[0]!);
    const before = await pool.stats();
    await evictDurableObject(pool);
    expect(await pool.stats()).toEqual(before);
    expect(before).toEqual({ capacity: 16, in_use: 15, acquired_total: 16, rejected_total: 1, reclaimed_total: 0 });
  });

  it("GET /api/storage-pool answers the global pool's slots and counters", async () => {
    const global = globalStoragePool(env.STORAGE_POOL);
    const read = async () => {
      const res = await api("/api/storage-pool");
      expect(res.status).toBe(200);
      return res.json<any>();
    };
    const before = await read();
    expect(Object.keys(before)).toEqual(["capacity", "in_use", "acquired_total", "rejected_total", "reclaimed_total"]);
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
});
