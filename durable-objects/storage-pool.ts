// StoragePool: the semaphore Durable Object behind contract section 9. ONE
// global instance (STORAGE_POOL_NAME) holds POOL_CAPACITY_SLOTS slots; every
// mutation-outcome storage call (checkpoint, settlement, outcome read, final
// persistence) holds one while it runs (src/outcomes/storage-guard.ts).
//
// - acquire() fails AT ONCE when every slot is held (fail closed): no queue.
// - A slot is a lease in this object's SQLite storage, expiring
//   STORAGE_LEASE_MS after it was taken. release() frees it, idempotently.
// - A lease whose holder vanished is reclaimed by the alarm once it expired;
//   until reclaimed it counts as held, so an expired lease never frees a slot
//   by itself.
//
// Leases live in SQLite and are counted there on every call, so what the
// object answers is always what storage holds; the counters are loaded once,
// in blockConcurrencyWhile, and written through. Every method body runs
// without awaiting between its read and its write, so two acquires can never
// both take the 16th slot.
import { DurableObject } from "cloudflare:workers";
import { ulid } from "ulidx";
import { loadConfig } from "../src/config/config";
import type { Env } from "../src/config/env";
import { POOL_CAPACITY_SLOTS, type AcquireResult, type StoragePoolStats } from "../src/outcomes/storage-pool-rpc";

type Counter = "acquired_total" | "rejected_total" | "reclaimed_total";
const COUNTERS: readonly Counter[] = ["acquired_total", "rejected_total", "reclaimed_total"];

export class StoragePool extends DurableObject<Env> {
  #leaseMs!: number;
  readonly #counters: Record<Counter, number> = { acquired_total: 0, rejected_total: 0, reclaimed_total: 0 };
  /** The alarm time as last set by this instance (null: none armed). */
  #armedAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      const loaded = loadConfig(env);
      if (loaded.state === "bad_config") {
        // The Worker answers 503 before reaching the pool; this guards direct callers.
        throw new Error(`StoragePool cannot start: ${loaded.message}`);
      }
      this.#leaseMs = loaded.config.STORAGE_LEASE_MS;
      const sql = ctx.storage.sql;
      sql.exec(`CREATE TABLE IF NOT EXISTS leases (
        lease_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        acquired_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      )`);
      sql.exec(`CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)`);
      for (const row of sql.exec<{ name: string; value: number }>(`SELECT name, value FROM counters`)) {
        if ((COUNTERS as readonly string[]).includes(row.name)) this.#counters[row.name as Counter] = row.value;
      }
      this.#armedAt = await ctx.storage.getAlarm();
      // Leases left by an earlier instance still need their reclaim alarm.
      this.#armFor(this.#earliestExpiry());
    });
  }

  // ---- RPC -------------------------------------------------------------------

  /** Takes a slot for `holder` (a label for diagnostics), or fails at once when all are held. */
  acquire(holder: string): AcquireResult {
    if (this.#inUse() >= POOL_CAPACITY_SLOTS) {
      this.#bump("rejected_total", 1);
      return { ok: false };
    }
    const now = Date.now();
    const leaseId = `lease_${ulid()}`;
    const expiresAt = now + this.#leaseMs;
    this.ctx.storage.sql.exec(
      `INSERT INTO leases (lease_id, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)`,
      leaseId,
      holder,
      now,
      expiresAt,
    );
    this.#bump("acquired_total", 1);
    this.#armFor(expiresAt);
    return { ok: true, lease_id: leaseId };
  }

  /** Frees a slot. Idempotent: an unknown, already released or reclaimed lease changes nothing. */
  release(leaseId: string): { released: boolean } {
    const cursor = this.ctx.storage.sql.exec(`DELETE FROM leases WHERE lease_id = ?`, leaseId);
    return { released: cursor.rowsWritten > 0 };
  }

  stats(): StoragePoolStats {
    return { capacity: POOL_CAPACITY_SLOTS, in_use: this.#inUse(), ...this.#counters };
  }

  /** Reclaims every expired lease (its holder vanished), then re-arms for the next expiry. */
  override async alarm(): Promise<void> {
    this.#armedAt = null;
    const now = Date.now();
    const cursor = this.ctx.storage.sql.exec(`DELETE FROM leases WHERE expires_at <= ?`, now);
    if (cursor.rowsWritten > 0) this.#bump("reclaimed_total", cursor.rowsWritten);
    this.#armFor(this.#earliestExpiry());
  }

  // ---- internals -------------------------------------------------------------

  #inUse(): number {
    return this.ctx.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM leases`).one().n;
  }

  #earliestExpiry(): number | undefined {
    const row = this.ctx.storage.sql.exec<{ at: number | null }>(`SELECT MIN(expires_at) AS at FROM leases`).one();
    return row.at ?? undefined;
  }

  #bump(counter: Counter, by: number): void {
    this.#counters[counter] += by;
    this.ctx.storage.sql.exec(
      `INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
      counter,
      this.#counters[counter],
    );
  }

  /** Arms the alarm for `at` unless one is already armed no later. */
  #armFor(at: number | undefined): void {
    if (at === undefined) return;
    if (this.#armedAt !== null && this.#armedAt <= at) return;
    this.#armedAt = at;
    void this.ctx.storage.setAlarm(at);
  }
}
