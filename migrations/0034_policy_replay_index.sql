-- Contract section 24 (Replay): the index keeps what the policy checks need to
-- judge a recorded call again by a candidate policy. One row per proposed MCP
-- call, written off the append path like the rest of the runs index (the run
-- object's pending marks, flushed from its alarm), and one row per decision
-- on its approval (each counted approve, and the deny that ended it), with
-- the principal that decided and the person it counted for. Calls proposed
-- before this table existed have no row: a replay counts them as skipped.
CREATE TABLE policy_replay_calls (
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  -- The run's clock when the call was proposed (tool_started): replay's order and window.
  proposed_at TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  channel_id TEXT NOT NULL,
  -- The requester as section 19 compares it: principal, person (null: nobody), on_behalf_of and its person.
  requested_by TEXT NOT NULL,
  requester_person TEXT,
  on_behalf_of TEXT,
  on_behalf_of_person TEXT,
  -- What a `principal` limit counts the call's row by (section 23): the mutation row's COALESCE(requester_person, requested_by).
  limit_key TEXT NOT NULL,
  -- The level asked (approve|confirm), NULL when nobody was asked; whether it was a mutation.
  level TEXT CHECK (level IS NULL OR level IN ('approve', 'confirm')),
  mutating INTEGER NOT NULL CHECK (mutating IN (0, 1)),
  -- The server's annotations as the rule of section 10 read them: readOnlyHint of a trusted server, destructiveHint.
  trusted_read_only INTEGER NOT NULL DEFAULT 0 CHECK (trusted_read_only IN (0, 1)),
  destructive_hint INTEGER NOT NULL DEFAULT 0 CHECK (destructive_hint IN (0, 1)),
  tool_digest TEXT,
  arguments_digest TEXT NOT NULL,
  -- The verdict at asking (section 24's `ask` words): approve|confirm|automatic|not_in_budget|rate_limited|halted.
  ask TEXT NOT NULL,
  -- The halt that refused it at asking, if one did.
  halt_id TEXT,
  approval_id TEXT,
  -- pending|approved|denied|expired|cancelled; NULL when nobody was asked.
  approval_status TEXT,
  -- The run's admitted mutations of this tool before this call's admission (the budget check's count).
  budget_used INTEGER,
  -- The recorded checkpoint (allowed|rate_limited|budget_exhausted), NULL when it never reached one;
  -- checkpoint_at: when a refused one was refused (an allowed one's time is its mutation row's dispatched_at).
  checkpoint TEXT,
  checkpoint_at TEXT,
  PRIMARY KEY (run_id, tool_call_id)
);

-- Replay reads a window in proposal order by keyset: (proposed_at, run_id, tool_call_id).
CREATE INDEX policy_replay_calls_order ON policy_replay_calls (proposed_at, run_id, tool_call_id);

CREATE TABLE policy_replay_votes (
  run_id TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  -- 1, 2, ... in the order the decisions counted.
  n INTEGER NOT NULL CHECK (n >= 1),
  decision TEXT NOT NULL CHECK (decision IN ('approve', 'deny')),
  principal TEXT NOT NULL,
  -- The person the vote counted for; NULL for a principal that is no person.
  person TEXT,
  at TEXT NOT NULL,
  PRIMARY KEY (run_id, tool_call_id, n)
);
