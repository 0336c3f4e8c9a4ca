// The Worker's own counters of section 22: every 401 it answers counts in
// aee_auth_failures_total and every 429 in aee_rate_limited_total. Counted
// from the response at the entry (src/index.ts), so whichever module refused
// (the bearer check, the console, the Slack signature, a rate limiter) is
// counted without each one knowing about metrics. One UPDATE off the
// response path (waitUntil); a failed count is logged and never fails the request.
import { logger } from "./logger";

const COUNTED: Readonly<Record<number, string>> = { 401: "aee_auth_failures_total", 429: "aee_rate_limited_total" };

export interface CounterDb {
  prepare(query: string): { bind(...values: unknown[]): { run(): Promise<unknown> } };
}

/** Counts `response` when it is a refusal; hands the response back unchanged. */
export function countRefusal(response: Response, db: CounterDb, waitUntil: (p: Promise<unknown>) => void): Response {
  const name = COUNTED[response.status];
  if (name === undefined) return response;
  waitUntil(
    db
      .prepare(`UPDATE metric_counters SET value = value + 1 WHERE name = ? AND label = ''`)
      .bind(name)
      .run()
      .catch((err: unknown) => logger.warn("metrics: a refusal could not be counted", { metric: name, error: String(err) })),
  );
  return response;
}
