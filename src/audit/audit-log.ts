// The audit log's entries and their D1 statements (contract section 18,
// migrations/0010_audit_log.sql). Callers put the statement in the same D1
// batch as the change it records; a refusal is an upsert that counts the
// refusals of one principal, action and target within one minute. Details
// are redacted before they are stored. Entries are written unsealed; the
// sealer (src/audit/audit-sealer.ts) chains them afterwards (section 25).
import { ulid } from "ulidx";
import type { AuditAction, AuditEntry } from "../client/types";
import { redactSecrets } from "../execution/redaction";

// The entry's wire shape is declared once, in the client's types (the client ships on its own; test/unit/wire-types.test.ts
// pins it to the listing's zod schema in ./audit-reads.ts).
export { AUDIT_ACTIONS, type AuditAction, type AuditEntry } from "../client/types";

/** Refusals of one principal, action and target are one entry per minute. */
export const REFUSAL_COALESCE_MS = 60_000;

export function newAuditId(): string {
  return `aud_${ulid()}`;
}

function detailsJson(details: Record<string, unknown> | undefined): string | null {
  return details === undefined ? null : JSON.stringify(redactSecrets(details));
}

export interface AuditInsertOptions {
  /** Insert only when the batch's previous statement changed a row (e.g. a token insert that did not conflict). */
  onlyIfPreviousChanged?: boolean;
}

/** The part of D1 a statement is prepared on (D1Database, or the run index's IndexDb). */
export interface AuditDb<S> {
  prepare(query: string): { bind(...values: unknown[]): S };
}

/** The INSERT of one entry (a replay with the same id writes nothing). */
export function auditStatement<S>(db: AuditDb<S>, entry: AuditEntry, options: AuditInsertOptions = {}): S {
  const values = [
    entry.id,
    entry.at,
    entry.principal,
    entry.action,
    entry.target,
    entry.result,
    entry.count ?? null,
    detailsJson(entry.details),
    entry.via ?? "api",
    entry.client_ip ?? null,
    entry.policy_version ?? null,
    entry.policy_hash ?? null,
  ];
  if (options.onlyIfPreviousChanged) {
    return db
      .prepare(
        `INSERT INTO audit_log (id, at, principal, action, target, result, count, details, via, client_ip, policy_version, policy_hash)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12 WHERE changes() > 0 ON CONFLICT (id) DO NOTHING`,
      )
      .bind(...values);
  }
  return db
    .prepare(
      `INSERT INTO audit_log (id, at, principal, action, target, result, count, details, via, client_ip, policy_version, policy_hash)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT (id) DO NOTHING`,
    )
    .bind(...values);
}

export interface Refusal {
  principal: string;
  action: AuditAction;
  target: string;
  at: string;
  details?: Record<string, unknown>;
  /** How many refusals this one stands for (a queue may carry several). */
  count?: number;
}
