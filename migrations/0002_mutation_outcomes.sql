-- Durable mutation outcomes (contract section 8, `mutation_outcome/v1`): one
-- row per approved mutation from the moment it is approved (the intent),
-- marked dispatched right before dispatch (the checkpoint), then settled.
--
-- approval_id: automatic approvals have no approval, so they store the empty
-- string '' (never NULL). SQLite treats NULLs as distinct in a UNIQUE key, so
-- a NULL would let the same auto-approved call be recorded twice; '' keeps
-- (run_id, tool_call_id, approval_id) a real key. Server-made approval ids
-- are `approval_<ULID>`, so '' can never collide with one. The projection
-- shows '' as `"approval_id": null`.
CREATE TABLE mutation_outcomes (
  mutation_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  channel_id TEXT NOT NULL,
  delivery_id TEXT,
  tool_call_id TEXT NOT NULL,
  approval_id TEXT NOT NULL DEFAULT '',
  tool_name TEXT NOT NULL,
  arguments_digest TEXT NOT NULL CHECK (arguments_digest LIKE 'sha256:%'),
  state TEXT NOT NULL DEFAULT 'unresolved'
    CHECK (state IN ('unresolved', 'not_executed', 'completed', 'outcome_unknown')),
  dispatched INTEGER NOT NULL DEFAULT 0 CHECK (dispatched IN (0, 1)),
  reason TEXT,
  result_json TEXT,
  error_json TEXT,
  created_at TEXT NOT NULL,
  settled_at TEXT,
  reconciliation_json TEXT,
  -- A call that never left cannot have completed, and cannot be unknown.
  CHECK (state NOT IN ('completed', 'outcome_unknown') OR dispatched = 1),
  -- Settled exactly when it has a settlement time.
  CHECK ((state = 'unresolved') = (settled_at IS NULL)),
  -- Only a reconciled outcome_unknown row carries a reconciliation.
  CHECK (reconciliation_json IS NULL OR state IN ('completed', 'not_executed')),
  UNIQUE (run_id, tool_call_id, approval_id)
);

-- GET /api/runs/{run_id}/mutations, in creation order.
CREATE INDEX mutation_outcomes_by_run ON mutation_outcomes (run_id, created_at);

-- The cross-run `prior_outcome_unknown` check: same channel, tool and
-- arguments digest, in state outcome_unknown or unresolved.
CREATE INDEX mutation_outcomes_prior ON mutation_outcomes (channel_id, tool_name, arguments_digest, state);
