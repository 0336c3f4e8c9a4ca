-- Contract section 24, policy as versioned data. Version 0 is the
-- deployment's settings (TOOL_POLICY, APPROVER_GROUPS, MUTATION_BUDGET) and
-- is not stored; versions from 1 on are rows here, immutable but for their
-- status (and who approved them). One pointer row (policy_active, id = 1)
-- names the active version; it is moved by one statement (an activating
-- INSERT, or the approve's UPDATE guarded by the version's base being the
-- active one), and the triggers below move the statuses in that same
-- statement: the version it left becomes `superseded`, every other
-- `proposed` or `shadow` one becomes `stale`. At most one `shadow` exists
-- (a partial unique index). Kept forever (retention leaves them).
CREATE TABLE policy_versions (
  version INTEGER PRIMARY KEY CHECK (version >= 1),
  document TEXT NOT NULL,
  hash TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'proposed', 'shadow', 'superseded', 'withdrawn', 'stale')),
  mode TEXT NOT NULL DEFAULT 'enforce' CHECK (mode IN ('enforce', 'shadow')),
  base_version INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  -- The author's person (section 19), null for a credential that is no person: the approver must be another.
  created_by_person TEXT,
  created_at TEXT NOT NULL,
  comment TEXT NOT NULL DEFAULT '',
  -- The loosening changes against the base, as [{"path","from","to"}] JSON.
  loosens TEXT NOT NULL DEFAULT '[]',
  approved_by TEXT,
  approved_at TEXT,
  withdrawn_by TEXT,
  withdrawn_at TEXT
);

CREATE UNIQUE INDEX policy_versions_one_shadow ON policy_versions (status) WHERE status = 'shadow';
CREATE INDEX policy_versions_by_status ON policy_versions (status, version);

CREATE TABLE policy_active (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL,
  activated_by TEXT,
  activated_at TEXT
);
INSERT INTO policy_active (id, version) VALUES (1, 0);

-- A version inserted active (a tightening PUT) moves the pointer in its own statement.
CREATE TRIGGER policy_versions_activate_on_insert AFTER INSERT ON policy_versions WHEN NEW.status = 'active'
BEGIN
  UPDATE policy_active SET version = NEW.version, activated_by = NEW.created_by, activated_at = NEW.created_at WHERE id = 1;
END;

-- Any move of the pointer: the version it left is superseded, the one it names active, the other candidates stale.
CREATE TRIGGER policy_active_moved AFTER UPDATE OF version ON policy_active WHEN NEW.version <> OLD.version
BEGIN
  UPDATE policy_versions SET status = 'superseded' WHERE version = OLD.version AND status = 'active';
  UPDATE policy_versions SET status = 'active', approved_by = NEW.activated_by, approved_at = NEW.activated_at
   WHERE version = NEW.version AND status IN ('proposed', 'shadow');
  UPDATE policy_versions SET status = 'stale' WHERE version <> NEW.version AND status IN ('proposed', 'shadow');
END;

-- Contract sections 8 and 24: the version (and its hash) that decided a mutation, on its row.
ALTER TABLE mutation_outcomes ADD COLUMN policy_version INTEGER;
ALTER TABLE mutation_outcomes ADD COLUMN policy_hash TEXT;
