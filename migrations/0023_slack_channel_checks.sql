-- Whether a Slack channel passes the external-channel rule (contract section 19),
-- learned once per channel and kept: the run's own check (its outbox, before its
-- first post) records it here, and the Home tab reads it rather than asking
-- conversations.info for every user's tab. allowed: 1 passes, 0 shared with another
-- organisation. A channel that could not be looked up has no row.
CREATE TABLE slack_channel_checks (
  channel_id TEXT PRIMARY KEY,
  allowed INTEGER NOT NULL,
  checked_at TEXT NOT NULL
);
