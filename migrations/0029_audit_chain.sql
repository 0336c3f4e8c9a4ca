-- An audit you can prove (contract section 25): the hash chain. Entries are
-- written as before (plus `via`, `client_ip`, and a policy's version and hash
-- where known) and sealed afterwards by the one sealer Durable Object, which
-- sets `seq`, `prev_hash`, `hash` (and `details_hash`). `closed` marks a
-- coalesced refusal whose minute is over, so its count is final and it may be
-- sealed. The chain's head lives in `audit_chain`; triggers make D1 itself
-- refuse a seal that is not the head's next link (no fork, no gap), a second
-- seal of one entry, and a second `seq` for one position (the unique index).
ALTER TABLE audit_log ADD COLUMN via TEXT NOT NULL DEFAULT 'api';
ALTER TABLE audit_log ADD COLUMN client_ip TEXT;
ALTER TABLE audit_log ADD COLUMN policy_version INTEGER;
ALTER TABLE audit_log ADD COLUMN policy_hash TEXT;
ALTER TABLE audit_log ADD COLUMN details_hash TEXT;
ALTER TABLE audit_log ADD COLUMN closed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN seq INTEGER;
ALTER TABLE audit_log ADD COLUMN prev_hash TEXT;
ALTER TABLE audit_log ADD COLUMN hash TEXT;

CREATE UNIQUE INDEX audit_seq ON audit_log (seq);
-- The sealer's scan: unsealed entries in order of arrival (rowid).
CREATE INDEX audit_unsealed ON audit_log (seq) WHERE seq IS NULL;

CREATE TABLE audit_chain (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL,
  hash TEXT NOT NULL,
  sealed_at TEXT
);
INSERT INTO audit_chain (id, seq, hash) VALUES (1, 0, 'sha256:0000000000000000000000000000000000000000000000000000000000000000');

CREATE TRIGGER audit_seal_once BEFORE UPDATE OF seq, prev_hash, hash ON audit_log
WHEN OLD.seq IS NOT NULL
BEGIN
  SELECT RAISE(ABORT, 'audit_chain: entry already sealed');
END;

CREATE TRIGGER audit_seal_next BEFORE UPDATE OF seq ON audit_log
WHEN NEW.seq IS NOT NULL AND (
  NEW.seq IS NOT (SELECT seq + 1 FROM audit_chain WHERE id = 1)
  OR NEW.prev_hash IS NOT (SELECT hash FROM audit_chain WHERE id = 1)
  OR NEW.hash IS NULL
)
BEGIN
  SELECT RAISE(ABORT, 'audit_chain: not the next link');
END;

CREATE TRIGGER audit_seal_advance AFTER UPDATE OF seq ON audit_log
WHEN NEW.seq IS NOT NULL
BEGIN
  UPDATE audit_chain SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
END;
