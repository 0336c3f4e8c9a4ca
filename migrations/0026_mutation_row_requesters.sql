-- Contract section 23, the checkpoint's statement: the row carries what its
-- one D1 statement needs to judge halts and limits without another read.
--   server            the MCP_SERVERS name of the tool (`mcp__<server>__<tool>`)
--   requested_by      the run's requester (its principal id)
--   on_behalf_of      the person an adapter triggered the run for, as given
--   requester_person  the person the row counts for: on_behalf_of's person,
--                     else the requester's (NULL: no person; limits then
--                     count by requested_by)
--   dispatched_at     D1's clock when the checkpoint committed
-- NULL on rows written before.
ALTER TABLE mutation_outcomes ADD COLUMN server TEXT;
ALTER TABLE mutation_outcomes ADD COLUMN requested_by TEXT;
ALTER TABLE mutation_outcomes ADD COLUMN on_behalf_of TEXT;
ALTER TABLE mutation_outcomes ADD COLUMN requester_person TEXT;
ALTER TABLE mutation_outcomes ADD COLUMN dispatched_at TEXT;

-- Contract section 23: a limit's window reads the rows dispatched within its `per`.
CREATE INDEX mutation_outcomes_dispatched_at ON mutation_outcomes (dispatched_at) WHERE dispatched = 1;
