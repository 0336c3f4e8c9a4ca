-- The indexes across runs (contract section 15): runs, approvals and human__ask
-- questions, written off the append path by each run's object
-- (src/listings/run-index.ts: a pending mark in the object's SQLite, flushed
-- here from its alarm). They outlive the runs' events.
--
-- Every listing is newest first on (time, id), read with a keyset cursor, so
-- each order has an index that ends in those two columns.

CREATE TABLE runs (
  run_id TEXT PRIMARY KEY,
  channel_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  delivery_id TEXT,
  source TEXT NOT NULL CHECK (source IN ('api', 'slack')),
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
  created_at TEXT NOT NULL,
  ended_at TEXT,
  -- Ended exactly when it has an end time.
  CHECK ((status = 'running') = (ended_at IS NULL))
);

-- GET /api/runs, GET /api/runs?status=, ?channel_id=, and both.
CREATE INDEX runs_newest ON runs (created_at, run_id);
CREATE INDEX runs_by_status ON runs (status, created_at, run_id);
CREATE INDEX runs_by_channel ON runs (channel_id, created_at, run_id);
CREATE INDEX runs_by_channel_status ON runs (channel_id, status, created_at, run_id);

-- arguments_json: the approval's arguments as the approval_requested event
-- carries them, secret-looking values already redacted. Nothing else is kept.
CREATE TABLE approvals (
  approval_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  channel_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  level TEXT NOT NULL CHECK (level IN ('approve', 'confirm')),
  description TEXT NOT NULL,
  arguments_json TEXT NOT NULL,
  requested_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'cancelled')),
  decided_by TEXT
);

-- GET /api/approvals, ?status=pending (what waits for a person), ?status=resolved.
CREATE INDEX approvals_newest ON approvals (requested_at, approval_id);
CREATE INDEX approvals_pending ON approvals (requested_at, approval_id) WHERE status = 'pending';
CREATE INDEX approvals_resolved ON approvals (requested_at, approval_id) WHERE status <> 'pending';

-- A question is one human__ask call: tool_call_id is the model's and only
-- unique within its run.
CREATE TABLE inputs (
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  channel_id TEXT NOT NULL,
  question TEXT NOT NULL,
  requested_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'expired', 'cancelled')),
  PRIMARY KEY (run_id, tool_call_id)
);

-- GET /api/inputs, ?status=pending, ?status=answered.
CREATE INDEX inputs_newest ON inputs (requested_at, run_id, tool_call_id);
CREATE INDEX inputs_by_status ON inputs (status, requested_at, run_id, tool_call_id);

-- GET /api/mutations over the existing outcome rows: newest first, by state
-- (say every outcome_unknown row waiting for reconciliation) and by channel.
CREATE INDEX mutation_outcomes_newest ON mutation_outcomes (created_at, mutation_id);
CREATE INDEX mutation_outcomes_by_state ON mutation_outcomes (state, created_at, mutation_id);
CREATE INDEX mutation_outcomes_by_channel ON mutation_outcomes (channel_id, created_at, mutation_id);
CREATE INDEX mutation_outcomes_by_channel_state ON mutation_outcomes (channel_id, state, created_at, mutation_id);
