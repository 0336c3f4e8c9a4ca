// RateLimiter: one object per rate-limited key (contract section 18), named
// `auth-failures:<client address>` or `triggers:<principal>`, so each count is
// exact: a Durable Object runs one call at a time and the count lives in its
// SQLite (src/auth/rate-limit.ts). The alarm drops the window once it ends,
// so an idle key keeps no storage.
import { DurableObject } from "cloudflare:workers";
import { FixedWindow, RATE_WINDOW_TABLE, type RateVerdict } from "../src/auth/rate-limit";
import { createTables, type SqlTable } from "../src/stream/sql-schema";
import type { Env } from "../src/config/env";

/** The object's SQLite schema: its one window. */
const RATE_LIMITER_TABLES: readonly SqlTable[] = [RATE_WINDOW_TABLE];

export class RateLimiter extends DurableObject<Env> {
  readonly #window: FixedWindow;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createTables(ctx.storage.sql, RATE_LIMITER_TABLES);
    this.#window = new FixedWindow(ctx.storage.sql);
  }

  async hit(limit: number, windowMs: number): Promise<RateVerdict> {
    const verdict = this.#window.hit(limit, windowMs, Date.now());
    const endsAt = this.#window.endsAt(windowMs);
    if (endsAt !== null && (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(endsAt);
    return verdict;
  }

  override async alarm(): Promise<void> {
    this.#window.clear();
  }
}
