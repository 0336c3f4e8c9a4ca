-- The operator console's sessions (contract section 16). The browser holds only
-- a signed reference to a row here (src/console/session-cookie.ts), never the
-- API token; signing out sets `revoked`, and a revoked or expired row refuses
-- its cookie from then on. Times are ISO-8601 UTC strings, compared as text.
CREATE TABLE console_sessions (
  id TEXT PRIMARY KEY,
  -- The name given at sign-in; decisions made in the session are recorded as `console:<name>`.
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1))
);

-- Purging expired sessions reads by expiry.
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
