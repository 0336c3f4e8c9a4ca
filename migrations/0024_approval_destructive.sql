-- Contract sections 16 and 21: the approvals inbox marks a tool its server
-- calls destructive (`destructiveHint: true` on approval_requested) as the
-- run's page does. 0 on approvals indexed before it (none marked).
ALTER TABLE approvals ADD COLUMN destructive INTEGER NOT NULL DEFAULT 0;
