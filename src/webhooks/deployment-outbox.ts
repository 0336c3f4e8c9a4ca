// The deployment's webhook outbox (contract section 26): notifications that
// belong to no run (halt.engaged, halt.released, policy.proposed), kept in
// D1's webhook_outbox and written in the same batch as what they announce
// (notificationStatements), one row per endpoint that takes the type. The
// WebhookCourier object (durable-objects/webhook-courier.ts) delivers them
// from its alarm, in order per endpoint, every endpoint at once; it is woken
// after the batch (wakeCourier) and by the Cron Trigger, so a lost wake only
// delays a notification.
import type { WebhookEndpoint } from "../config/webhooks-setting";
import type { Env } from "../config/env";
import type { WebhookData, WebhookType } from "../wire/webhooks";
import { logger } from "../operate/logger";
import type { EndpointDb } from "./endpoint-state";
import type { LaneStore, QueuedNotification } from "./lane-delivery";
import { newMessageId, webhookBody } from "./notifications";

/** @public The deployment's notification types (the run's outboxes carry the rest). */
export type DeploymentWebhookType = Extract<WebhookType, "halt.engaged" | "halt.released" | "policy.proposed">;

export interface DeploymentNotification {
  type: DeploymentWebhookType;
  data: WebhookData;
  /** What it is about (a halt_id, a policy version): one notification of a type per subject and endpoint, ever. */
  subject: string;
}

/** A condition the rows are inserted under, evaluated in the batch (e.g. "this vote released the halt"). */
export interface InsertCondition {
  sql: string;
  binds: unknown[];
}

/**
 * The INSERTs of one notification, to put in the batch that writes what it
 * announces; none when no endpoint takes the type. `now` is the
 * notification's time.
 */
export function notificationStatements(
  db: EndpointDb,
  endpoints: readonly WebhookEndpoint[],
  notification: DeploymentNotification,
  now: number,
  condition?: InsertCondition,
): D1PreparedStatement[] {
  const takers = endpoints.filter((e) => e.events.includes(notification.type));
  if (takers.length === 0) return [];
  const msgId = newMessageId();
  const body = webhookBody({ type: notification.type, data: notification.data }, new Date(now).toISOString());
  return takers.map((endpoint) =>
    db
      .prepare(
        `INSERT INTO webhook_outbox (msg_id, url, type, subject, body, enqueued_at, next_attempt_at)
         SELECT ?, ?, ?, ?, ?, ?, ? WHERE ${condition?.sql ?? "1"}
         ON CONFLICT (type, subject, url) DO NOTHING`,
      )
      .bind(msgId, endpoint.url, notification.type, notification.subject, body, now, now, ...(condition?.binds ?? [])),
  );
}

/**
 * The policy routes' entry (contract section 24's policy.proposed).
 * Enqueues one deployment notification on its own (for a change already
 * committed, e.g. a policy version) and wakes the courier. Prefer
 * notificationStatements in the change's own batch.
 */
export async function enqueueDeploymentNotification(
  env: Env,
  endpoints: readonly WebhookEndpoint[],
  notification: DeploymentNotification,
): Promise<void> {
  const statements = notificationStatements(env.DB, endpoints, notification, Date.now());
  if (statements.length === 0) return;
  await env.DB.batch(statements);
  await wakeCourier(env);
}

/** Wakes the courier to deliver what waits now; never throws (the Cron Trigger wakes it too). */
export async function wakeCourier(env: Pick<Env, "WEBHOOK_COURIER">): Promise<void> {
  try {
    await env.WEBHOOK_COURIER.get(env.WEBHOOK_COURIER.idFromName("deployment")).wake();
  } catch (err) {
    logger.warn("webhooks: the courier could not be woken; the Cron Trigger wakes it", {
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

/** When the earliest pending deployment notification is due, or null. */
export async function nextDeploymentAttemptAt(db: EndpointDb): Promise<number | null> {
  const row = await db
    .prepare(`SELECT MIN(next_attempt_at) AS due FROM webhook_outbox WHERE state = 'pending'`)
    .first<{ due: number | null }>();
  return row?.due ?? null;
}

/** The deployment outbox as a LaneStore over D1. */
export function deploymentStore(db: EndpointDb): LaneStore {
  const run = async (sql: string, ...binds: unknown[]) => {
    await db
      .prepare(sql)
      .bind(...binds)
      .run();
  };
  return {
    lanes: async () => {
      const { results } = await db.prepare(`SELECT DISTINCT url FROM webhook_outbox WHERE state = 'pending'`).all<{ url: string }>();
      return results.map((r) => r.url);
    },
    head: (url) =>
      db
        .prepare(
          `SELECT seq AS id, url, msg_id, body, attempts, enqueued_at, next_attempt_at FROM webhook_outbox
           WHERE state = 'pending' AND url = ? ORDER BY seq LIMIT 1`,
        )
        .bind(url)
        .first<QueuedNotification>(),
    sent: (row) => run(`UPDATE webhook_outbox SET state = 'sent', attempts = attempts + 1, error = NULL WHERE seq = ?`, row.id),
    retry: (row, at, error) =>
      run(`UPDATE webhook_outbox SET attempts = attempts + 1, next_attempt_at = ?, error = ? WHERE seq = ?`, at, error, row.id),
    fail: (row, error) =>
      run(`UPDATE webhook_outbox SET state = 'failed', attempts = attempts + 1, error = ? WHERE seq = ?`, error, row.id),
    failAll: (url, error) => run(`UPDATE webhook_outbox SET state = 'failed', error = ? WHERE state = 'pending' AND url = ?`, error, url),
  };
}
