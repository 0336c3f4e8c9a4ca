// The run's webhook outbox (contract section 26), in its Durable Object's
// SQLite storage (table `webhook_queue`). On the append path it only stores:
// each event that is a notification (notifications.ts) becomes one row per
// endpoint that takes its type, with its `msg_<ULID>` and its ids-only body,
// in event order. Delivery (lane-delivery.ts) runs off the append path, from
// the object's background work and its alarm (deadline "webhooks"), in order
// per endpoint, every endpoint at once; after each drain the run's pending
// counts per url go to D1 (GET /api/webhooks, aee_webhooks_pending).
// It knows nothing about alarms: the object asks nextAttemptAt() and arms one.
import type { WebhookEndpoint } from "../config/webhooks-setting";
import type { SqlLike } from "../stream/event-log";
import type { SqlTable } from "../stream/sql-schema";
import type { RunEvent } from "../wire/event-schemas";
import { type EndpointDb, disabledEntriesOrNone, pendingStatements, recordAttemptIn } from "./endpoint-state";
import { drainLanes, type LaneStore, type QueuedNotification } from "./lane-delivery";
import { newMessageId, notificationOf, webhookBody } from "./notifications";
import type { RetrySettings } from "./webhook-attempt";
import { logger } from "../operate/logger";

export const WEBHOOK_QUEUE_TABLE: SqlTable = {
  name: "webhook_queue",
  ddl: [
    `CREATE TABLE IF NOT EXISTS webhook_queue (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      url TEXT NOT NULL,
      msg_id TEXT NOT NULL,
      body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
      attempts INTEGER NOT NULL DEFAULT 0,
      enqueued_at INTEGER NOT NULL,
      next_attempt_at INTEGER NOT NULL,
      error TEXT)`,
    `CREATE INDEX IF NOT EXISTS webhook_queue_heads ON webhook_queue (state, url, id)`,
  ],
};

export interface RunWebhookSettings extends RetrySettings {
  WEBHOOKS: readonly WebhookEndpoint[];
}

type Row = QueuedNotification & Record<string, SqlStorageValue>;

export class RunWebhooks {
  readonly #sql: SqlLike;
  readonly #settings: RunWebhookSettings;
  readonly #runId: string;
  #draining: Promise<void> | null = null;

  constructor(sql: SqlLike, settings: RunWebhookSettings, runId: string) {
    this.#sql = sql;
    this.#settings = settings;
    this.#runId = runId;
  }

  /** Whether any endpoint is configured (else nothing is ever queued). */
  get active(): boolean {
    return this.#settings.WEBHOOKS.length > 0;
  }

  /** Storage only (the append path): the event's notification, one row per endpoint taking it. Returns how many rows. */
  enqueueEvent(event: RunEvent, now: number): number {
    const notification = notificationOf(event);
    if (notification === null) return 0;
    const endpoints = this.#settings.WEBHOOKS.filter((e) => e.events.includes(notification.type));
    if (endpoints.length === 0) return 0;
    const msgId = newMessageId();
    const body = webhookBody(notification, event.at);
    for (const endpoint of endpoints)
      this.#sql.exec(
        `INSERT INTO webhook_queue (url, msg_id, body, enqueued_at, next_attempt_at) VALUES (?, ?, ?, ?, ?)`,
        endpoint.url,
        msgId,
        body,
        now,
        now,
      );
    return endpoints.length;
  }

  /** Pending notifications per url (every url this run ever queued for, 0 included). */
  counts(): Map<string, number> {
    const rows = this.#sql
      .exec<{ url: string; n: number }>(`SELECT url, SUM(state = 'pending') AS n FROM webhook_queue GROUP BY url`)
      .toArray();
    return new Map(rows.map((r) => [r.url, Number(r.n)]));
  }

  get pending(): number {
    let total = 0;
    for (const n of this.counts().values()) total += n;
    return total;
  }

  /** When the earliest lane's head is due, or null when nothing waits. */
  nextAttemptAt(): number | null {
    const row = this.#sql
      .exec<{ due: number | null }>(`SELECT MIN(next_attempt_at) AS due FROM webhook_queue WHERE state = 'pending'`)
      .toArray()[0];
    return row?.due ?? null;
  }

  /** Delivers what is due (one drain at a time: a second call joins the first), then reports the counts to D1. */
  drain(db: EndpointDb, clock: () => number, auditWritten?: () => void, fetcher?: typeof fetch): Promise<void> {
    this.#draining ??= (async () => {
      try {
        if (this.nextAttemptAt() === null) return;
        await drainLanes(this.#store(), {
          endpoints: this.#settings.WEBHOOKS,
          settings: this.#settings,
          disabled: await disabledEntriesOrNone(db),
          recorded: recordAttemptIn(db, auditWritten),
          clock,
          ...(fetcher === undefined ? {} : { fetcher }),
        });
      } finally {
        this.#draining = null;
        await this.report(db);
      }
    })();
    return this.#draining;
  }

  /** The run's pending counts per url, to D1 (absolute: a repeat changes nothing); never throws. */
  async report(db: EndpointDb): Promise<void> {
    const statements = pendingStatements(db, this.#runId, this.counts());
    if (statements.length === 0) return;
    try {
      await db.batch(statements);
    } catch (err) {
      logger.warn("webhooks: the run's pending counts could not be written; written after the next drain", {
        run_id: this.#runId,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /** Every row, in order: for tests and debugging. */
  items(): { url: string; msg_id: string; body: string; state: string; attempts: number; error: string | null }[] {
    return this.#sql
      .exec<{ url: string; msg_id: string; body: string; state: string; attempts: number; error: string | null }>(
        `SELECT url, msg_id, body, state, attempts, error FROM webhook_queue ORDER BY id`,
      )
      .toArray();
  }

  #store(): LaneStore {
    const sql = this.#sql;
    return {
      lanes: async () =>
        sql
          .exec<{ url: string }>(`SELECT DISTINCT url FROM webhook_queue WHERE state = 'pending'`)
          .toArray()
          .map((r) => r.url),
      head: async (url) =>
        sql
          .exec<Row>(
            `SELECT id, url, msg_id, body, attempts, enqueued_at, next_attempt_at FROM webhook_queue
             WHERE state = 'pending' AND url = ? ORDER BY id LIMIT 1`,
            url,
          )
          .toArray()[0] ?? null,
      sent: async (row) => {
        sql.exec(`UPDATE webhook_queue SET state = 'sent', attempts = attempts + 1, error = NULL WHERE id = ?`, row.id);
      },
      retry: async (row, at, error) => {
        sql.exec(`UPDATE webhook_queue SET attempts = attempts + 1, next_attempt_at = ?, error = ? WHERE id = ?`, at, error, row.id);
      },
      fail: async (row, error) => {
        sql.exec(`UPDATE webhook_queue SET state = 'failed', attempts = attempts + 1, error = ? WHERE id = ?`, error, row.id);
      },
      failAll: async (url, error) => {
        sql.exec(`UPDATE webhook_queue SET state = 'failed', error = ? WHERE state = 'pending' AND url = ?`, error, url);
      },
    };
  }
}
