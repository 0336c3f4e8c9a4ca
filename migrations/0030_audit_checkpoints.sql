-- Signed checkpoints of the audit chain (contract section 25): one per signed
-- head, made one at a time by the sealer. `r2_key` is set once the
-- checkpoint's entries are copied to AUDIT_BUCKET (NULL while the copy is
-- due; `copy_from` is the first seq that object holds). `audit_keys` keeps
-- every public key (a JWK with its kid) that signed a kept checkpoint.
CREATE TABLE audit_checkpoints (
  seq INTEGER PRIMARY KEY,
  hash TEXT NOT NULL,
  at TEXT NOT NULL,
  kid TEXT NOT NULL,
  signature TEXT NOT NULL,
  on_demand INTEGER NOT NULL DEFAULT 0,
  copy_from INTEGER,
  r2_key TEXT,
  copied_at TEXT
);
CREATE INDEX audit_checkpoints_at ON audit_checkpoints (at);

CREATE TABLE audit_keys (
  kid TEXT PRIMARY KEY,
  jwk TEXT NOT NULL,
  first_used_at TEXT NOT NULL
);
