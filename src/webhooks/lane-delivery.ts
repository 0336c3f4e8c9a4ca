// Delivery from a webhook outbox (contract section 26), the same for the
// run's outbox and the deployment's: one lane per endpoint url, each lane in
// order (its oldest pending notification first, the next only after it is
// delivered or given up), every lane at once (no endpoint waits for another).
// A failed attempt is retried with backoff until WEBHOOK_DELIVERY_MAX_MS after
// the notification was made, never sooner than a 429's or 503's Retry-After;
// a 410 disables the endpoint's entry and gives up what waits for it; an entry
// no longer in WEBHOOKS, or disabled, gets nothing. Each attempt is recorded
// in D1 (endpoint-state.ts) without holding up the lane when D1 fails.
import type { WebhookEndpoint } from "../config/webhooks-setting";
import { logger } from "../operate/logger";
import { attemptDelivery, nextAttemptAt, type AttemptResult, type RetrySettings } from "./webhook-attempt";
import { entryFingerprint } from "./endpoint-state";
import { raceDeadline } from "../schedule/deadline";

/** A stalled D1 never holds a lane: an attempt's record is awaited at most this long (it may still land later). */
const RECORD_WAIT_MS = 5_000;

/** One queued notification for one endpoint. */
export interface QueuedNotification {
  id: number;
  url: string;
  msg_id: string;
  body: string;
  attempts: number;
  enqueued_at: number;
  next_attempt_at: number;
}

/** Where an outbox keeps its notifications (the run's SQLite, or D1). */
export interface LaneStore {
  /** The urls with a pending notification. */
  lanes(): Promise<string[]>;
  head(url: string): Promise<QueuedNotification | null>;
  sent(row: QueuedNotification): Promise<void>;
  retry(row: QueuedNotification, at: number, error: string): Promise<void>;
  fail(row: QueuedNotification, error: string): Promise<void>;
  /** Gives up everything pending for `url` (its entry is gone or disabled). */
  failAll(url: string, error: string): Promise<void>;
}

export interface LaneDeps {
  endpoints: readonly WebhookEndpoint[];
  settings: RetrySettings;
  /** The disabled entries' fingerprints by url (read once per drain; empty when D1 could not say). */
  disabled: Map<string, string>;
  /** Records one attempt in D1 (and, for a 410, disables the entry); never throws. */
  recorded: (url: string, result: AttemptResult, fingerprint: string, at: number) => Promise<void>;
  clock: () => number;
  fetcher?: typeof fetch;
}

/** Delivers every lane until each is empty or its head must wait; resolves when all lanes stopped. */
export async function drainLanes(store: LaneStore, deps: LaneDeps): Promise<void> {
  const urls = await store.lanes();
  await Promise.all(urls.map((url) => drainLane(store, deps, url)));
}

async function drainLane(store: LaneStore, deps: LaneDeps, url: string): Promise<void> {
  const endpoint = deps.endpoints.find((e) => e.url === url);
  if (endpoint === undefined) {
    await store.failAll(url, "endpoint_removed");
    return;
  }
  const fingerprint = await entryFingerprint(endpoint);
  if (deps.disabled.get(url) === fingerprint) {
    await store.failAll(url, "endpoint_disabled");
    return;
  }
  for (;;) {
    const head = await store.head(url);
    if (head === null) return;
    const now = deps.clock();
    if (head.next_attempt_at > now) return;
    if (now >= head.enqueued_at + deps.settings.WEBHOOK_DELIVERY_MAX_MS) {
      await store.fail(head, "delivery_deadline_passed");
      continue;
    }
    const result = await attemptDelivery(endpoint, head.msg_id, head.body, now, deps.fetcher);
    const after = deps.clock();
    await raceDeadline(RECORD_WAIT_MS, deps.recorded(url, result, fingerprint, after), () => undefined);
    if (result.kind === "delivered") {
      await store.sent(head);
      continue;
    }
    if (result.kind === "gone") {
      logger.warn("webhooks: the receiver answered 410; the endpoint is disabled until its WEBHOOKS entry changes", {
        msg_id: head.msg_id,
      });
      deps.disabled.set(url, fingerprint);
      await store.failAll(url, "endpoint_disabled");
      return;
    }
    const at = nextAttemptAt(deps.settings, head.enqueued_at, head.attempts + 1, after, result.retryAfterMs);
    if (at === null) {
      await store.fail(head, `delivery_deadline_passed: ${result.error}`);
      continue;
    }
    await store.retry(head, at, result.error);
    return;
  }
}
