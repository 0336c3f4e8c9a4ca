// StoragePool: the semaphore Durable Object behind contract section 9. ONE
// global instance (STORAGE_POOL_NAME) holds POOL_CAPACITY_SLOTS slots; every
// mutation-outcome storage call of the execution path (intent, checkpoint,
// settlement, outcome read, final persistence) and reconcile holds one while
// it runs (src/outcomes/storage-guard.ts). The read routes take none.
//
// - A slot is a lease in this object's SQLite storage, expiring
//   STORAGE_LEASE_MS after it was taken. release() frees it, idempotently.
// - When every slot is held, acquire(holder, waitMs) waits in a first-come
//   line for one to free, for at most `waitMs`: the time the CALLER has left
//   of its own guard (a duration, never a clock time: cancellation does not
//   cross Durable Object RPC, so the pool cannot see a caller that went away,
//   only the time it said it would wait). A waiter whose time passed leaves
//   the line, is refused and is never handed a slot; a slot granted just
//   before that, which reaches the caller after it gave up, is handed straight
//   back by the guard. The line holds at most STORAGE_POOL_MAX_WAITERS
//   callers; one more is refused at once. A waiter holds nothing and starts
//   nothing.
// - A freed slot (release, or the alarm reclaiming a lease whose holder
//   vanished) goes straight to the head of the line, in the same synchronous
//   step that freed it, so a newcomer can never overtake a waiter and there
//   are never more than POOL_CAPACITY_SLOTS holders.
// - A lease whose holder vanished is reclaimed by the alarm once it expired;
//   until reclaimed it counts as held, so an expired lease never frees a slot
//   by itself.
//
// Leases live in SQLite and are counted there on every call, so what the
// object answers is always what storage holds; the counters are loaded once,
// in blockConcurrencyWhile, and written through. The line lives in memory:
// its waiters are open RPC calls, which keep the object alive, and a restart
// ends those calls with an error that their callers treat as "unavailable".
// No method awaits between its read and its write (acquire is not async: it
// answers at once or hands back a promise created in the same step), so two
// acquires can never both take the 16th slot.
import { DurableObject } from "cloudflare:workers";
import { DEADLINES_TABLE } from "../src/schedule/deadlines";
import { createTables, type SqlTable } from "../src/stream/sql-schema";
import { ulid } from "ulidx";
import { loadConfig } from "../src/config/config";
import type { Env } from "../src/config/env";
import { AlarmSchedule } from "../src/schedule/alarm-schedule";
import { POOL_CAPACITY_SLOTS, type AcquireResult, type StoragePoolRpc, type StoragePoolStats } from "../src/outcomes/storage-pool-rpc";

/** setTimeout's largest delay (a signed 32-bit count of ms); a longer one would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

type Counter = "acquired_total" | "waited_total" | "rejected_total" | "reclaimed_total";
const COUNTERS: readonly Counter[] = ["acquired_total", "waited_total", "rejected_total", "reclaimed_total"];

/** One caller in line: answered exactly once, by a grant or by its timer. */
interface Waiter {
  holder: string;
  answer: (result: AcquireResult) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** The pool's SQLite schema, in order: its leases, its counters, its alarm's deadlines. */
const STORAGE_POOL_TABLES: readonly SqlTable[] = [
  {
    name: "leases",
    ddl: [
      `CREATE TABLE IF NOT EXISTS leases (
        lease_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        acquired_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      )`,
    ],
  },
  { name: "counters", ddl: [`CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)`] },
  DEADLINES_TABLE,
];

export class StoragePool extends DurableObject<Env> implements StoragePoolRpc {
  #leaseMs!: number;
  #maxWaiters!: number;
  readonly #counters: Record<Counter, number> = { acquired_total: 0, waited_total: 0, rejected_total: 0, reclaimed_total: 0 };
  /** First come, first served; at most #maxWaiters long. */
  readonly #line: Waiter[] = [];
  /** The reclaim alarm: armed for the earliest lease expiry, only ever moved earlier (no named deadlines). */
  #schedule!: AlarmSchedule<never>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      const loaded = loadConfig(env);
      if (loaded.state === "bad_config") {
        // The Worker answers 503 before reaching the pool; this guards direct callers.
        throw new Error(`StoragePool cannot start: ${loaded.message}`);
      }
      this.#leaseMs = loaded.config.STORAGE_LEASE_MS;
      this.#maxWaiters = loaded.config.STORAGE_POOL_MAX_WAITERS;
      const sql = ctx.storage.sql;
      createTables(sql, STORAGE_POOL_TABLES);
      for (const row of sql.exec<{ name: string; value: number }>(`SELECT name, value FROM counters`)) {
        if ((COUNTERS as readonly string[]).includes(row.name)) this.#counters[row.name as Counter] = row.value;
      }
      this.#schedule = new AlarmSchedule<never>(sql, ctx.storage, await ctx.storage.getAlarm(), () => this.#earliestExpiry());
      // Leases left by an earlier instance still need their reclaim alarm.
      this.#schedule.rearm();
    });
  }

  // ---- RPC -------------------------------------------------------------------

  /** Takes a slot for `holder` (a label for diagnostics) at once, or is refused at once: no waiting. */
  acquire(holder: string): AcquireResult;
  /**
   * Takes a slot for `holder`, waiting in line at most `waitMs` (the time the
   * caller has left) when every slot is held. Refused at once when the line
   * is full or `waitMs` is absent or not positive; refused when `waitMs`
   * passes first. (Over RPC every call sees this signature.)
   */
  acquire(holder: string, waitMs?: number): AcquireResult | Promise<AcquireResult>;
  acquire(holder: string, waitMs = 0): AcquireResult | Promise<AcquireResult> {
    // Only an empty line lets a caller straight in: a newcomer never overtakes a waiter.
    if (this.#line.length === 0 && this.#inUse() < POOL_CAPACITY_SLOTS) return this.#take(holder);
    if (!(waitMs > 0) || this.#line.length >= this.#maxWaiters) {
      this.#bump("rejected_total", 1);
      return { ok: false };
    }
    this.#bump("waited_total", 1);
    return new Promise<AcquireResult>((answer) => {
      const waiter: Waiter = {
        holder,
        answer,
        timer: setTimeout(
          () => {
            // Its time passed: out of the line, refused, never handed a slot after this.
            const at = this.#line.indexOf(waiter);
            if (at === -1) return; // granted in the meantime (the grant cleared this timer)
            this.#line.splice(at, 1);
            this.#bump("rejected_total", 1);
            answer({ ok: false });
          },
          Math.min(waitMs, MAX_TIMER_MS),
        ),
      };
      this.#line.push(waiter);
    });
  }

  /** Frees a slot and hands it to the head of the line. Idempotent: an unknown, released or reclaimed lease changes nothing. */
  release(leaseId: string): { released: boolean } {
    const cursor = this.ctx.storage.sql.exec(`DELETE FROM leases WHERE lease_id = ?`, leaseId);
    const released = cursor.rowsWritten > 0;
    if (released) this.#grantWaiting();
    return { released };
  }

  stats(): StoragePoolStats {
    const c = this.#counters;
    return {
      capacity: POOL_CAPACITY_SLOTS,
      in_use: this.#inUse(),
      waiting: this.#line.length,
      acquired_total: c.acquired_total,
      waited_total: c.waited_total,
      rejected_total: c.rejected_total,
      reclaimed_total: c.reclaimed_total,
    };
  }

  /** Reclaims every expired lease (its holder vanished), hands the freed slots to the line, then re-arms for the next expiry. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    this.#schedule.fired(now);
    const cursor = this.ctx.storage.sql.exec(`DELETE FROM leases WHERE expires_at <= ?`, now);
    if (cursor.rowsWritten > 0) {
      this.#bump("reclaimed_total", cursor.rowsWritten);
      this.#grantWaiting();
    }
    this.#schedule.rearm();
  }

  // ---- internals -------------------------------------------------------------

  /** Writes a new lease for `holder`; the caller checked that a slot is free. */
  #take(holder: string): AcquireResult {
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
    this.#schedule.armAt(expiresAt);
    return { ok: true, lease_id: leaseId };
  }

  /** Free slots go to the waiters in line order, in this same synchronous step. */
  #grantWaiting(): void {
    while (this.#line.length > 0 && this.#inUse() < POOL_CAPACITY_SLOTS) {
      const waiter = this.#line.shift()!;
      clearTimeout(waiter.timer);
      waiter.answer(this.#take(waiter.holder));
    }
  }

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
}
