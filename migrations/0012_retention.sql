-- Retention by the Cron Trigger (contract section 22, src/operate/retention.ts):
-- each bounded batch finds its oldest rows through one of these indexes
-- instead of scanning the table.

-- Delivery receipts, by when they were accepted.
CREATE INDEX deliveries_by_accepted ON deliveries (accepted_at);

-- Runs that ended, by when they ended (a running run is never deleted).
CREATE INDEX runs_ended ON runs (ended_at) WHERE status <> 'running';

-- An ended run's approvals go with it.
CREATE INDEX approvals_by_run ON approvals (run_id);

-- Settled mutation rows, by when they settled (only with MUTATION_RETENTION_DAYS;
-- unresolved and outcome_unknown rows are never deleted, so never in this index).
CREATE INDEX mutation_outcomes_settled ON mutation_outcomes (settled_at) WHERE state IN ('completed', 'not_executed');
