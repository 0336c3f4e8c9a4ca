-- Principals (contract section 18): named API tokens, console sessions bound
-- to the token that opened them, and who requested each indexed run.
--
-- A named token's value is shown once and never stored: D1 keeps its SHA-256
-- (hex). Rows are never deleted, so a name is never used twice (revoked names
-- included). `roles` is a JSON array of role names.
CREATE TABLE api_tokens (
  name TEXT PRIMARY KEY,
  token_sha256 TEXT NOT NULL UNIQUE,
  roles TEXT NOT NULL,
  owner TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  last_used_at TEXT,
  revoked_at TEXT
);

-- A session's principal is its token's: `token:root` (then `root_sha256` is
-- the SHA-256 of the API_TOKEN it was opened with, so rotating API_TOKEN ends
-- it) or `token:<name>` (then `token_name` names the row above, whose
-- revocation or expiry ends it). Rows made before this version have no
-- principal and are refused.
ALTER TABLE console_sessions ADD COLUMN principal TEXT;
ALTER TABLE console_sessions ADD COLUMN token_name TEXT;
ALTER TABLE console_sessions ADD COLUMN root_sha256 TEXT;
CREATE INDEX console_sessions_token ON console_sessions (token_name);

-- The run listing names who requested a run and, for an adapter's trigger, on whose behalf.
ALTER TABLE runs ADD COLUMN requested_by TEXT;
ALTER TABLE runs ADD COLUMN on_behalf_of TEXT;
