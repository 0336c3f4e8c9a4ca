// Which person a Slack user is (contract section 19): `users.info` (scope
// users:read.email) through the app's Web API client; a confirmed email x
// makes them the person `access:x`, the same one as their Access login or a
// token they own. Without a confirmed email they are a person of their own.
// A lookup that fails answers "nobody" (null): a person who cannot be told
// apart from their other credentials must not count twice towards a quorum
// nor pass self_approval: false, so the failure closes, it does not open.
import type { SlackAPIClient } from "slack-web-api-client";
import { logger } from "../operate/logger";
import { type Person, personOf } from "../policy/persons";

/** The person of the Slack user `userId` whose principal id is `principalId`. */
export async function slackPersonOf(client: SlackAPIClient, principalId: string, userId: string): Promise<Person> {
  try {
    const answer = await client.users.info({ user: userId });
    const email = answer.user?.is_email_confirmed === true ? answer.user.profile?.email : undefined;
    return personOf(principalId, { verified_email: email });
  } catch (err) {
    logger.warn("slack: users.info failed; the user counts as no person for this decision", { error: (err as Error).message });
    return null;
  }
}
