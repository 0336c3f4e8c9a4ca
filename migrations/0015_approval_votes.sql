-- Contract section 19: votes. The mutation row keeps every counted approve of
-- its approval ([] for an automatic one) as JSON `[{"by","at"}]`, beside
-- approved_by (the voter whose vote resolved it); NULL on rows written before.
ALTER TABLE mutation_outcomes ADD COLUMN approvals_json TEXT;
-- The approvals listing carries how many persons must approve, the approvers
-- patterns in force (JSON list, NULL for the default rule) and the votes so far.
ALTER TABLE approvals ADD COLUMN required INTEGER;
ALTER TABLE approvals ADD COLUMN approvers_json TEXT;
ALTER TABLE approvals ADD COLUMN approvals_json TEXT;
