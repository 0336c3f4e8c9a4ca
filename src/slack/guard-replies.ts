// The ephemeral answers of the Slack app's guards that run before a request
// reaches a run (contract sections 18 and 19): a user from another
// organisation, a Slack trigger over TRIGGER_RATE_PER_MINUTE, and one under a
// halt (contract section 23). Pure.
import { mrkdwn, type SlackText, untrustedCode } from "./slack-text";

export const EXTERNAL_USER_TEXT = mrkdwn`People from outside this organisation may not decide here. Nothing was changed.`;

export function rateLimitedText(perMinute: number, retryAfterSeconds: number): SlackText {
  return mrkdwn`You started more than ${Math.trunc(perMinute)} runs within a minute, so this message started nothing. Try again in ${Math.trunc(retryAfterSeconds)} s.`;
}

/** Contract section 23: a Slack trigger under a halt of `all` or of its principal starts nothing. */
export function haltedTriggerText(haltId: string): SlackText {
  const id = untrustedCode(haltId, 100);
  return mrkdwn`Mutations are halted (${id}), so this message started nothing. An admin releases the halt (approved-exec release ${id}).`;
}
