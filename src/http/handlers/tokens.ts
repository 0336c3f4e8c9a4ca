// Named API tokens (contract section 18): POST /api/tokens makes one and shows
// its value once; GET lists them without values; DELETE revokes one and every
// console session it opened, in one D1 batch. Names are never reused, revoked
// ones included (409 name_taken). An admin manages every token; any `access:`
// user may create, list and revoke tokens owned by themselves, with roles they
// hold (else 403). A token its `access:` owner created for themselves is
// `owned_by_creator`: that person (contract section 19); any other owner is
// recorded, proves nothing and only restricts.
import { z } from "zod";
import { lacksRole } from "../../auth/authorize";
import type { Principal } from "../../auth/principal";
import { grants, rolesSchema } from "../../auth/roles";
import { nonCanonicalReason } from "../../policy/persons";
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
import { apiError, jsonResponse } from "../../base/api-error";
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
      .superRefine((owner, ctx) => {
        // Canonical form first (section 19): a padded, invisible, mailto: or upper-case form is named as such.
        const reason = nonCanonicalReason(owner);
        if (reason !== null) ctx.addIssue({ code: "custom", message: `not in canonical form: ${reason}` });
      })
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
    owned_by_creator: record.owned_by_creator,
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

/** Whether this principal manages every token (admin), or only its own (an `access:` user without admin). */
const managesAll = (principal: Principal): boolean => grants(principal.roles, "admin");

function notYours(principal: Principal, what: string): never {
  throw apiError(403, {
    error: "forbidden",
    message: `${lacksRole(principal.id, "admin")}: without it an access: user ${what} only tokens owned by themselves.`,
  });
}

export async function handleCreateToken(request: Request, db: D1Database, creator: Principal, audit: TokenAudit): Promise<Response> {
  const body = await readJsonBody(request, tokenCreateSchema);
  // An access: user without admin makes tokens for themselves (owner defaults to them), with roles they hold.
  const owner = body.owner ?? (managesAll(creator) ? null : creator.id);
  if (!managesAll(creator)) {
    if (owner !== creator.id) notYours(creator, "creates");
    const missing = body.roles.find((role) => !grants(creator.roles, role));
    if (missing !== undefined) {
      throw apiError(403, {
        error: "forbidden",
        message: `${lacksRole(creator.id, missing)}: a token may carry only roles its creator holds.`,
      });
    }
  }
  const now = new Date();
  const record: TokenRecord = {
    name: body.name,
    roles: body.roles,
    owner,
    // Section 19: a token is its owner's person only when that access: user created it for themselves.
    owned_by_creator: owner === creator.id && creator.id.startsWith("access:"),
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + body.ttl_days * DAY_MS).toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  const token = newTokenValue();
  const [inserted] = await db.batch([
    await insertTokenStatement(db, record, token),
    audit.entry("token.create", `token:${record.name}`, {
      roles: record.roles,
      owner: record.owner,
      owned_by_creator: record.owned_by_creator,
      expires_at: record.expires_at,
    }),
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

export async function handleListTokens(db: D1Database, principal: Principal): Promise<Response> {
  return jsonResponse(200, { tokens: (await listTokens(db, managesAll(principal) ? undefined : principal.id)).map(view) });
}

export async function handleRevokeToken(db: D1Database, name: string, principal: Principal, audit: TokenAudit): Promise<Response> {
  const existing = await getToken(db, name);
  // Without admin, another's token and an unknown name answer alike (403): nothing is learnt about others' tokens.
  if (!managesAll(principal) && existing?.owner !== principal.id) notYours(principal, "revokes");
  if (existing === null) throw apiError(404, { error: "not_found", message: `No token named ${JSON.stringify(name)}.` });
  if (existing.revoked_at !== null) return jsonResponse(200, { name, revoked_at: existing.revoked_at });
  const at = new Date().toISOString();
  await db.batch([...revokeTokenStatements(db, name, at), audit.entry("token.revoke", `token:${name}`)]);
  const after = await getToken(db, name);
  return jsonResponse(200, { name, revoked_at: after?.revoked_at ?? at });
}
