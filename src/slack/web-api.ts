// The one way this app reaches Slack's Web API: a slack-web-api-client built
// with SLACK_API_BASE_URL (so a local stand-in sees every call) and no retry
// handlers (its default rate-limit handler sleeps inside the call; the outbox
// retries durably instead). Plus the classification of a failed call into
// "try again later" and "Slack refused it for good".
import { SLACK_LIBRARY_LOG_LEVEL } from "./library-logging";
import { SlackAPIClient, SlackAPIConnectionError, SlackAPIError } from "slack-web-api-client";
import { raceDeadline } from "../schedule/deadline";

export interface SlackClientSettings {
  SLACK_BOT_TOKEN: string;
  SLACK_API_BASE_URL: string;
}

export function createSlackClient(settings: SlackClientSettings): SlackAPIClient {
  return new SlackAPIClient(settings.SLACK_BOT_TOKEN, {
    baseUrl: settings.SLACK_API_BASE_URL,
    retryHandlers: [],
    logLevel: SLACK_LIBRARY_LOG_LEVEL,
  });
}

/** One failed Web API call, as the outbox sees it. */
export type CallFailure =
  /** 429: wait at least retry_after_ms. */
  | { kind: "rate_limited"; retry_after_ms: number; detail: string }
  /** 5xx, a network error, a lost answer, or an error code Slack documents as temporary. */
  | { kind: "transient"; detail: string }
  /** Slack refused the call and will refuse it again (channel_not_found, not_in_channel, invalid_auth...). */
  | { kind: "permanent"; detail: string };

/** Without a Retry-After header Slack's 429 still means "not now"; wait this long at least. */
const DEFAULT_RETRY_AFTER_MS = 1_000;
/** `ok: false` codes Slack documents as temporary (the call may succeed if repeated). */
const TRANSIENT_ERROR_CODES = new Set([
  "ratelimited",
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
  "team_added_to_org",
]);

/** Thrown by withTimeout when Slack did not answer in time; the call may still have happened. */
class SlackCallTimeout extends Error {
  constructor(
    readonly apiName: string,
    readonly timeoutMs: number,
  ) {
    super(`${apiName} did not answer within ${timeoutMs} ms`);
  }
}

export function classifyFailure(err: unknown): CallFailure {
  if (err instanceof SlackAPIConnectionError) {
    if (err.status === 429) {
      const header = err.headers?.get("retry-after");
      const seconds = header === null || header === undefined ? Number.NaN : Number(header);
      const retryAfterMs = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : DEFAULT_RETRY_AFTER_MS;
      return { kind: "rate_limited", retry_after_ms: retryAfterMs, detail: `${err.apiName}: HTTP 429` };
    }
    // status -1: the request never got an answer (network error).
    if (err.status === -1 || err.status >= 500)
      return { kind: "transient", detail: `${err.apiName}: ${err.status === -1 ? "network error" : `HTTP ${err.status}`}` };
    return { kind: "permanent", detail: `${err.apiName}: HTTP ${err.status}` };
  }
  if (err instanceof SlackAPIError) {
    return TRANSIENT_ERROR_CODES.has(err.error)
      ? { kind: "transient", detail: `${err.apiName}: ${err.error}` }
      : { kind: "permanent", detail: err.error };
  }
  if (err instanceof SlackCallTimeout) return { kind: "transient", detail: err.message };
  // Anything else thrown by fetch (DNS, reset) is a network error.
  return { kind: "transient", detail: err instanceof Error ? err.message : String(err) };
}

/**
 * Bounds one call: slack-web-api-client takes no AbortSignal, so a hung
 * connection is abandoned (not cancelled) after `timeoutMs`. Its answer, if
 * it ever comes, is ignored; the contract accepts that such a post may appear
 * twice.
 */
export async function withTimeout<T>(apiName: string, timeoutMs: number, call: () => Promise<T>): Promise<T> {
  return raceDeadline(timeoutMs, call(), () => {
    throw new SlackCallTimeout(apiName, timeoutMs);
  });
}
