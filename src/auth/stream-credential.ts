// The credential a stream keeps (contract section 27): which credential opened
// it (its kind and id, never the secret), and whether it still stands when the
// stream next sends: a named token not revoked nor expired, a console session
// not signed out, expired or cut off with its token. The root token and Access
// assertions are not looked up again (the root token changes only with a
// deploy, which closes every socket; an Access stream ends at STREAM_MAX_SECONDS).
import type { Principal } from "./principal";

export interface StreamCredential {
  kind: string;
  id: string;
}

export function streamCredentialOf(principal: Principal): StreamCredential {
  const { credential } = principal;
  switch (credential.kind) {
    case "named_token":
      return { kind: "token", id: credential.name };
    case "console_session":
      return { kind: "session", id: credential.session_id };
    default:
      return { kind: credential.kind, id: principal.id };
  }
}

export async function streamCredentialLive(db: D1Database, credential: StreamCredential, now: Date): Promise<boolean> {
  const at = now.toISOString();
  if (credential.kind === "token") {
    const row = await db
      .prepare("SELECT 1 AS ok FROM api_tokens WHERE name = ?1 AND revoked_at IS NULL AND expires_at > ?2")
      .bind(credential.id, at)
      .first();
    return row !== null;
  }
  if (credential.kind === "session") {
    const row = await db
      .prepare(
        `SELECT 1 AS ok FROM console_sessions s LEFT JOIN api_tokens t ON t.name = s.token_name
          WHERE s.id = ?1 AND s.revoked = 0 AND s.expires_at > ?2
            AND (s.token_name IS NULL OR (t.revoked_at IS NULL AND t.expires_at > ?2))`,
      )
      .bind(credential.id, at)
      .first();
    return row !== null;
  }
  return true;
}
