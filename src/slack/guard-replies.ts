// The ephemeral answers of the Slack app's guards that run before a request
// reaches a run (contract sections 18 and 19): a user from another
// organisation, and a Slack trigger over TRIGGER_RATE_PER_MINUTE. Pure.
import { mrkdwn, type SlackText } from "./slack-text";

export const EXTERNAL_USER_TEXT = mrkdwn`People from outside this organisation may not decide here. Nothing was changed.`;

export function rateLimitedText(perMinute: number, retryAfterSeconds: number): SlackText {
  return mrkdwn`You started more than ${Math.trunc(perMinute)} runs within a minute, so this message started nothing. Try again in ${Math.trunc(retryAfterSeconds)} s.`;
}
