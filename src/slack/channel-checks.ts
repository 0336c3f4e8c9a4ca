// Whether a channel passes the external-channel rule (contract section 19),
// learned once per channel and kept in D1 (migration 0023): the run's own
// check (src/slack/outbox.ts, before a run's first post) records its verdict,
// and the Home tab (src/slack/home-publish.ts) reads it, asking
// conversations.info only for a channel nobody checked yet.
import type { SlackAPIClient } from "slack-web-api-client";
import { classifyFailure, withTimeout } from "./web-api";

/** A lookup's bound (conversations.info), as the Home tab's other calls. */
const CALL_TIMEOUT_MS = 10_000;

/** conversations.info's flags: shared with another organisation (not an org-wide share of one's own) does not pass. */
export function channelPasses(
  c: { is_ext_shared?: boolean; is_pending_ext_shared?: boolean; is_shared?: boolean; is_org_shared?: boolean } | undefined,
): boolean {
  return c !== undefined && !(c.is_ext_shared || c.is_pending_ext_shared || (c.is_shared && !c.is_org_shared));
}

/** Records a verdict (the latest wins); never throws. */
export async function recordChannelCheck(db: D1Database, channel: string, allowed: boolean, at: number): Promise<void> {
  try {
    await db
      .prepare(
        `INSERT INTO slack_channel_checks (channel_id, allowed, checked_at) VALUES (?, ?, ?)
         ON CONFLICT (channel_id) DO UPDATE SET allowed = excluded.allowed, checked_at = excluded.checked_at`,
      )
      .bind(channel, allowed ? 1 : 0, new Date(at).toISOString())
      .run();
  } catch {
    // Not kept: the next reader asks Slack again.
  }
}

/** What is known of `channels`: passes or not, or to be asked again at a time (Slack rate-limited or failed the lookup). */
export type ChannelVerdicts = { allowed: Map<string, boolean>; retryAt: number | null };

/** Each channel's verdict: kept ones from D1 (one statement), the others asked once and kept. */
export async function channelVerdicts(db: D1Database, client: SlackAPIClient, channels: string[], now: number): Promise<ChannelVerdicts> {
  const allowed = new Map<string, boolean>();
  if (channels.length === 0) return { allowed, retryAt: null };
  const kept = await db
    .prepare(`SELECT channel_id, allowed FROM slack_channel_checks WHERE channel_id IN (SELECT value FROM json_each(?))`)
    .bind(JSON.stringify(channels))
    .all<{ channel_id: string; allowed: number }>();
  for (const row of kept.results) allowed.set(row.channel_id, row.allowed === 1);
  let retryAt: number | null = null;
  for (const channel of channels) {
    if (allowed.has(channel)) continue;
    try {
      const info = await withTimeout("conversations.info", CALL_TIMEOUT_MS, () => client.conversations.info({ channel }));
      const passes = channelPasses(info.channel);
      allowed.set(channel, passes);
      await recordChannelCheck(db, channel, passes, now);
    } catch (err) {
      const failure = classifyFailure(err);
      // Cannot be looked up: not shown (the thread's own guard would not post there either).
      if (failure.kind === "permanent") allowed.set(channel, false);
      else {
        // Rate-limited or down for now: asked again after Retry-After (or a short pause); nothing decided yet.
        const at = now + (failure.kind === "rate_limited" ? failure.retry_after_ms : TRANSIENT_RETRY_MS);
        retryAt = retryAt === null ? at : Math.min(retryAt, at);
      }
    }
  }
  return { allowed, retryAt };
}

/** After a lookup that failed for now (not rate-limited), how long until it is asked again. */
const TRANSIENT_RETRY_MS = 5_000;
