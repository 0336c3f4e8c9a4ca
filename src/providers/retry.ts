// Our retry policy for model calls, the only one: the SDK clients are built
// with `maxRetries: 0`. A model call changes nothing, so it is safe to repeat
// (a tool call is not, and is never retried here or anywhere). Retried: 429,
// 408, 409, 5xx, network errors and timeouts, with exponential backoff and
// jitter, honouring `retry-after-ms` / `retry-after` (capped by maxDelayMs).
// Not retried: every other 4xx (the same request would be refused again).
// After the last attempt the caller gets a ModelError a person can read.
import { ModelError, type ModelErrorCode, type ModelProviderName } from "./model-error";
import type { RetryPolicy } from "./model-provider";

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
  const exponential = Math.min(cap, Math.max(0, policy.baseDelayMs) * 2 ** retryIndex);
  // Half fixed, half random: never a thundering herd, never a zero wait.
  return Math.round(exponential / 2 + random() * (exponential / 2));
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

/** Waits `ms`, or rejects as soon as the signal fires. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
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
