// The console's sessions in D1 (migrations/0007 and 0009): made at sign-in,
// read on every request that carries the cookie, revoked at sign-out. A
// session is bound to the token that opened it (contract section 18): it is
// live while it is not revoked, its expires_at is ahead, and its token still
// is: a named token neither revoked nor expired (its current roles apply), or
// for `token:root` the API_TOKEN it was opened with. Sessions made before
// principals existed (no principal) are never live.
import { ROOT_PRINCIPAL_ID } from "./principal";
import { ROOT_ROLES, type Role, roleSchema } from "./roles";

export interface ConsoleSession {
  id: string;
  /** `token:root` or `token:<name>`. */
  principal: string;
  /** The named token that opened it; null for `token:root`. */
  token_name: string | null;
  created_at: string;
  expires_at: string;
}

export interface LiveSession extends ConsoleSession {
  roles: Role[];
  owner: string | null;
  /** The token's owner created it for themselves (contract section 19). */
  owned_by_creator: boolean;
}

/** The INSERT of a new session; `rootSha256` is the SHA-256 of API_TOKEN for a root session, else null. */
export function createSessionStatement(db: D1Database, session: ConsoleSession, rootSha256: string | null): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO console_sessions (id, name, created_at, expires_at, revoked, principal, token_name, root_sha256)
       VALUES (?1, ?2, ?3, ?4, 0, ?2, ?5, ?6)`,
    )
    .bind(session.id, session.principal, session.created_at, session.expires_at, session.token_name, rootSha256);
}

interface SessionRow extends ConsoleSession {
  token_roles: string | null;
  token_owner: string | null;
  token_owned_by_creator: number | null;
}

/** The live session with this id, or null; `rootSha256` is the SHA-256 of the current API_TOKEN (null when none is set). */
export async function liveSession(db: D1Database, id: string, now: Date, rootSha256: string | null): Promise<LiveSession | null> {
  const at = now.toISOString();
  const row = await db
    .prepare(
      `SELECT s.id, s.principal, s.token_name, s.created_at, s.expires_at, t.roles AS token_roles, t.owner AS token_owner,
              t.owned_by_creator AS token_owned_by_creator
         FROM console_sessions s LEFT JOIN api_tokens t ON t.name = s.token_name
        WHERE s.id = ?1 AND s.revoked = 0 AND s.expires_at > ?2 AND s.principal IS NOT NULL
          AND ((s.token_name IS NULL AND s.principal = ?3 AND s.root_sha256 = ?4)
               OR (s.token_name IS NOT NULL AND t.revoked_at IS NULL AND t.expires_at > ?2))`,
    )
    .bind(id, at, ROOT_PRINCIPAL_ID, rootSha256 ?? "")
    .first<SessionRow>();
  if (!row) return null;
  const { token_roles, token_owner, token_owned_by_creator, ...session } = row;
  if (session.token_name === null) return { ...session, roles: [...ROOT_ROLES], owner: null, owned_by_creator: false };
  const parsed = roleSchema.array().safeParse(JSON.parse(token_roles ?? "[]"));
  return { ...session, roles: parsed.success ? parsed.data : [], owner: token_owner, owned_by_creator: token_owned_by_creator === 1 };
}

export function revokeSessionStatement(db: D1Database, id: string): D1PreparedStatement {
  return db.prepare("UPDATE console_sessions SET revoked = 1 WHERE id = ?1").bind(id);
}

/** Drops sessions that expired before `now` (called at sign-in, so the table stays small without a cron). */
export async function purgeExpiredSessions(db: D1Database, now: Date): Promise<void> {
  await db.prepare("DELETE FROM console_sessions WHERE expires_at <= ?1").bind(now.toISOString()).run();
}
