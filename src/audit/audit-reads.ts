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
  })
  .strict()
  .meta({ id: "AuditEntry" });

export const auditPageSchema = z
  .object({ entries: z.array(auditEntrySchema), next_cursor: nextCursor })
  .strict()
  .meta({ id: "AuditPage" });

/** An audit_log row: the entry's own fields, with SQL's null for an absent count and details as JSON text. */
type AuditRow = Record<string, unknown> & Omit<AuditEntry, "count" | "details"> & { count: number | null; details: string | null };

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
    items: rows.map((r) => ({
      id: r.id,
      at: r.at,
      principal: r.principal,
      action: r.action,
      target: r.target,
      result: r.result,
      ...(r.count !== null ? { count: r.count } : {}),
      ...(r.details !== null ? { details: JSON.parse(r.details) as Record<string, unknown> } : {}),
    })),
    next_cursor,
  };
}
