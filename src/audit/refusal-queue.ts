// The durable queue of the Worker's refusals (contract section 18): every 403
// is counted here, in a Durable Object's SQLite, before it is answered, then
// written to D1's audit log from the object's alarm. One row per principal,
// action, target and minute holds that minute's whole count; D1 is given the
// count itself (not an increment), so a flush that is repeated after a crash
// writes the same number again, and a row is dropped only once its minute is
// over and D1 has its final count. Pure over SqlLike, tested without the object.
import type { SqlLike } from "../stream/event-log";
import { type AuditAction, type AuditDb, newAuditId, REFUSAL_COALESCE_MS, type Refusal } from "./audit-log";
import { redactSecrets } from "../execution/redaction";
import type { SqlTable } from "../stream/sql-schema";

interface QueueRow extends Record<string, SqlStorageValue> {
  key: string;
  principal: string;
  action: string;
  target: string;
  minute: number;
  first_at: string;
  details: string | null;
  count: number;
  flushed: number;
}

export interface QueueFlush {
  written: number;
  /** Rows still kept: their minute is not over yet, or D1 failed. */
  remaining: number;
  error?: string;
}

export const REFUSALS_TABLE: SqlTable = {
  name: "refusals",
  ddl: [
    `CREATE TABLE IF NOT EXISTS refusals (
         key TEXT PRIMARY KEY, principal TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL,
         minute INTEGER NOT NULL, first_at TEXT NOT NULL, details TEXT, count INTEGER NOT NULL, flushed INTEGER NOT NULL)`,
  ],
};

export class RefusalQueue {
  readonly #sql: SqlLike;

  constructor(sql: SqlLike) {
    this.#sql = sql;
  }

  /** Counts one refusal in its minute's row. */
  enqueue(refusal: Refusal): void {
    const minute = Math.floor(Date.parse(refusal.at) / REFUSAL_COALESCE_MS);
    const key = coalesceKey(refusal.principal, refusal.action, refusal.target, minute);
    const details = refusal.details === undefined ? null : JSON.stringify(redactSecrets(refusal.details));
    this.#sql.exec(
      `INSERT INTO refusals (key, principal, action, target, minute, first_at, details, count, flushed)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)
       ON CONFLICT (key) DO UPDATE SET count = count + excluded.count`,
      key,
      refusal.principal,
      refusal.action,
      refusal.target,
      minute,
      refusal.at,
      details,
      refusal.count ?? 1,
    );
  }

  get pending(): number {
    return this.#sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM refusals").toArray()[0]?.n ?? 0;
  }

  /**
   * Writes every row whose count D1 does not have yet, and once more each row
   * whose minute is over (marked `closed`: its count is final, so the sealer
   * may chain it, contract section 25); drops rows once closed in D1. A
   * sealed entry is never changed.
   */
  async flush(db: AuditDb<{ run(): Promise<unknown> }>, now: number): Promise<QueueFlush> {
    const currentMinute = Math.floor(now / REFUSAL_COALESCE_MS);
    const rows = this.#sql
      .exec<QueueRow>("SELECT * FROM refusals WHERE count > flushed OR minute < ? ORDER BY key", currentMinute)
      .toArray();
    let written = 0;
    for (const row of rows) {
      const closed = row.minute < currentMinute ? 1 : 0;
      try {
        await db
          .prepare(
            `INSERT INTO audit_log (id, at, principal, action, target, result, count, details, coalesce_key, closed)
             VALUES (?1, ?2, ?3, ?4, ?5, 'refused', ?6, ?7, ?8, ?9)
             ON CONFLICT (coalesce_key) DO UPDATE SET count = excluded.count, closed = excluded.closed WHERE audit_log.seq IS NULL`,
          )
          .bind(newAuditId(), row.first_at, row.principal, row.action as AuditAction, row.target, row.count, row.details, row.key, closed)
          .run();
      } catch (err) {
        return { written, remaining: this.pending, error: err instanceof Error ? err.message : String(err) };
      }
      if (closed === 1) this.#sql.exec("DELETE FROM refusals WHERE key = ?", row.key);
      else this.#sql.exec("UPDATE refusals SET flushed = ? WHERE key = ?", row.count, row.key);
      written += 1;
    }
    return { written, remaining: this.pending };
  }
}

/** The audit_log's coalesce_key of a refusal: the same for every refusal of one principal, action, target and minute. */
function coalesceKey(principal: string, action: string, target: string, minute: number): string {
  return JSON.stringify([principal, action, target, minute]);
}
