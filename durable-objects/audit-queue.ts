// AuditQueue: the durable queue of the Worker's refusals (contract section
// 18), one object per principal (AUDIT_QUEUE.idFromName(principal)). A thin
// shell: enqueue() counts the refusal in SQLite before the Worker answers its
// 403, and the alarm writes the counts to D1 (src/audit/refusal-queue.ts),
// again until every row is written and its minute is over.
import { DurableObject } from "cloudflare:workers";
import type { Refusal } from "../src/audit/audit-log";
import { REFUSAL_COALESCE_MS } from "../src/audit/audit-log";
import { REFUSALS_TABLE, RefusalQueue } from "../src/audit/refusal-queue";
import { createTables, type SqlTable } from "../src/stream/sql-schema";
import type { Env } from "../src/config/env";
import { wakeSealer } from "../src/audit/wake-sealer";

/** The object's SQLite schema: the refusals' rows. */
const AUDIT_QUEUE_TABLES: readonly SqlTable[] = [REFUSALS_TABLE];

/** After a failed write to D1, try again this much later. */
const RETRY_AFTER_FAILURE_MS = 5_000;

export class AuditQueue extends DurableObject<Env> {
  readonly #queue: RefusalQueue;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createTables(ctx.storage.sql, AUDIT_QUEUE_TABLES);
    this.#queue = new RefusalQueue(ctx.storage.sql);
  }

  async enqueue(refusal: Refusal): Promise<void> {
    this.#queue.enqueue(refusal);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const now = Date.now();
    const result = await this.#queue.flush(this.env.DB, now);
    // Written (or closed) entries are chained by the sealer (contract section 25).
    if (result.written > 0) await wakeSealer(this.env);
    if (result.remaining === 0) return;
    // Rows stay while their minute lasts (more refusals may join them) or while D1 fails.
    const next =
      result.error !== undefined ? now + RETRY_AFTER_FAILURE_MS : (Math.floor(now / REFUSAL_COALESCE_MS) + 1) * REFUSAL_COALESCE_MS;
    await this.ctx.storage.setAlarm(next);
  }
}
