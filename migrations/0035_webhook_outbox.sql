-- Contract section 26, webhooks.
--
-- webhook_outbox: the deployment's outbox (halts and policy notifications),
-- written in the same D1 batch as what it announces; one row per
-- (notification, endpoint url), delivered in `seq` order per url by the
-- WebhookCourier object's alarm. (type, subject, url) is unique: one
-- notification of a halt's engagement or release per endpoint, ever.
-- Retention deletes rows once delivered or given up.
CREATE TABLE webhook_outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  msg_id TEXT NOT NULL,
  url TEXT NOT NULL,
  type TEXT NOT NULL,
  subject TEXT NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  enqueued_at INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  error TEXT
);
CREATE INDEX webhook_outbox_heads ON webhook_outbox (state, url, seq);
CREATE UNIQUE INDEX webhook_outbox_once ON webhook_outbox (type, subject, url);

-- One row per endpoint url ever attempted: GET /api/webhooks's state and
-- counts. `disabled_entry` is the fingerprint of the WEBHOOKS entry a 410
-- disabled (a changed entry is active again); `failing_since` the first
-- failed attempt since the last delivered one (health: failing over an hour).
CREATE TABLE webhook_endpoints (
  url TEXT PRIMARY KEY,
  disabled_entry TEXT,
  disabled_at TEXT,
  failed_total INTEGER NOT NULL DEFAULT 0,
  last_attempt_at TEXT,
  last_status INTEGER,
  failing_since TEXT
);

-- Notifications waiting in each run's own outbox (its Durable Object's
-- storage), per endpoint url, as the run last reported them (0: no row).
CREATE TABLE webhook_pending (
  source TEXT NOT NULL,
  url TEXT NOT NULL,
  pending INTEGER NOT NULL,
  PRIMARY KEY (source, url)
);

-- Contract section 22: aee_webhooks_pending (the runs' deltas and the
-- deployment outbox's own, by trigger) and aee_webhook_failures_total.
INSERT INTO metric_counters (name, label) VALUES ('aee_webhooks_pending', ''), ('aee_webhook_failures_total', '');

CREATE TRIGGER metrics_webhook_outbox_insert AFTER INSERT ON webhook_outbox WHEN NEW.state = 'pending' BEGIN
  UPDATE metric_counters SET value = value + 1 WHERE name = 'aee_webhooks_pending' AND label = '';
END;
CREATE TRIGGER metrics_webhook_outbox_update AFTER UPDATE OF state ON webhook_outbox
  WHEN (OLD.state = 'pending') <> (NEW.state = 'pending') BEGIN
  UPDATE metric_counters SET value = value + (CASE WHEN NEW.state = 'pending' THEN 1 ELSE -1 END)
   WHERE name = 'aee_webhooks_pending' AND label = '';
END;
CREATE TRIGGER metrics_webhook_outbox_delete AFTER DELETE ON webhook_outbox WHEN OLD.state = 'pending' BEGIN
  UPDATE metric_counters SET value = value - 1 WHERE name = 'aee_webhooks_pending' AND label = '';
END;
CREATE TRIGGER metrics_webhook_failures AFTER UPDATE OF failed_total ON webhook_endpoints
  WHEN NEW.failed_total > OLD.failed_total BEGIN
  UPDATE metric_counters SET value = value + (NEW.failed_total - OLD.failed_total)
   WHERE name = 'aee_webhook_failures_total' AND label = '';
END;
CREATE TRIGGER metrics_webhook_failures_insert AFTER INSERT ON webhook_endpoints WHEN NEW.failed_total > 0 BEGIN
  UPDATE metric_counters SET value = value + NEW.failed_total WHERE name = 'aee_webhook_failures_total' AND label = '';
END;
CREATE TRIGGER metrics_webhook_pending_insert AFTER INSERT ON webhook_pending BEGIN
  UPDATE metric_counters SET value = value + NEW.pending WHERE name = 'aee_webhooks_pending' AND label = '';
END;
CREATE TRIGGER metrics_webhook_pending_update AFTER UPDATE OF pending ON webhook_pending BEGIN
  UPDATE metric_counters SET value = value + (NEW.pending - OLD.pending) WHERE name = 'aee_webhooks_pending' AND label = '';
END;
CREATE TRIGGER metrics_webhook_pending_delete AFTER DELETE ON webhook_pending BEGIN
  UPDATE metric_counters SET value = value - OLD.pending WHERE name = 'aee_webhooks_pending' AND label = '';
END;
