-- Slack thread follow-ups (contract section 14): the latest run the app
-- started in each thread. A mention inside a thread with a row here starts a
-- run whose conversation begins with that run's turns (asked of its run
-- object, so they last exactly as long as that run keeps its events).
CREATE TABLE slack_threads (
  channel_id TEXT NOT NULL,
  thread_ts TEXT NOT NULL,
  latest_run_id TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (channel_id, thread_ts)
);
