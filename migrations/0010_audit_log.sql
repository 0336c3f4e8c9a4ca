-- The audit log (contract section 18): every state change by a principal, and
-- every 403 refusal coalesced per principal, action, target and minute (then
-- `coalesce_key` holds those four and `count` how many). Entries are written
-- in the same D1 batch as a D1 change, through a run's pending marks for a
-- change made in its Durable Object (id = run + event sequence, so a replayed
-- flush writes nothing twice), and through the refusal queue's Durable Object
-- for the Worker's refusals. `details` is redacted JSON, never a token value.
CREATE TABLE audit_log (
  id TEXT PRIMARY KEY,
  at TEXT NOT NULL,
  principal TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  result TEXT NOT NULL CHECK (result IN ('ok', 'refused')),
  count INTEGER,
  details TEXT,
  coalesce_key TEXT UNIQUE
);

-- GET /api/audit newest first, and filtered by principal or action.
CREATE INDEX audit_newest ON audit_log (at, id);
CREATE INDEX audit_by_principal ON audit_log (principal, at, id);
CREATE INDEX audit_by_action ON audit_log (action, at, id);
