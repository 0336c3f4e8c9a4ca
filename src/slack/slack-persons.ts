// Which person a Slack user is (contract section 19): `users.info` (scope
// users:read.email) through the app's Web API client; a confirmed email x
// makes them the person `access:x` (the same one as their Access login or a
// token they minted for themselves) when their team is in
// SLACK_EMAIL_TRUSTED_TEAMS. Otherwise they are a person of their own. The
// rule itself is src/policy/persons.ts; this only looks the email up.
// A lookup that fails answers "nobody" (null): a person who cannot be told
// apart from their other credentials must not count twice towards a quorum
// nor pass self_approval: false, so the failure closes, it does not open.
import type { SlackAPIClient } from "slack-web-api-client";
import { logger } from "../operate/logger";
import { type Person, personOf } from "../policy/persons";

/** The confirmed email of Slack user `userId`, or null when Slack confirms none; throws when the lookup fails. */
export async function verifiedEmailOf(client: SlackAPIClient, userId: string): Promise<string | null> {
  const answer = await client.users.info({ user: userId });
  return answer.user?.is_email_confirmed === true ? (answer.user.profile?.email ?? null) : null;
}

/** The person of the Slack user `userId` whose principal id is `principalId`, with the teams whose emails are trusted. */
export async function slackPersonOf(
  client: SlackAPIClient,
  principalId: string,
  userId: string,
  trustedTeams: readonly string[],
): Promise<Person> {
  try {
    return personOf(principalId, { verified_email: await verifiedEmailOf(client, userId), trusted_teams: trustedTeams });
  } catch (err) {
    logger.warn("slack: users.info failed; the user counts as no person for this decision", { error: (err as Error).message });
    return null;
  }
}
