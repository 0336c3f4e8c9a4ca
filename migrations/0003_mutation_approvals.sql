-- The audit fields of contract section 8: who approved a mutation and when,
-- so its row is an audit record that outlives the run's events.
--
-- approved_by: the approval decision's `decided_by`, or 'automatic' for an
-- automatic approval. approved_at: ISO 8601, when it was approved. Both are
-- NULL only on rows written before this migration (or by a caller that did
-- not pass them); the projection shows NULL as null.
ALTER TABLE mutation_outcomes ADD COLUMN approved_by TEXT;
ALTER TABLE mutation_outcomes ADD COLUMN approved_at TEXT;
