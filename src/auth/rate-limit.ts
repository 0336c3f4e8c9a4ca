// Fixed-window counting for the rate limits of contract section 18: failed
// authentications per client address and triggers per principal. A window
// starts at its key's first hit and lasts `windowMs`; past `limit` hits in it,
// a hit is refused until the window ends (Retry-After: the seconds left). Pure
// over SqlLike, so the Durable Object that owns one key (rate-limiter.ts) is
// a thin shell and this is tested without it.
import type { SqlLike } from "../stream/event-log";
import type { SqlTable } from "../stream/sql-schema";

/** Contract section 18: past 10 failed authentications from one address in 60 s, further failures are 429. */
export const AUTH_FAILURE_LIMIT = 10;
export const RATE_WINDOW_MS = 60_000;

export type RateVerdict = { allowed: true; count: number } | { allowed: false; count: number; retry_after_seconds: number };

interface WindowRow extends Record<string, SqlStorageValue> {
  started_at: number;
  count: number;
}

export const RATE_WINDOW_TABLE: SqlTable = {
  name: "rate_window",
  ddl: [
    "CREATE TABLE IF NOT EXISTS rate_window (id INTEGER PRIMARY KEY CHECK (id = 1), started_at INTEGER NOT NULL, count INTEGER NOT NULL)",
  ],
};

export class FixedWindow {
  readonly #sql: SqlLike;

  constructor(sql: SqlLike) {
    this.#sql = sql;
  }

  /** Counts one hit at `now`; refused when it is past `limit` in the current window. */
  hit(limit: number, windowMs: number, now: number): RateVerdict {
    const row = this.#sql.exec<WindowRow>("SELECT started_at, count FROM rate_window WHERE id = 1").toArray()[0];
    if (row === undefined || now >= row.started_at + windowMs) {
      this.#sql.exec("INSERT OR REPLACE INTO rate_window (id, started_at, count) VALUES (1, ?, 1)", now);
      return limit >= 1 ? { allowed: true, count: 1 } : { allowed: false, count: 1, retry_after_seconds: Math.ceil(windowMs / 1_000) };
    }
    const count = row.count + 1;
    this.#sql.exec("UPDATE rate_window SET count = ? WHERE id = 1", count);
    if (count <= limit) return { allowed: true, count };
    return { allowed: false, count, retry_after_seconds: Math.max(1, Math.ceil((row.started_at + windowMs - now) / 1_000)) };
  }

  /** When the window ends (the object's alarm deletes the row then), or null when none is open. */
  endsAt(windowMs: number): number | null {
    const row = this.#sql.exec<WindowRow>("SELECT started_at, count FROM rate_window WHERE id = 1").toArray()[0];
    return row === undefined ? null : row.started_at + windowMs;
  }

  clear(): void {
    this.#sql.exec("DELETE FROM rate_window");
  }
}
