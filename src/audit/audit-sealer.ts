// Sealing the audit log into one hash chain (contract section 25): unsealed
// entries, in order of arrival (D1 rowid, not `at`), each get the next `seq`,
// the previous `hash` as `prev_hash`, and their own `hash`, one D1 batch per
// page of at most 500. Only the sealer Durable Object calls this, one call
// at a time; D1's triggers (migrations/0029_audit_chain.sql) refuse any seal
// that is not the head's next link, so even a second caller could not fork
// the chain. A coalesced refusal is sealed only once its minute is closed.
import { detailsHash, entryHash, GENESIS_PREV_HASH } from "../client/audit-chain";
import { REFUSAL_COALESCE_MS } from "./audit-log";

/** Contract section 25: bulk work reads keyset pages of at most 500 rows. */
export const AUDIT_PAGE_ROWS = 500;
/** Pages one call seals at most (a backlog is sealed over several alarms, each within its CPU budget). */
const MAX_PAGES_PER_CALL = 20;
/** A coalesced refusal whose queue never closed it is sealed this long after its minute anyway. */
const UNCLOSED_REFUSAL_GRACE_MS = 5 * 60_000;

export interface ChainHead {
  seq: number;
  hash: string;
}

interface UnsealedRow {
  row: number;
  id: string;
  at: string;
  principal: string;
  action: string;
  target: string;
  result: string;
  count: number | null;
  details: string | null;
  details_hash: string | null;
  via: string;
  client_ip: string | null;
  policy_version: number | null;
  policy_hash: string | null;
  coalesce_key: string | null;
  closed: number;
}

export interface SealResult {
  sealed: number;
  head: ChainHead;
  /** Entries left unsealed: coalesced refusals whose minute is still open. */
  waiting: number;
  /** When the earliest waiting refusal's minute closes (epoch ms). */
  nextAt?: number;
  /** More unsealed entries than one call seals: call again at once. */
  more?: true;
}

export async function chainHead(db: D1Database): Promise<ChainHead> {
  const row = await db.prepare("SELECT seq, hash FROM audit_chain WHERE id = 1").first<ChainHead>();
  return row ?? { seq: 0, hash: GENESIS_PREV_HASH };
}

/** Seals every sealable entry now, page by page; throws if D1 refuses (the caller retries). */
export async function sealPending(db: D1Database, now: number): Promise<SealResult> {
  let head = await chainHead(db);
  let afterRow = 0;
  let sealed = 0;
  let waiting = 0;
  let nextAt: number | undefined;
  let more = false;
  for (let pages = 0; ; pages++) {
    if (pages === MAX_PAGES_PER_CALL) {
      more = true;
      break;
    }
    const { results } = await db
      .prepare(
        `SELECT rowid AS row, id, at, principal, action, target, result, count, details, details_hash, via, client_ip,
                policy_version, policy_hash, coalesce_key, closed
         FROM audit_log WHERE seq IS NULL AND rowid > ? ORDER BY rowid LIMIT ?`,
      )
      .bind(afterRow, AUDIT_PAGE_ROWS)
      .all<UnsealedRow>();
    if (results.length === 0) break;
    afterRow = results[results.length - 1]!.row;
    const statements: D1PreparedStatement[] = [];
    let next = head;
    for (const row of results) {
      if (row.coalesce_key !== null && row.closed !== 1) {
        const minuteEnd = (Math.floor(Date.parse(row.at) / REFUSAL_COALESCE_MS) + 1) * REFUSAL_COALESCE_MS;
        if (now < minuteEnd + UNCLOSED_REFUSAL_GRACE_MS) {
          waiting += 1;
          nextAt = Math.min(nextAt ?? Number.POSITIVE_INFINITY, minuteEnd);
          continue;
        }
      }
      const details = row.details === null ? undefined : (JSON.parse(row.details) as Record<string, unknown>);
      const dHash = row.details_hash ?? (details === undefined ? null : await detailsHash(details));
      const seq = next.seq + 1;
      const hash = await entryHash({
        id: row.id,
        at: row.at,
        principal: row.principal,
        action: row.action,
        target: row.target,
        result: row.result,
        count: row.count,
        details_hash: dHash,
        via: row.via,
        client_ip: row.client_ip,
        policy_version: row.policy_version,
        policy_hash: row.policy_hash,
        seq,
        prev_hash: next.hash,
      });
      statements.push(
        db
          .prepare("UPDATE audit_log SET details_hash = ?, seq = ?, prev_hash = ?, hash = ? WHERE id = ? AND seq IS NULL")
          .bind(dHash, seq, next.hash, hash, row.id),
      );
      next = { seq, hash };
    }
    if (statements.length > 0) {
      statements.push(db.prepare("UPDATE audit_chain SET sealed_at = ? WHERE id = 1").bind(new Date(now).toISOString()));
      await db.batch(statements);
      sealed += statements.length - 1;
      head = next;
    }
    if (results.length < AUDIT_PAGE_ROWS) break;
  }
  return { sealed, head, waiting, ...(nextAt !== undefined ? { nextAt } : {}), ...(more ? { more: true as const } : {}) };
}
