// The console's sessions in D1 (migrations/0007_console_sessions.sql): made at
// sign-in, read on every request that carries the cookie, revoked at sign-out.
// A session is live while it is not revoked and its expires_at is ahead.

export interface ConsoleSession {
  id: string;
  name: string;
  created_at: string;
  expires_at: string;
}

export async function createSession(db: D1Database, session: ConsoleSession): Promise<void> {
  await db
    .prepare("INSERT INTO console_sessions (id, name, created_at, expires_at, revoked) VALUES (?1, ?2, ?3, ?4, 0)")
    .bind(session.id, session.name, session.created_at, session.expires_at)
    .run();
}

/** The live session with this id, or null (unknown, revoked or expired). */
export async function liveSession(db: D1Database, id: string, now: Date): Promise<ConsoleSession | null> {
  return db
    .prepare("SELECT id, name, created_at, expires_at FROM console_sessions WHERE id = ?1 AND revoked = 0 AND expires_at > ?2")
    .bind(id, now.toISOString())
    .first<ConsoleSession>();
}

export async function revokeSession(db: D1Database, id: string): Promise<void> {
  await db.prepare("UPDATE console_sessions SET revoked = 1 WHERE id = ?1").bind(id).run();
}

/** Drops sessions that expired before `now` (called at sign-in, so the table stays small without a cron). */
export async function purgeExpiredSessions(db: D1Database, now: Date): Promise<void> {
  await db.prepare("DELETE FROM console_sessions WHERE expires_at <= ?1").bind(now.toISOString()).run();
}
