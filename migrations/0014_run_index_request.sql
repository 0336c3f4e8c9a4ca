-- The runs listing's additive fields (contract section 15, for the operator
-- console of section 16): the first words of the run's message, redacted
-- (src/listings/run-index.ts: requestPreview), and a failed run's error code
-- (`cancelled` for a cancelled run, so a list can tell the two apart). Both
-- are null on rows indexed before this migration.
ALTER TABLE runs ADD COLUMN request TEXT;
ALTER TABLE runs ADD COLUMN error_code TEXT;

-- GET /api/runs?user_id= (the console's requester filter), newest first.
CREATE INDEX runs_by_user ON runs (user_id, created_at, run_id);
