-- The Slack app's "stop posting" state (contract section 14): app_uninstalled
-- or tokens_revoked for the installed bot token stops every outgoing post.
-- Keyed by a digest of the bot token (never the token), so installing the app
-- again (a new token, set with `wrangler secret put SLACK_BOT_TOKEN`) resumes
-- posting without anyone clearing this table.
CREATE TABLE slack_stopped (
  token_digest TEXT PRIMARY KEY CHECK (token_digest LIKE 'sha256:%'),
  reason TEXT NOT NULL CHECK (reason IN ('app_uninstalled', 'tokens_revoked')),
  team_id TEXT,
  stopped_at TEXT NOT NULL
);
