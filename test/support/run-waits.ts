// Waits the end-to-end files share: a run's summary polled until one of its
// fields reaches a value, within a bound (a test never sleeps for it). Each
// file passes its own way of reading the summary (over HTTP, through the
// client, against another server).
import { expect } from "vitest";

/** Reads a run's summary (GET /api/runs/:id). */
// biome-ignore lint/suspicious/noExplicitAny: each file's summary reader has its own type; only the polled fields matter here.
type SummaryReader = (runId: string) => Promise<any>;

const DEFAULT_TIMEOUT_MS = 10_000;

/** Until the summary's `pick` is `expected`. */
async function untilSummary(
  summary: SummaryReader,
  runId: string,
  pick: (summary: Record<string, unknown>) => unknown,
  expected: unknown,
  timeoutMs: number,
): Promise<void> {
  await expect.poll(async () => pick(await summary(runId)), { timeout: timeoutMs }).toBe(expected);
}

/** Until the run completed. */
export function untilCompleted(summary: SummaryReader, runId: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
  return untilSummary(summary, runId, (s) => s.status, "completed", timeoutMs);
}

/** Until no Slack post of the run waits in its outbox (contract section 14). */
export function untilPostsDelivered(summary: SummaryReader, runId: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
  return untilSummary(summary, runId, (s) => s.slack_posts_pending, 0, timeoutMs);
}
