-- Contract section 24, Shadow: where the shadow version's verdict at a check
-- differs from the active one's. Written by the run objects' index flush
-- (one pending mark per difference, src/listings/run-index.ts), never on a
-- check's own path; a replayed flush inserts nothing twice (the key is the
-- mark's). Listed by GET /api/policy/shadow (newest first), deleted by
-- retention with the other index rows of the run (INDEX_RETENTION_DAYS).
CREATE TABLE policy_shadow_differences (
  difference_id TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  at TEXT NOT NULL,
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  check_name TEXT NOT NULL CHECK (check_name IN ('ask', 'decider', 'quorum', 'checkpoint')),
  active TEXT NOT NULL,
  shadow TEXT NOT NULL
);
CREATE INDEX policy_shadow_differences_newest ON policy_shadow_differences (at DESC, difference_id DESC);
CREATE INDEX policy_shadow_differences_version ON policy_shadow_differences (version, at DESC, difference_id DESC);
CREATE INDEX policy_shadow_differences_run ON policy_shadow_differences (run_id);

-- aee_policy_shadow_differences_total{check}: counted by the insert itself, so
-- a difference is counted exactly once and retention never lowers the counter.
INSERT INTO metric_counters (name, label) VALUES
  ('aee_policy_shadow_differences_total', 'ask'), ('aee_policy_shadow_differences_total', 'decider'),
  ('aee_policy_shadow_differences_total', 'quorum'), ('aee_policy_shadow_differences_total', 'checkpoint');
CREATE TRIGGER policy_shadow_differences_count AFTER INSERT ON policy_shadow_differences BEGIN
  UPDATE metric_counters SET value = value + 1
   WHERE name = 'aee_policy_shadow_differences_total' AND label = NEW.check_name;
END;
