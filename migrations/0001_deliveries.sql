-- Delivery receipts: one row per delivery identity (delivery_id or the
-- Idempotency-Key header). The primary key is what makes two identical
-- triggers sent at the same moment start exactly one run.
CREATE TABLE deliveries (
  delivery_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  channel_id TEXT NOT NULL,
  accepted_at TEXT NOT NULL,
  -- The accepted trigger, so a duplicate can finish starting a run whose
  -- first request died between the receipt and the run's start.
  start_input TEXT NOT NULL
);
