// Named API tokens (contract section 18): POST /api/tokens makes one and shows
// its value once; GET lists them without values; DELETE revokes one and every
// console session it opened, in one D1 batch. Names are never reused, revoked
// ones included (409 name_taken). Admin only (the route table says so).
import { z } from "zod";
import { rolesSchema } from "../../auth/roles";
import {
  getToken,
  insertTokenStatement,
  listTokens,
  newTokenValue,
  revokeTokenStatements,
  TOKEN_NAME_PATTERN,
  type TokenRecord,
} from "../../auth/token-store";
import { redactText } from "../../execution/redaction";
import { apiError, jsonResponse } from "../api-error";
import { readJsonBody } from "../request-body";

const DAY_MS = 86_400_000;
const DEFAULT_TOKEN_TTL_DAYS = 90;
const MAX_TOKEN_TTL_DAYS = 3_650;

export const tokenCreateSchema = z
  .object({
    name: z
      .string()
      .regex(TOKEN_NAME_PATTERN, "lower-case letters, digits and -, starting with a letter or digit, at most 63 characters")
      .refine((n) => n !== "root", "root is API_TOKEN's principal (token:root)"),
    roles: rolesSchema,
    owner: z
      .string()
      .max(320)
      .regex(/^(access:[^\s@]+@[^\s@]+|slack:[A-Z0-9]+:[UW][A-Z0-9]+)$/, "an access:<email> or slack:<team>:<user> principal id")
      .optional(),
    ttl_days: z.number().int().min(1).max(MAX_TOKEN_TTL_DAYS).default(DEFAULT_TOKEN_TTL_DAYS),
  })
  .strict();

/** An owner as the audit log shows it (its details go through redactSecrets): redacted as any text is. */
function shownOwner(owner: string | null): string | null {
  return owner === null ? null : redactText(owner);
}

/** The listing's view of a token: everything but its value (D1 keeps only its SHA-256 anyway). */
function view(record: TokenRecord) {
  return {
    name: record.name,
    roles: record.roles,
    owner: shownOwner(record.owner),
    created_at: record.created_at,
    expires_at: record.expires_at,
    last_used_at: record.last_used_at,
    revoked_at: record.revoked_at,
  };
}

export interface TokenAudit {
  /** The audit entry's statement, written in the same D1 batch as the change (src/audit). */
  entry: (action: "token.create" | "token.revoke", target: string, details?: Record<string, unknown>) => D1PreparedStatement;
}

export async function handleCreateToken(request: Request, db: D1Database, audit: TokenAudit): Promise<Response> {
  const body = await readJsonBody(request, tokenCreateSchema);
  const now = new Date();
  const record: TokenRecord = {
    name: body.name,
    roles: body.roles,
    owner: body.owner ?? null,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + body.ttl_days * DAY_MS).toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  const token = newTokenValue();
  const [inserted] = await db.batch([
    await insertTokenStatement(db, record, token),
    audit.entry("token.create", `token:${record.name}`, { roles: record.roles, owner: record.owner, expires_at: record.expires_at }),
  ]);
  if ((inserted?.meta.changes ?? 0) === 0) {
    // The batch's audit insert is conditional on the token's (onlyIfPreviousChanged), so nothing was recorded.
    throw apiError(409, {
      error: "name_taken",
      message: `A token named ${JSON.stringify(record.name)} exists or existed; names are never reused. Choose another name.`,
    });
  }
  return jsonResponse(201, {
    name: record.name,
    token,
    roles: record.roles,
    owner: shownOwner(record.owner),
    created_at: record.created_at,
    expires_at: record.expires_at,
  });
}

export async function handleListTokens(db: D1Database): Promise<Response> {
  return jsonResponse(200, { tokens: (await listTokens(db)).map(view) });
}

export async function handleRevokeToken(db: D1Database, name: string, audit: TokenAudit): Promise<Response> {
  const existing = await getToken(db, name);
  if (existing === null) throw apiError(404, { error: "not_found", message: `No token named ${JSON.stringify(name)}.` });
  if (existing.revoked_at !== null) return jsonResponse(200, { name, revoked_at: existing.revoked_at });
  const at = new Date().toISOString();
  await db.batch([...revokeTokenStatements(db, name, at), audit.entry("token.revoke", `token:${name}`)]);
  const after = await getToken(db, name);
  return jsonResponse(200, { name, revoked_at: after?.revoked_at ?? at });
}
