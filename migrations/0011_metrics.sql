-- Pre-aggregated metrics (contract section 22): GET /api/metrics reads this
-- one small table (and two single-row index seeks), never a scan of the
-- runs, so a scrape costs the same over ten runs as over ten million.
--
-- metric_counters: one row per series, seeded here (src/operate/metric-series.ts
-- lists the same series; a runtime test checks the two agree). `label` is the
-- series' one label value ('' for none); a histogram keeps one row per bucket
-- upper bound ('+Inf' last) counting observations that fell in that bucket
-- only (the scrape sums them into Prometheus' cumulative buckets), plus
-- label 'sum'.
--
-- Who moves them:
-- - the index tables' triggers below, in the same statement as the index
--   write (so an index mark and its counters are one atomic change, whoever
--   writes the row: the run's flush, a reconcile, a test inserting rows);
-- - metric_sources: a run object's counter deltas (Slack posts, histograms,
--   dropped spans), applied by its trigger exactly once per batch;
-- - the Worker's own counters (auth failures, rate limits): one UPDATE each.
-- Gauges fall when retention deletes rows; the *_total counters never do.
CREATE TABLE metric_counters (
  name TEXT NOT NULL,
  label TEXT NOT NULL DEFAULT '',
  value REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (name, label)
);

INSERT INTO metric_counters (name, label) VALUES
  ('aee_runs', 'running'), ('aee_runs', 'completed'), ('aee_runs', 'failed'),
  ('aee_runs_started_total', ''),
  ('aee_approvals_pending', ''),
  ('aee_inputs_pending', ''),
  ('aee_mutations', 'unresolved'), ('aee_mutations', 'not_executed'), ('aee_mutations', 'completed'), ('aee_mutations', 'outcome_unknown'),
  ('aee_mutations_settled_total', 'not_executed'), ('aee_mutations_settled_total', 'completed'), ('aee_mutations_settled_total', 'outcome_unknown'),
  ('aee_slack_posts_pending', ''),
  ('aee_slack_posts_failed_total', ''),
  ('aee_auth_failures_total', ''),
  ('aee_rate_limited_total', ''),
  ('aee_trace_spans_dropped_total', ''),
  ('aee_approval_decision_seconds', '1'), ('aee_approval_decision_seconds', '5'), ('aee_approval_decision_seconds', '15'),
  ('aee_approval_decision_seconds', '30'), ('aee_approval_decision_seconds', '60'), ('aee_approval_decision_seconds', '120'),
  ('aee_approval_decision_seconds', '300'), ('aee_approval_decision_seconds', '600'), ('aee_approval_decision_seconds', '1800'),
  ('aee_approval_decision_seconds', '3600'), ('aee_approval_decision_seconds', '+Inf'), ('aee_approval_decision_seconds', 'sum'),
  ('aee_approval_to_dispatch_seconds', '0.005'), ('aee_approval_to_dispatch_seconds', '0.01'), ('aee_approval_to_dispatch_seconds', '0.025'),
  ('aee_approval_to_dispatch_seconds', '0.05'), ('aee_approval_to_dispatch_seconds', '0.1'), ('aee_approval_to_dispatch_seconds', '0.25'),
  ('aee_approval_to_dispatch_seconds', '0.5'), ('aee_approval_to_dispatch_seconds', '1'), ('aee_approval_to_dispatch_seconds', '2.5'),
  ('aee_approval_to_dispatch_seconds', '5'), ('aee_approval_to_dispatch_seconds', '10'), ('aee_approval_to_dispatch_seconds', '+Inf'),
  ('aee_approval_to_dispatch_seconds', 'sum');

-- Rows already indexed before this migration count from the start.
UPDATE metric_counters SET value = (SELECT COUNT(*) FROM runs WHERE status = metric_counters.label) WHERE name = 'aee_runs';
UPDATE metric_counters SET value = (SELECT COUNT(*) FROM runs) WHERE name = 'aee_runs_started_total';
UPDATE metric_counters SET value = (SELECT COUNT(*) FROM approvals WHERE status = 'pending') WHERE name = 'aee_approvals_pending';
UPDATE metric_counters SET value = (SELECT COUNT(*) FROM inputs WHERE status = 'pending') WHERE name = 'aee_inputs_pending';
UPDATE metric_counters SET value = (SELECT COUNT(*) FROM mutation_outcomes WHERE state = metric_counters.label) WHERE name = 'aee_mutations';
UPDATE metric_counters SET value = (SELECT COUNT(*) FROM mutation_outcomes WHERE state = metric_counters.label) WHERE name = 'aee_mutations_settled_total';

-- runs: aee_runs{status} and aee_runs_started_total.
CREATE TRIGGER metrics_runs_insert AFTER INSERT ON runs BEGIN
  UPDATE metric_counters SET value = value + 1
   WHERE (name = 'aee_runs' AND label = NEW.status) OR (name = 'aee_runs_started_total' AND label = '');
END;
CREATE TRIGGER metrics_runs_update AFTER UPDATE OF status ON runs WHEN OLD.status <> NEW.status BEGIN
  UPDATE metric_counters SET value = value + (CASE WHEN label = NEW.status THEN 1 ELSE -1 END)
   WHERE name = 'aee_runs' AND label IN (OLD.status, NEW.status);
END;
CREATE TRIGGER metrics_runs_delete AFTER DELETE ON runs BEGIN
  UPDATE metric_counters SET value = value - 1 WHERE name = 'aee_runs' AND label = OLD.status;
END;

-- approvals and questions: what waits for a person.
CREATE TRIGGER metrics_approvals_insert AFTER INSERT ON approvals WHEN NEW.status = 'pending' BEGIN
  UPDATE metric_counters SET value = value + 1 WHERE name = 'aee_approvals_pending';
END;
CREATE TRIGGER metrics_approvals_update AFTER UPDATE OF status ON approvals
  WHEN (OLD.status = 'pending') <> (NEW.status = 'pending') BEGIN
  UPDATE metric_counters SET value = value + (CASE WHEN NEW.status = 'pending' THEN 1 ELSE -1 END) WHERE name = 'aee_approvals_pending';
END;
CREATE TRIGGER metrics_approvals_delete AFTER DELETE ON approvals WHEN OLD.status = 'pending' BEGIN
  UPDATE metric_counters SET value = value - 1 WHERE name = 'aee_approvals_pending';
END;
CREATE TRIGGER metrics_inputs_insert AFTER INSERT ON inputs WHEN NEW.status = 'pending' BEGIN
  UPDATE metric_counters SET value = value + 1 WHERE name = 'aee_inputs_pending';
END;
CREATE TRIGGER metrics_inputs_update AFTER UPDATE OF status ON inputs
  WHEN (OLD.status = 'pending') <> (NEW.status = 'pending') BEGIN
  UPDATE metric_counters SET value = value + (CASE WHEN NEW.status = 'pending' THEN 1 ELSE -1 END) WHERE name = 'aee_inputs_pending';
END;
CREATE TRIGGER metrics_inputs_delete AFTER DELETE ON inputs WHEN OLD.status = 'pending' BEGIN
  UPDATE metric_counters SET value = value - 1 WHERE name = 'aee_inputs_pending';
END;

-- mutation outcome rows: aee_mutations{state}; a row leaving `unresolved`
-- (or written settled) counts once in aee_mutations_settled_total{state}.
CREATE TRIGGER metrics_mutations_insert AFTER INSERT ON mutation_outcomes BEGIN
  UPDATE metric_counters SET value = value + 1
   WHERE (name = 'aee_mutations' AND label = NEW.state)
      OR (name = 'aee_mutations_settled_total' AND label = NEW.state AND NEW.state <> 'unresolved');
END;
CREATE TRIGGER metrics_mutations_update AFTER UPDATE OF state ON mutation_outcomes WHEN OLD.state <> NEW.state BEGIN
  UPDATE metric_counters SET value = value + (CASE WHEN label = NEW.state THEN 1 ELSE -1 END)
   WHERE name = 'aee_mutations' AND label IN (OLD.state, NEW.state);
  UPDATE metric_counters SET value = value + 1
   WHERE name = 'aee_mutations_settled_total' AND label = NEW.state AND OLD.state = 'unresolved';
END;
CREATE TRIGGER metrics_mutations_delete AFTER DELETE ON mutation_outcomes BEGIN
  UPDATE metric_counters SET value = value - 1 WHERE name = 'aee_mutations' AND label = OLD.state;
END;

-- The oldest outcome_unknown row, by when it became unknown: one index seek.
CREATE INDEX mutation_outcomes_unknown_since ON mutation_outcomes (settled_at) WHERE state = 'outcome_unknown';

-- A run object's counter deltas (src/operate/run-metrics.ts): one row per
-- object, replaced by each batch it sends. `seq` grows by one per batch and a
-- batch is resent unchanged until D1 took it, so the upsert's WHERE (only a
-- newer seq replaces the row) plus these triggers apply every batch exactly
-- once. `deltas` is a JSON array of [name, label, delta].
CREATE TABLE metric_sources (
  source TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  deltas TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX metric_sources_by_age ON metric_sources (updated_at);

CREATE TRIGGER metrics_sources_insert AFTER INSERT ON metric_sources BEGIN
  UPDATE metric_counters
     SET value = value + (SELECT TOTAL(json_extract(d.value, '$[2]')) FROM json_each(NEW.deltas) AS d
                           WHERE json_extract(d.value, '$[0]') = metric_counters.name AND json_extract(d.value, '$[1]') = metric_counters.label)
   WHERE EXISTS (SELECT 1 FROM json_each(NEW.deltas) AS d
                  WHERE json_extract(d.value, '$[0]') = metric_counters.name AND json_extract(d.value, '$[1]') = metric_counters.label);
END;
CREATE TRIGGER metrics_sources_update AFTER UPDATE OF seq ON metric_sources WHEN NEW.seq > OLD.seq BEGIN
  UPDATE metric_counters
     SET value = value + (SELECT TOTAL(json_extract(d.value, '$[2]')) FROM json_each(NEW.deltas) AS d
                           WHERE json_extract(d.value, '$[0]') = metric_counters.name AND json_extract(d.value, '$[1]') = metric_counters.label)
   WHERE EXISTS (SELECT 1 FROM json_each(NEW.deltas) AS d
                  WHERE json_extract(d.value, '$[0]') = metric_counters.name AND json_extract(d.value, '$[1]') = metric_counters.label);
END;
