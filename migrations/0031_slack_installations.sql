-- Slack installations (contract section 26; src/slack/installation-store.ts).
-- One row per installation: a workspace (installation_id = its T… team id)
-- or an Enterprise Grid organisation installed org-wide (installation_id =
-- its E… enterprise id). Tokens rest only as AES-GCM envelopes under
-- SLACK_INSTALL_KEY, additional data `slack:<installation id>:<bot|refresh>`;
-- an uninstalled installation keeps its row (the listing shows it) without
-- tokens.
--
-- generation: bumped by every new token set (an install or a refresh); a
-- refresh is written only while the row still holds the generation read.
-- refresh_lease_until: ISO time until which one refresher holds the
-- installation's refresh (taken by one conditional UPDATE, released in the
-- statement that writes the new tokens); NULL or past: free.
CREATE TABLE slack_installations (
  installation_id TEXT PRIMARY KEY,
  team_id TEXT,
  enterprise_id TEXT,
  is_enterprise_install INTEGER NOT NULL DEFAULT 0,
  bot_user_id TEXT NOT NULL,
  scopes TEXT NOT NULL,
  installed_by TEXT NOT NULL,
  authorized_by TEXT NOT NULL,
  installed_at TEXT NOT NULL,
  bot_token TEXT,
  refresh_token TEXT,
  token_expires_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('active', 'refresh_failed', 'uninstalled')),
  generation INTEGER NOT NULL DEFAULT 0,
  refresh_lease_until TEXT,
  updated_at TEXT NOT NULL
);

-- The single-use install states: the SHA-256 of the state (never the state),
-- the admin who started it, the PKCE code verifier (sealed), its expiry (10
-- minutes) and when it was used (NULL: unused).
CREATE TABLE slack_install_states (
  state_digest TEXT PRIMARY KEY,
  principal TEXT NOT NULL,
  code_verifier TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);
CREATE INDEX slack_install_states_expiry ON slack_install_states (expires_at);
