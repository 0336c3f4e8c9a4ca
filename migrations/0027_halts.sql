-- Contract section 23, halts. One row per halt; `engaged_at` and
-- `released_at` are D1's clock. scope_kind/scope_value split the scope
-- (`all`, `server:<s>`, `tool:<t>`, `principal:<id>`); scope_person is the
-- person a `principal:` halt's principal stands for (it matches that
-- person's other credentials too). Kept forever (section 22: retention
-- leaves halts and their votes).
CREATE TABLE halts (
  halt_id TEXT PRIMARY KEY,
  scope TEXT NOT NULL,
  scope_kind TEXT NOT NULL CHECK (scope_kind IN ('all', 'server', 'tool', 'principal')),
  scope_value TEXT,
  scope_person TEXT,
  reason TEXT NOT NULL,
  engaged_by TEXT NOT NULL,
  engaged_at TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'released')),
  -- HALT_RELEASE_APPROVALS when it was engaged.
  required INTEGER NOT NULL CHECK (required BETWEEN 1 AND 5),
  released_by TEXT,
  released_at TEXT,
  -- cancel_runs: how many runs were to be cancelled, how many were, and when the job finished.
  cancel_requested INTEGER,
  cancel_done INTEGER,
  cancel_finished_at TEXT,
  CHECK ((status = 'released') = (released_at IS NOT NULL))
);

-- The checkpoint's halt clause and every listing read the active ones.
CREATE INDEX halts_by_status ON halts (status, engaged_at, halt_id);

-- Release votes: one per person (or, with required = 1, per principal that is
-- no person). The trigger releases the halt in the same statement as the vote
-- that reaches `required`, so concurrent votes never release twice or lose one.
CREATE TABLE halt_releases (
  halt_id TEXT NOT NULL REFERENCES halts (halt_id),
  voter TEXT NOT NULL,
  principal TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (halt_id, voter)
);

CREATE TRIGGER halt_release_at_quorum AFTER INSERT ON halt_releases
BEGIN
  UPDATE halts SET status = 'released', released_by = NEW.principal, released_at = NEW.at
  WHERE halt_id = NEW.halt_id AND status = 'active'
    AND (SELECT COUNT(*) FROM halt_releases WHERE halt_id = NEW.halt_id) >= required;
END;
