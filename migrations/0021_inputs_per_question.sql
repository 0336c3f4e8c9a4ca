-- The questions index holds one row per question (contract sections 15 and 21):
-- a human__ask call's (keyed by its tool_call_id, as before) and each question
-- an MCP tool asks mid-call (keyed by its input_id, `<tool_call_id>:<round>:<key>`,
-- one call asking several). src/listings/run-index.ts writes them.
--
-- SQLite cannot change a primary key in place: the table is made anew, the
-- rows copied (every old row is a human__ask question, input_key its
-- tool_call_id, status kept), the old table dropped (dropping fires no
-- trigger, so the aee_inputs_pending gauge stays right) and the new one
-- renamed. Its indexes and migration 0011's gauge triggers go with the old
-- table, so they are made again here.

CREATE TABLE inputs_0021 (
  run_id TEXT NOT NULL,
  -- input_id for an MCP question, tool_call_id for human__ask.
  input_key TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  -- An MCP question's id; NULL for human__ask.
  input_id TEXT,
  channel_id TEXT NOT NULL,
  question TEXT NOT NULL,
  -- An MCP question's form (the elicitation's requestedSchema, JSON text); NULL for human__ask.
  requested_schema TEXT,
  -- The tool that asked (MCP questions): the Slack Home tab judges who may answer by its policy. Never listed.
  tool_name TEXT,
  requested_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'expired', 'cancelled')),
  PRIMARY KEY (run_id, input_key),
  CHECK (input_key = COALESCE(input_id, tool_call_id))
);

INSERT INTO inputs_0021 (run_id, input_key, tool_call_id, input_id, channel_id, question, requested_schema, tool_name, requested_at,
                         expires_at, status)
SELECT run_id, tool_call_id, tool_call_id, NULL, channel_id, question, NULL, NULL, requested_at, expires_at, status FROM inputs;

DROP TABLE inputs;
ALTER TABLE inputs_0021 RENAME TO inputs;

-- GET /api/inputs, ?status=pending, ?status=answered (newest first on (requested_at, run_id, input_key)).
CREATE INDEX inputs_newest ON inputs (requested_at, run_id, input_key);
CREATE INDEX inputs_by_status ON inputs (status, requested_at, run_id, input_key);

-- Migration 0011's aee_inputs_pending triggers, as they were.
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
