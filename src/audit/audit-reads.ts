// GET /api/audit (contract section 18): the audit log newest first, filtered
// by principal or action, with the listing rules of section 15 (limit 1..200,
// a keyset cursor on (at, id)). The query and page schemas feed the route's
// validation and the OpenAPI document alike.
import { z } from "zod";
import { type ListingDb, type Page, page } from "../listings/listing-reads";
import { cursorParam, limitParam, nextCursor } from "../wire/listing-schemas";
import { AUDIT_ACTIONS, type AuditEntry } from "./audit-log";

const actionSchema = z.enum(AUDIT_ACTIONS);

export const auditQuerySchema = z
  .object({
    principal: z.string().min(1).max(400).optional().meta({ description: "Only this principal (e.g. token:ci)." }),
    action: actionSchema.optional(),
    limit: limitParam,
    cursor: cursorParam,
  })
  .strict();
export type AuditQuery = z.output<typeof auditQuerySchema>;

export const auditEntrySchema = z
  .object({
    id: z.string(),
    at: z.iso.datetime(),
    principal: z.string(),
    action: actionSchema,
    target: z.string(),
    result: z.enum(["ok", "refused"]),
    count: z.number().int().min(1).optional(),
    details: z.record(z.string(), z.unknown()).optional(),
    // Contract section 25: where it came from, and once sealed its place in the chain.
    via: z.enum(["api", "console", "slack", "engine"]).optional(),
    client_ip: z.string().optional(),
    policy_version: z.number().int().optional(),
    policy_hash: z.string().optional(),
    details_hash: z.string().optional(),
    seq: z.number().int().min(1).optional(),
    prev_hash: z.string().optional(),
    hash: z.string().optional(),
  })
  .strict()
  .meta({ id: "AuditEntry" });

export const auditPageSchema = z
  .object({
    entries: z.array(auditEntrySchema),
    next_cursor: nextCursor,
    sealed_through_seq: z.number().int().min(0).meta({ description: "Every entry up to this seq is sealed (contract section 25)." }),
  })
  .strict()
  .meta({ id: "AuditPage" });

/** An audit_log row (also the export's, src/audit/audit-export.ts): the entry's own fields, with SQL's null for what is absent and details as JSON text. */
export type AuditRow = Record<string, unknown> &
  Pick<AuditEntry, "id" | "at" | "principal" | "action" | "target" | "result"> & {
    count: number | null;
    details: string | null;
    via: NonNullable<AuditEntry["via"]>;
  } & { [K in "client_ip" | "policy_hash" | "details_hash" | "prev_hash" | "hash"]: string | null } & {
    [K in "policy_version" | "seq"]: number | null;
  };

/** The sealed head, for the listing's sealed_through_seq. */
export async function sealedThrough(db: ListingDb): Promise<{ sealed_through_seq: number }> {
  const { results } = await db.prepare("SELECT seq FROM audit_chain WHERE id = 1").all<{ seq: number }>();
  return { sealed_through_seq: results[0]?.seq ?? 0 };
}

/** Members that are present only when the row has them. */
function present<K extends string>(row: AuditRow, keys: readonly K[]): Partial<Record<K, unknown>> {
  const out: Partial<Record<K, unknown>> = {};
  for (const key of keys) if (row[key] !== null && row[key] !== undefined) out[key] = row[key];
  return out;
}

const KEY = ["at", "id"];

export async function listAudit(db: ListingDb, query: AuditQuery): Promise<Page<AuditEntry>> {
  const filters = [];
  if (query.principal !== undefined) filters.push({ sql: "principal = ?", value: query.principal });
  if (query.action !== undefined) filters.push({ sql: "action = ?", value: query.action });
  const { rows, next_cursor } = await page<AuditRow>(
    db,
    "audit_log",
    { columns: KEY, keyOf: (row) => KEY.map((c) => String(row[c])) },
    filters,
    query.limit,
    query.cursor,
  );
  return {
    items: rows.map(entryOfRow),
    next_cursor,
  };
}

/**
 * An entry as GET /api/audit lists it and the export writes it (contract sections 18 and 25): the
 * row's fields in one order, absent ones left out, details parsed. The one place a row becomes an entry.
 */
export function entryOfRow(r: AuditRow): AuditEntry {
  return {
    id: r.id,
    at: r.at,
    principal: r.principal,
    action: r.action,
    target: r.target,
    result: r.result,
    ...(r.count !== null ? { count: r.count } : {}),
    ...(r.details !== null ? { details: JSON.parse(r.details) as Record<string, unknown> } : {}),
    ...(present(r, ["details_hash"] as const) as Partial<AuditEntry>),
    via: r.via,
    ...(present(r, ["client_ip", "policy_version", "policy_hash", "seq", "prev_hash", "hash"] as const) as Partial<AuditEntry>),
  };
}
