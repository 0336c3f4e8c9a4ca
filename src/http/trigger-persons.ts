// Who a trigger's run is for, as persons (contract section 19): the
// requester's person and its `on_behalf_of`'s, found once when the run starts
// and kept on the run, so every later decision compares persons, not text.
// The rule is src/policy/persons.ts; this looks up what it needs: a named
// token's row (for an `on_behalf_of` naming `token:<name>`), the installation's
// team (for a bare Slack user id) and a Slack user's verified email (users.info).
// Slack is asked only where a tool forbids self-approval (the only rule these
// persons serve), as the Slack app does for its own requesters.
import type { Principal } from "../auth/principal";
import { getToken } from "../auth/token-store";
import type { HostConfig } from "../config/config";
import type { Env } from "../config/env";
import { logger } from "../operate/logger";
import {
  emailTrustedTeams,
  onBehalfOfPerson,
  onBehalfOfPrincipal,
  type PersonFacts,
  type Person,
  restrictingPersonOf,
} from "../policy/persons";
import { installationTeam } from "../slack/installation-team";
import { verifiedEmailOf } from "../slack/slack-persons";
import { createSlackClient } from "../slack/web-api";

const SLACK_USER = /^slack:[TE][A-Z0-9]+:([UW][A-Z0-9]+)$/;

export interface TriggerPersons {
  requester_person: Person;
  on_behalf_of_person?: string;
}

/** Slack lookups for one trigger: the installation's team, and a Slack principal's verified email. */
interface SlackFacts {
  team: string | null;
  emailOf(principalId: string): Promise<string | null>;
}

/** The Slack facts of this deployment, or null when Slack is off (then nobody's email is known). */
async function slackFacts(config: HostConfig): Promise<SlackFacts | null> {
  const { SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET } = config;
  if (SLACK_BOT_TOKEN === undefined || SLACK_SIGNING_SECRET === undefined) return null;
  const client = createSlackClient({ SLACK_BOT_TOKEN, SLACK_API_BASE_URL: config.SLACK_API_BASE_URL });
  const team = await installationTeam({ SLACK_TEAM_ID: config.SLACK_TEAM_ID, SLACK_BOT_TOKEN }, () => client.auth.test());
  return {
    team,
    async emailOf(principalId) {
      const user = SLACK_USER.exec(principalId)?.[1];
      if (user === undefined) return null;
      try {
        return await verifiedEmailOf(client, user);
      } catch (err) {
        // Not known: the Slack user stays a person of their own (their principal id still restricts).
        logger.warn("trigger: users.info failed; the Slack user is compared by their principal id", { error: (err as Error).message });
        return null;
      }
    },
  };
}

/** The facts persons.ts needs about a principal id that may be a Slack user (its email) or a token with a Slack owner. */
async function factsOf(
  principalId: string,
  known: PersonFacts,
  slack: SlackFacts | null,
  trusted: readonly string[],
): Promise<PersonFacts> {
  const slackId = principalId.startsWith("slack:") ? principalId : known.owner?.startsWith("slack:") ? known.owner : undefined;
  const verified_email = slackId !== undefined && slack !== null ? await slack.emailOf(slackId) : null;
  return { ...known, verified_email, trusted_teams: trusted };
}

/** The requester's person and its `on_behalf_of`'s, for the run's record. */
export async function triggerPersons(
  env: Env,
  config: HostConfig,
  principal: Principal,
  onBehalfOf: string | undefined,
): Promise<TriggerPersons> {
  const restricts = Object.values(config.TOOL_POLICY).some((entry) => entry.self_approval === false);
  const slack = restricts ? await slackFacts(config) : null;
  const trusted = emailTrustedTeams(config.SLACK_EMAIL_TRUSTED_TEAMS, slack?.team);
  const own = { owner: principal.owner, owned_by_creator: principal.owned_by_creator };
  const requester_person = restrictingPersonOf(principal.id, await factsOf(principal.id, own, slack, trusted));
  if (onBehalfOf === undefined) return { requester_person };
  const named = onBehalfOfPrincipal(onBehalfOf, slack?.team);
  const token = named.startsWith("token:") && named !== "token:root" ? await getToken(env.DB, named.slice("token:".length)) : null;
  const tokenFacts = token === null ? {} : { owner: token.owner, owned_by_creator: token.owned_by_creator };
  const facts = await factsOf(named, tokenFacts, slack, trusted);
  return { requester_person, on_behalf_of_person: onBehalfOfPerson(onBehalfOf, slack?.team, facts) };
}
