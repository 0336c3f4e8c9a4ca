// Which Slack requests the app acts on (contract section 19, "Slack scope"),
// checked before anything else a verified event or click does. Pure: given
// the verified body, the installation's team and SLACK_ALLOW_EXTERNAL_USERS,
// answer
//  - "foreign_team": the request comes from another team (it starts and
//    decides nothing, app_uninstalled and tokens_revoked included);
//  - "external_user": the acting user is from another organisation (only
//    with SLACK_ALLOW_EXTERNAL_USERS=true may they start or decide);
//  - "in_scope": with the acting user's principal (`slack:<team>:<user>`),
//    when the request names a user.
// A team is the enterprise id on Enterprise Grid, else the workspace id.
import { z } from "zod";
import { slackPrincipal } from "./slack-principal";

export type SlackScope =
  | { kind: "foreign_team"; team: string | undefined }
  | { kind: "external_user"; user: string; user_team: string }
  | { kind: "in_scope"; principal: string | undefined };

/** The team a request came from, and the acting user with their own team (both mapped to the enterprise on Grid). */
export interface RequestTeams {
  team: string | undefined;
  user?: { id: string; team: string };
}

const id = z.string().min(1).max(200);
/** The fields of an Events API envelope the scope reads; a body of another shape is no team's (foreign). */
const eventBodySchema = z
  .object({
    team_id: id.optional(),
    enterprise_id: id.nullish(),
    authorizations: z
      .array(z.object({ team_id: id.nullish(), enterprise_id: id.nullish() }).loose())
      .max(100)
      .optional(),
    event: z.object({ user: z.unknown().optional(), user_team: id.optional(), team: id.optional() }).loose().optional(),
  })
  .loose();
/** The fields of a block_actions / view_submission payload the scope reads. */
const interactionBodySchema = z
  .object({
    user: z.object({ id: id.optional(), team_id: id.optional() }).loose().optional(),
    team: z.object({ id: id.optional(), enterprise_id: id.optional() }).loose().nullish(),
    enterprise: z.object({ id: id.optional() }).loose().nullish(),
  })
  .loose();

/** A workspace id mapped to its enterprise when the request says which enterprise it belongs to. */
function enterpriseOf(team: string, known: ReadonlyMap<string, string>): string {
  return team.startsWith("E") ? team : (known.get(team) ?? team);
}

/**
 * An Events API envelope: its team is the envelope's enterprise, else its
 * team_id; the user's team is the event's user_team, else its team, else the
 * envelope's team_id, mapped to the enterprise the envelope or its
 * authorizations name for that workspace.
 */
export function eventTeams(raw: unknown): RequestTeams {
  const parsed = eventBodySchema.safeParse(raw);
  if (!parsed.success) return { team: undefined };
  const body = parsed.data;
  const known = new Map<string, string>();
  for (const a of body.authorizations ?? []) if (a.team_id && a.enterprise_id) known.set(a.team_id, a.enterprise_id);
  if (body.team_id && body.enterprise_id) known.set(body.team_id, body.enterprise_id);
  const team = body.enterprise_id || body.team_id || undefined;
  const event = body.event;
  const user = typeof event?.user === "string" ? event.user : undefined;
  const rawUserTeam = event?.user_team ?? event?.team ?? body.team_id;
  if (user === undefined || rawUserTeam === undefined) return { team };
  return { team, user: { id: user, team: enterpriseOf(rawUserTeam, known) } };
}

/**
 * A block_actions or view_submission payload: its team is the enterprise,
 * else the workspace the click came from; the user's team is `user.team_id`
 * (Slack already reports the enterprise id there on Grid).
 */
export function interactionTeams(raw: unknown): RequestTeams {
  const parsed = interactionBodySchema.safeParse(raw);
  if (!parsed.success) return { team: undefined };
  const body = parsed.data;
  const known = new Map<string, string>();
  const enterprise = body.enterprise?.id ?? body.team?.enterprise_id;
  if (body.team?.id && enterprise) known.set(body.team.id, enterprise);
  const team = enterprise || body.team?.id || undefined;
  const user = body.user?.id;
  const rawUserTeam = body.user?.team_id ?? body.team?.id;
  if (user === undefined || rawUserTeam === undefined) return { team };
  return { team, user: { id: user, team: enterpriseOf(rawUserTeam, known) } };
}

export function scopeOf(teams: RequestTeams, installationTeam: string, allowExternalUsers: boolean): SlackScope {
  if (teams.team !== installationTeam) return { kind: "foreign_team", team: teams.team };
  if (teams.user === undefined) return { kind: "in_scope", principal: undefined };
  if (teams.user.team !== installationTeam && !allowExternalUsers)
    return { kind: "external_user", user: teams.user.id, user_team: teams.user.team };
  return { kind: "in_scope", principal: slackPrincipal(teams.user.team, teams.user.id) };
}
