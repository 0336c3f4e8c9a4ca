// The Slack installation's team (contract section 19): SLACK_TEAM_ID, or,
// when unset, the team `auth.test` names for the bot token (its enterprise
// on Enterprise Grid, else its workspace). Asked once per bot token and kept
// for the isolate's life; a failed or slow answer is not kept, so the next
// request asks again, and until the team is known the caller acknowledges
// and does nothing.
import { withTimeout } from "./web-api";

/** auth.test is asked inside Slack's 3-second acknowledgement; past this the request is acknowledged and does nothing. */
const AUTH_TEST_TIMEOUT_MS = 1_500;
const TEAM_ID = /^[TE][A-Z0-9]{1,30}$/;

export interface AuthTestAnswer {
  team_id?: string;
  enterprise_id?: string;
}

/** Per bot token: the team, or the question still under way. Memory only (the token never leaves the isolate). */
const known = new Map<string, string | Promise<string | null>>();

export async function installationTeam(
  settings: { SLACK_TEAM_ID?: string | undefined; SLACK_BOT_TOKEN: string },
  authTest: () => Promise<AuthTestAnswer>,
): Promise<string | null> {
  if (settings.SLACK_TEAM_ID !== undefined) return settings.SLACK_TEAM_ID;
  const cached = known.get(settings.SLACK_BOT_TOKEN);
  if (cached !== undefined) return cached;
  const asking = withTimeout("auth.test", AUTH_TEST_TIMEOUT_MS, authTest)
    .then((answer) => {
      const team = answer.enterprise_id || answer.team_id;
      return team !== undefined && TEAM_ID.test(team) ? team : null;
    })
    .catch(() => null);
  known.set(settings.SLACK_BOT_TOKEN, asking);
  const team = await asking;
  if (team === null) known.delete(settings.SLACK_BOT_TOKEN);
  else known.set(settings.SLACK_BOT_TOKEN, team);
  return team;
}
