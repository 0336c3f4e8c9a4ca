// Deadlines and backoff, the one helper every bounded wait uses: a deadline a
// promise races (storage guard, Slack calls, health probes), an abortable
// sleep, and exponential backoff (model retries, the Slack outbox, background
// storage work, index and trace flushes). Written by hand: each is a few
// lines over setTimeout, and the libraries that offer them (p-timeout,
// p-retry, ...) bring their own policies and error types for no gain here.

/** What a deadline's `passed` promise resolves to. */
export const DEADLINE_PASSED: unique symbol = Symbol("deadline passed");

export interface Deadline {
  /** Resolves (never rejects) once `waitMs` have passed. */
  passed: Promise<typeof DEADLINE_PASSED>;
  remainingMs(): number;
  /** Stops the timer (call it once the race is decided). */
  clear(): void;
}

export function deadline(waitMs: number): Deadline {
  const endsAt = Date.now() + waitMs;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const passed = new Promise<typeof DEADLINE_PASSED>((resolve) => {
    timer = setTimeout(() => resolve(DEADLINE_PASSED), waitMs);
  });
  return {
    passed,
    remainingMs: () => Math.max(0, endsAt - Date.now()),
    clear: () => (timer === null ? undefined : clearTimeout(timer)),
  };
}

/** `work`'s value, or `onTimeout()`'s once `waitMs` passed first (the late work is left to its caller's catch). */
export async function raceDeadline<T, U>(waitMs: number, work: Promise<T>, onTimeout: () => U): Promise<T | U> {
  const bound = deadline(waitMs);
  try {
    const first = await Promise.race([work, bound.passed]);
    return first === DEADLINE_PASSED ? onTimeout() : (first as T);
  } finally {
    bound.clear();
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it fires. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
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

/** Backoff: the first wait and the cap of the doubling waits. */
export interface Backoff {
  baseMs: number;
  capMs: number;
}

/** Doubling-exponent ceiling: past it the cap is reached anyway, and 2 ** n stays finite. */
const MAX_DOUBLINGS = 30;

/**
 * The wait before retry number `retryIndex + 1` (0 for the first retry):
 * base × 2^retryIndex, capped. With `random`, "equal jitter": half fixed, half
 * random, so never a thundering herd and never a zero wait.
 */
export function backoffMs(backoff: Backoff, retryIndex: number, random?: () => number): number {
  const cap = Math.max(0, backoff.capMs);
  const exponential = Math.min(cap, Math.max(0, backoff.baseMs) * 2 ** Math.min(Math.max(0, retryIndex), MAX_DOUBLINGS));
  return random === undefined ? exponential : Math.round(exponential / 2 + random() * (exponential / 2));
}
