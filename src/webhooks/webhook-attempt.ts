// One webhook delivery attempt (contract section 26), the Standard Webhooks
// format: a POST of the notification's body with `webhook-id` (fixed across
// the notification's attempts), `webhook-timestamp` (this attempt's time, in
// integer Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>">`, once per secret, space-separated), signed afresh
// by the `standardwebhooks` package on every attempt. A redirect is never
// followed (a 3xx fails), the attempt is abandoned after 15 s, and at most
// 64 KiB of the answer is read. Also: when to try again after a failure.
import { Webhook } from "standardwebhooks";
import { backoffMs } from "../schedule/deadline";

/** Contract section 26: one attempt's bound, and the most of an answer read. */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 15_000;
const MAX_ANSWER_BYTES = 64 * 1024;

/** What one attempt came to. `status` is the HTTP status, or null when none came (network, timeout). */
export type AttemptResult =
  | { kind: "delivered"; status: number }
  /** 410: the receiver asked never to be sent anything again (the endpoint is disabled). */
  | { kind: "gone"; status: 410 }
  /** Anything else; `retryAfterMs` from a 429's or 503's Retry-After. */
  | { kind: "failed"; status: number | null; error: string; retryAfterMs?: number };

export interface AttemptTarget {
  url: string;
  /** The endpoint's secrets, newest first (`whsec_…`). */
  secrets: readonly string[];
}

/** The three Standard Webhooks headers of one attempt, signed now. */
function signedHeaders(msgId: string, body: string, secrets: readonly string[], now: Date): Record<string, string> {
  const signatures = secrets.map((secret) => new Webhook(secret).sign(msgId, now, body));
  return {
    "webhook-id": msgId,
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": signatures.join(" "),
  };
}

/** Retry-After as milliseconds (delta seconds or an HTTP date), or undefined. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** Reads and drops at most MAX_ANSWER_BYTES of the answer, then lets the rest go. */
async function drainAnswer(response: Response): Promise<void> {
  const reader = response.body?.getReader();
  if (!reader) return;
  let read = 0;
  try {
    while (read < MAX_ANSWER_BYTES) {
      const chunk = await reader.read();
      if (chunk.done) return;
      read += chunk.value.byteLength;
    }
    await reader.cancel();
  } catch {
    // The answer's body does not matter; its status does.
  }
}

/** Sends one attempt; never throws. */
export async function attemptDelivery(
  target: AttemptTarget,
  msgId: string,
  body: string,
  now: number,
  fetcher: typeof fetch = fetch,
): Promise<AttemptResult> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), WEBHOOK_ATTEMPT_TIMEOUT_MS);
  try {
    const response = await fetcher(target.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...signedHeaders(msgId, body, target.secrets, new Date(now)) },
      body,
      redirect: "manual",
      signal: controller.signal,
    });
    await drainAnswer(response);
    const { status } = response;
    if (status >= 200 && status < 300) return { kind: "delivered", status };
    if (status === 410) return { kind: "gone", status };
    const after = status === 429 || status === 503 ? retryAfterMs(response.headers.get("retry-after"), Date.now()) : undefined;
    const error =
      status >= 300 && status < 400 ? `the receiver answered ${status} (redirects are not followed)` : `the receiver answered ${status}`;
    return { kind: "failed", status, error, ...(after === undefined ? {} : { retryAfterMs: after }) };
  } catch (err) {
    const error = controller.signal.aborted
      ? `no answer within ${WEBHOOK_ATTEMPT_TIMEOUT_MS} ms`
      : err instanceof Error
        ? err.message
        : String(err);
    return { kind: "failed", status: null, error };
  } finally {
    clearTimeout(timer);
  }
}

export interface RetrySettings {
  WEBHOOK_DELIVERY_MAX_MS: number;
  WEBHOOK_RETRY_BASE_MS: number;
  WEBHOOK_RETRY_MAX_INTERVAL_MS: number;
}

/**
 * After the `attempts`-th failed attempt of a notification enqueued at
 * `enqueuedAt`: when to try again, or null when it is given up (past
 * WEBHOOK_DELIVERY_MAX_MS). Never sooner than a Retry-After; the last try is at the deadline.
 */
export function nextAttemptAt(
  settings: RetrySettings,
  enqueuedAt: number,
  attempts: number,
  now: number,
  retryAfter: number | undefined,
): number | null {
  const deadline = enqueuedAt + settings.WEBHOOK_DELIVERY_MAX_MS;
  if (now >= deadline) return null;
  const backoff = backoffMs({ baseMs: settings.WEBHOOK_RETRY_BASE_MS, capMs: settings.WEBHOOK_RETRY_MAX_INTERVAL_MS }, attempts - 1);
  const wait = Math.max(backoff, retryAfter ?? 0);
  if (retryAfter !== undefined && now + retryAfter > deadline) return null;
  return Math.min(now + wait, deadline);
}
