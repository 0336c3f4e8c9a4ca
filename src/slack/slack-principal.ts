// Slack users as principals (contract sections 18 and 19): `slack:<team>:<user>`,
// `<team>` the enterprise id on Enterprise Grid, else the workspace id. Pure:
// make and read the id, resolve SLACK_APPROVERS entries (`U…` for a user of
// the installation's team, or `<team>:<user>`) to principal ids, and find a
// Slack run's requester (runs started before principals carry only the
// Slack user id, a user of the installation's team).

const USER = /^[UW][A-Z0-9]{1,30}$/;
const PRINCIPAL = /^slack:([TE][A-Z0-9]{1,30}):([UW][A-Z0-9]{1,30})$/;
/** Before principals, Slack actors were recorded as `slack:<user>`. */
const LEGACY_PRINCIPAL = /^slack:([UW][A-Z0-9]{1,30})$/;

export function slackPrincipal(team: string, user: string): string {
  return `slack:${team}:${user}`;
}

/** The Slack user id a principal (or a pre-principal `slack:<user>`) names; null for any other principal. */
export function slackUserOf(principal: string): string | null {
  return PRINCIPAL.exec(principal)?.[2] ?? LEGACY_PRINCIPAL.exec(principal)?.[1] ?? null;
}

/** SLACK_APPROVERS entries as principal ids: `U…` is a user of the installation's team. */
export function approverPrincipals(entries: readonly string[], installationTeam: string): string[] {
  return entries.map((entry) => (USER.test(entry) ? slackPrincipal(installationTeam, entry) : `slack:${entry}`));
}

/** The Slack principal who asked for a run, or undefined when it was not a Slack user. */
export function slackRequester(run: { requested_by?: string; user_id?: string }, installationTeam: string): string | undefined {
  if (run.requested_by !== undefined) return PRINCIPAL.test(run.requested_by) ? run.requested_by : undefined;
  // A run started before principals (no requested_by): as then, its user_id is taken for a user of the installation's team.
  return run.user_id !== undefined && USER.test(run.user_id) ? slackPrincipal(installationTeam, run.user_id) : undefined;
}
