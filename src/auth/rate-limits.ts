// The two rate limits of contract section 18, as the Worker asks them: failed
// authentications per client address (CF-Connecting-IP) and triggers per
// principal. Each key is counted in its own RateLimiter Durable Object; a
// refusal is 429 rate_limited with Retry-After. A valid credential is never
// counted here, so nobody can lock an operator out.
import type { Env } from "../config/env";
import { apiError } from "../base/api-error";
import { AUTH_FAILURE_LIMIT, RATE_WINDOW_MS } from "./rate-limit";

/** The client address a failure is counted under (Cloudflare's edge sets CF-Connecting-IP). */
function clientAddress(headers: Headers): string {
  return headers.get("cf-connecting-ip")?.trim() || "unknown";
}

function limiter(env: Env, key: string) {
  return env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(key));
}

function rateLimited(message: string, retryAfterSeconds: number) {
  return apiError(429, { error: "rate_limited", message, retry_after_seconds: retryAfterSeconds });
}

/**
 * Counts one failed authentication from the request's address: null while
 * under the limit (the caller answers its 401), else the 429 to answer.
 */
export async function countAuthFailure(env: Env, headers: Headers): Promise<ReturnType<typeof apiError> | null> {
  const address = clientAddress(headers);
  const verdict = await limiter(env, `auth-failures:${address}`).hit(AUTH_FAILURE_LIMIT, RATE_WINDOW_MS);
  if (verdict.allowed) return null;
  return rateLimited(
    `More than ${AUTH_FAILURE_LIMIT} failed authentications from ${address} within ${RATE_WINDOW_MS / 1_000} s; wait ${verdict.retry_after_seconds} s, then send a valid credential.`,
    verdict.retry_after_seconds,
  );
}

/**
 * Counts one trigger by `principal` against TRIGGER_RATE_PER_MINUTE (0: off):
 * null while under the limit, else the seconds until its window ends. The
 * Slack app answers a refusal with an ephemeral message (contract section 18).
 */
export async function countTriggerRetryAfter(env: Env, principal: string, perMinute: number): Promise<number | null> {
  if (perMinute === 0) return null;
  const verdict = await limiter(env, `triggers:${principal}`).hit(perMinute, RATE_WINDOW_MS);
  return verdict.allowed ? null : verdict.retry_after_seconds;
}

/** Counts one trigger by `principal` against TRIGGER_RATE_PER_MINUTE (0: off); throws the 429 past it. */
export async function countTrigger(env: Env, principal: string, perMinute: number): Promise<void> {
  const retryAfter = await countTriggerRetryAfter(env, principal, perMinute);
  if (retryAfter !== null) {
    throw rateLimited(
      `${principal} started more than ${perMinute} runs within a minute (TRIGGER_RATE_PER_MINUTE); try again in ${retryAfter} s.`,
      retryAfter,
    );
  }
}
