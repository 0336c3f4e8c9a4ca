// Our retry policy for model calls, the only one: the SDK clients are built
// with `maxRetries: 0`. A model call changes nothing, so it is safe to repeat
// (a tool call is not, and is never retried here or anywhere). Retried: 429,
// 408, 409, 5xx, network errors and timeouts, with exponential backoff and
// jitter, honouring `retry-after-ms` / `retry-after` (capped by maxDelayMs).
// Not retried: every other 4xx (the same request would be refused again).
// After the last attempt the caller gets a ModelError a person can read.
//
// Why not the SDKs' own retries (maxRetries), which also honour
// retry-after-ms / retry-after (checked in @anthropic-ai/sdk 1.14.0 and
// openai 6.30.1, node_modules/*/client.mjs, retryRequest):
//  - their backoff is private and fixed (0.5 s doubling to 8 s, up to 25 %
//    jitter; calculateDefaultRetryTimeoutMillis is `private` in both type
//    declarations): a network error or a timeout carries no retry-after, so
//    every such retry would sleep at least 375 ms, in tests too, and
//    our RetryPolicy (ProviderSettings.retry) could no longer shape it;
//  - openai's retryRequest sleeps without the request's AbortSignal
//    (`await sleep(timeoutMillis)`): a cancelled run would wait out a long
//    retry-after before its model call stopped; ours stops at once;
//  - neither caps a retry-after (a 120 s retry-after is slept in full);
//    ours caps it at maxDelayMs, within the run's deadline;
//  - the final error would not say how many attempts were made, which our
//    ModelError reports ("kept failing: HTTP 500 after 3 attempts").
// So this module stays; its waits and backoff come from the shared helper
// (src/schedule/deadline.ts).
import { ModelError, type ModelErrorCode, type ModelProviderName } from "./model-error";
import type { RetryPolicy } from "./model-types";
import { backoffMs, sleep } from "../schedule/deadline";

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 4, baseDelayMs: 500, maxDelayMs: 8_000 };

/** How one failed attempt is to be handled. */
export type AttemptFailure =
  /** The call can be made again; `what` names the failure in the final message ("HTTP 500", "a network error"). */
  | { retryable: true; what: string; detail?: string; status?: number; retryAfterMs?: number; code?: ModelErrorCode }
  /** Repeating it is pointless: the message is final. */
  | { retryable: false; message: string; code: ModelErrorCode; status?: number };

export interface RetryOptions {
  provider: ModelProviderName;
  policy: RetryPolicy;
  signal?: AbortSignal | undefined;
  /** Turns whatever an attempt threw into a decision; never throws. */
  classify(error: unknown): AttemptFailure;
  /** For tests: the jitter source (default Math.random). */
  random?: () => number;
}

/** The delay before retry number `retryIndex + 1`: exponential with "equal jitter", or the server's retry-after. */
export function retryDelayMs(
  policy: RetryPolicy,
  retryIndex: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const cap = Math.max(0, policy.maxDelayMs);
  if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0) {
    return Math.min(retryAfterMs, cap);
  }
  // Half fixed, half random: never a thundering herd, never a zero wait.
  return backoffMs({ baseMs: policy.baseDelayMs, capMs: cap }, retryIndex, random);
}

/**
 * The server's requested wait in ms: `retry-after-ms` (Anthropic, OpenAI),
 * else `retry-after` as seconds or as an HTTP date; undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: Headers | undefined | null, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "") {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers.get("retry-after");
  if (after === null || after.trim() === "") return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(after);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Whether an HTTP status is worth another attempt. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function abortedError(provider: ModelProviderName, attempts: number): ModelError {
  return new ModelError(`The model call (${provider}) was aborted before it finished.`, {
    provider,
    code: "aborted",
    attempts,
  });
}

/**
 * Runs `attempt` until it succeeds, a failure is final, the policy's attempts
 * are used up, or the signal fires. Only ever rejects with a ModelError.
 */
export async function withRetries<T>(options: RetryOptions, attempt: (attemptNumber: number) => Promise<T>): Promise<T> {
  const { provider, policy, signal } = options;
  const attempts = Math.max(1, Math.floor(policy.attempts));
  for (let n = 1; ; n++) {
    if (signal?.aborted) throw abortedError(provider, n - 1);
    let failure: AttemptFailure;
    try {
      return await attempt(n);
    } catch (error) {
      if (signal?.aborted) throw abortedError(provider, n);
      failure = safeClassify(options, error);
    }
    if (!failure.retryable) {
      throw new ModelError(failure.message, {
        provider,
        code: failure.code,
        attempts: n,
        ...(failure.status !== undefined ? { status: failure.status } : {}),
      });
    }
    if (n >= attempts) {
      const tail = failure.detail ? `: ${failure.detail}` : "";
      throw new ModelError(
        `The model provider (${provider}) kept failing: ${failure.what} after ${n} attempt${n === 1 ? "" : "s"}${tail}`,
        {
          provider,
          code: failure.code ?? "unavailable",
          attempts: n,
          ...(failure.status !== undefined ? { status: failure.status } : {}),
        },
      );
    }
    try {
      await sleep(retryDelayMs(policy, n - 1, failure.retryAfterMs, options.random), signal);
    } catch {
      throw abortedError(provider, n);
    }
  }
}

function safeClassify(options: RetryOptions, error: unknown): AttemptFailure {
  try {
    return options.classify(error);
  } catch {
    return { retryable: false, code: "bad_response", message: `The model provider (${options.provider}) failed in an unexpected way.` };
  }
}
