// The "stop posting" state of the Slack app, in D1 (migrations/0005_slack_stopped.sql): once
// Slack says the app was uninstalled or its tokens revoked, no run posts
// again with that bot token. Keyed by the token's SHA-256 digest, so a new
// installation's token posts again, and the token itself is never stored.
export type StopReason = "app_uninstalled" | "tokens_revoked";

async function tokenDigest(botToken: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(botToken));
  return `sha256:${[...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export async function recordStop(
  db: D1Database,
  botToken: string,
  reason: StopReason,
  teamId: string | undefined,
  at: Date,
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO slack_stopped (token_digest, reason, team_id, stopped_at) VALUES (?, ?, ?, ?) ON CONFLICT (token_digest) DO NOTHING`,
    )
    .bind(await tokenDigest(botToken), reason, teamId ?? null, at.toISOString())
    .run();
}

export async function isPostingStopped(db: D1Database, botToken: string): Promise<boolean> {
  const row = await db
    .prepare(`SELECT 1 AS stopped FROM slack_stopped WHERE token_digest = ?`)
    .bind(await tokenDigest(botToken))
    .first();
  return row !== null;
}
