// Named API tokens in D1 (contract section 18, migrations/0009_principals.sql):
// the value (`aee_` + 32 random bytes, base64url) is made here, returned once
// and never stored; D1 keeps its SHA-256. A token is looked up by that digest
// (a 256-bit random value: the digest lookup reveals nothing a timing probe
// could use, as with GitHub's token scanning), and is live while not revoked
// and not expired. Rows are never deleted, so names are never reused.
import type { TokenListItem } from "../client/types";
import { z } from "zod";
import { sha256Hex } from "./digest";
import { roleSchema } from "./roles";

const TOKEN_PREFIX = "aee_";
const TOKEN_RANDOM_BYTES = 32;
export const TOKEN_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** `last_used_at` is written at most once a minute per token. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** A named token as listed (never its value): the client's wire type, declared once (src/client/types.ts). */
export type TokenRecord = TokenListItem;

interface TokenRow extends Omit<TokenRecord, "roles" | "owned_by_creator"> {
  roles: string;
  owned_by_creator: number;
}

const storedRoles = z.array(roleSchema);

function toRecord(row: TokenRow): TokenRecord {
  // A row whose roles no longer parse grants nothing rather than failing the request.
  const roles = storedRoles.safeParse(JSON.parse(row.roles));
  return { ...row, roles: roles.success ? roles.data : [], owned_by_creator: row.owned_by_creator === 1 };
}

function toBase64Url(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function newTokenValue(): string {
  return `${TOKEN_PREFIX}${toBase64Url(crypto.getRandomValues(new Uint8Array(TOKEN_RANDOM_BYTES)))}`;
}

const COLUMNS = "name, roles, owner, owned_by_creator, created_at, expires_at, last_used_at, revoked_at";

/** The INSERT of a new token (it changes nothing when the name exists: check `meta.changes`). */
export async function insertTokenStatement(db: D1Database, record: TokenRecord, value: string): Promise<D1PreparedStatement> {
  return db
    .prepare(
      `INSERT INTO api_tokens (name, token_sha256, roles, owner, owned_by_creator, created_at, expires_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (name) DO NOTHING`,
    )
    .bind(
      record.name,
      await sha256Hex(value),
      JSON.stringify(record.roles),
      record.owner,
      record.owned_by_creator ? 1 : 0,
      record.created_at,
      record.expires_at,
    );
}

/** The live token with this value, or null (not an `aee_` value, unknown, revoked or expired). */
export async function findLiveToken(db: D1Database, value: string, now: Date): Promise<TokenRecord | null> {
  if (!value.startsWith(TOKEN_PREFIX)) return null;
  const row = await db
    .prepare(`SELECT ${COLUMNS} FROM api_tokens WHERE token_sha256 = ?1 AND revoked_at IS NULL AND expires_at > ?2`)
    .bind(await sha256Hex(value), now.toISOString())
    .first<TokenRow>();
  return row ? toRecord(row) : null;
}

export async function getToken(db: D1Database, name: string): Promise<TokenRecord | null> {
  const row = await db.prepare(`SELECT ${COLUMNS} FROM api_tokens WHERE name = ?1`).bind(name).first<TokenRow>();
  return row ? toRecord(row) : null;
}

/** Every token, newest first (the table stays small: one row per token ever made); with `owner`, only the tokens it owns. */
export async function listTokens(db: D1Database, owner?: string): Promise<TokenRecord[]> {
  const statement =
    owner === undefined
      ? db.prepare(`SELECT ${COLUMNS} FROM api_tokens ORDER BY created_at DESC, name DESC`)
      : db.prepare(`SELECT ${COLUMNS} FROM api_tokens WHERE owner = ?1 ORDER BY created_at DESC, name DESC`).bind(owner);
  const { results } = await statement.all<TokenRow>();
  return results.map(toRecord);
}

/** The statements that revoke a token and end every console session signed in with it. */
export function revokeTokenStatements(db: D1Database, name: string, at: string): D1PreparedStatement[] {
  return [
    db.prepare("UPDATE api_tokens SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL").bind(name, at),
    db.prepare("UPDATE console_sessions SET revoked = 1 WHERE token_name = ?1").bind(name),
  ];
}

/** Whether `last_used_at` is due a write at `now`. */
export function lastUsedDue(record: TokenRecord, now: Date): boolean {
  return record.last_used_at === null || now.getTime() - Date.parse(record.last_used_at) >= LAST_USED_RESOLUTION_MS;
}

/** Writes `last_used_at`; the condition keeps concurrent requests to one write a minute. */
export async function touchLastUsed(db: D1Database, name: string, now: Date): Promise<void> {
  await db
    .prepare("UPDATE api_tokens SET last_used_at = ?2 WHERE name = ?1 AND (last_used_at IS NULL OR last_used_at <= ?3)")
    .bind(name, now.toISOString(), new Date(now.getTime() - LAST_USED_RESOLUTION_MS).toISOString())
    .run();
}
