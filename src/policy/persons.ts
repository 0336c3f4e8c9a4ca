// Persons, not credentials (contract sections 18-19): the one resolution of a
// principal (or a run's `on_behalf_of`, or a token's `owner`) to the human it
// stands for, used for deciders, requesters, `on_behalf_of` and token owners
// alike. Two readings, one rule:
//
// - proven (personOf): only a person a third party proves counts. An
//   `access:` user is the person of that email; a Slack user whose verified
//   email is x is `access:x` when their team is in SLACK_EMAIL_TRUSTED_TEAMS,
//   else a person of their own; a named token is a person only when a proven
//   person minted it for themselves (`owned_by_creator`). `token:root`, every
//   other token and Access service tokens are no person (null). Votes,
//   quorums and self-approval of a decider read this.
// - restricting (restrictingPersonOf): what may only hold someone back. A
//   token's `owner` proves nothing, but the token is its owner's person for
//   every rule that restricts (a requester under self_approval: false, limits
//   and halts by person). A requester and an `on_behalf_of` read this.
//
// And the edge's rule: an id not in canonical form (surrounding space,
// control or zero-width characters, not NFC, a `mailto:` form, an `access:`
// email not lower-cased) is refused (400) before anything reads it.
// Pure: the caller looks the token row and the Slack email up.

/** A person's key (`access:<email>` or `slack:<team>:<user>`), or null for a credential that is nobody. */
import type { Person } from "../wire/run-protocol";

export type { Person };

export interface PersonFacts {
  /** A named token's owner (an `access:` or `slack:` principal id). */
  owner?: string | null | undefined;
  /** A named token created by its owner for themselves (`POST /api/tokens` by that `access:` user). */
  owned_by_creator?: boolean | undefined;
  /** The verified email (`users.info`, scope `users:read.email`) of the Slack user this resolves to (the principal, or a `slack:` owner). */
  verified_email?: string | null | undefined;
  /** SLACK_EMAIL_TRUSTED_TEAMS in force: only these teams' verified emails join an `access:` person. */
  trusted_teams?: readonly string[] | undefined;
}

const SLACK_PRINCIPAL = /^slack:([TE][A-Z0-9]+):([UW][A-Z0-9]+)$/;
const BARE_SLACK_USER = /^[UW][A-Z0-9]{1,30}$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** The team of a `slack:<team>:<user>` principal id, or undefined. */
function slackTeamOf(principalId: string): string | undefined {
  return SLACK_PRINCIPAL.exec(principalId)?.[1];
}

function slackPerson(principalId: string, facts: PersonFacts): string {
  const email = facts.verified_email;
  const team = slackTeamOf(principalId);
  const trusted = team !== undefined && (facts.trusted_teams ?? []).includes(team);
  return trusted && email && EMAIL.test(email) ? `access:${email.toLowerCase()}` : principalId;
}

/**
 * The proven person of a principal id: the one a third party vouches for, or
 * null (no person). The rule every vote, quorum and self-approval reads.
 */
export function personOf(principalId: string, facts: PersonFacts = {}): Person {
  if (principalId.startsWith("access:")) return principalId.toLowerCase();
  if (principalId.startsWith("slack:")) return SLACK_PRINCIPAL.test(principalId) ? slackPerson(principalId, facts) : null;
  if (principalId.startsWith("token:")) {
    // Only a token a proven person minted for themselves is that person; an owner an admin named proves nothing.
    if (principalId === "token:root" || facts.owned_by_creator !== true || !facts.owner?.startsWith("access:")) return null;
    return facts.owner.toLowerCase();
  }
  // access-service:<cn> (a machine) and anything unknown: no person, fail closed.
  return null;
}

/**
 * The person a principal holds back: its proven person, or, for a named token
 * with an `owner` it does not prove, that owner's person (a `slack:` owner's
 * through the same verified email). Requesters, `on_behalf_of`, limits and
 * halts by person read this; it never makes a vote count.
 */
export function restrictingPersonOf(principalId: string, facts: PersonFacts = {}): Person {
  const proven = personOf(principalId, facts);
  if (proven !== null || !principalId.startsWith("token:") || principalId === "token:root") return proven;
  const owner = facts.owner;
  if (!owner || owner.startsWith("token:")) return null;
  return personOf(owner, { verified_email: facts.verified_email, trusted_teams: facts.trusted_teams });
}

/**
 * What a run's `on_behalf_of` names, before any lookup: a principal id as it
 * is, a bare Slack user id as `slack:<team>:<id>` of the installation's team
 * (when known), a bare email as that `access:` person; any other value is a
 * person of its own (its text).
 */
export function onBehalfOfPrincipal(value: string, installationTeam: string | null | undefined): string {
  if (BARE_SLACK_USER.test(value)) return installationTeam ? `slack:${installationTeam}:${value}` : value;
  if (!value.includes(":") && EMAIL.test(value)) return `access:${value.toLowerCase()}`;
  return value;
}

/**
 * The person of an `on_behalf_of` value with what the caller looked up about
 * the principal it names (the token's row, the Slack user's email): the
 * restricting reading, and a value that names no principal is a person of its
 * own (its text), never nobody.
 */
export function onBehalfOfPerson(value: string, installationTeam: string | null | undefined, facts: PersonFacts = {}): string {
  const principal = onBehalfOfPrincipal(value, installationTeam);
  const kind = /^(access|slack|token|access-service):/.exec(principal)?.[1];
  if (kind === undefined) return principal;
  return restrictingPersonOf(principal, facts) ?? principal;
}

/** Zero-width and other invisible format characters (Unicode Cf: U+200B..U+200F, U+2060, U+FEFF, ...) and controls (Cc). */
const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

/**
 * Why an id (an `on_behalf_of`, a token `owner`) is not in canonical form, or
 * null when it is: surrounding space, control or zero-width characters, not
 * NFC, a `mailto:` form of an email, an `access:` email not lower-cased.
 */
export function nonCanonicalReason(id: string): string | null {
  if (id !== id.trim()) return "has surrounding space";
  if (INVISIBLE.test(id)) return "contains control or zero-width characters";
  if (id.normalize("NFC") !== id) return "is not in Unicode NFC";
  if (/^(access:)?mailto:/i.test(id)) return "is a mailto: form; name the principal (access:<email>)";
  if (/^access:/i.test(id) && id !== `access:${id.slice("access:".length).toLowerCase()}`) {
    return "is an access: id not lower-cased (access:<email in lower case>)";
  }
  return null;
}

/** SLACK_EMAIL_TRUSTED_TEAMS in force (contract section 13): as configured, else the one installation's team. */
export function emailTrustedTeams(
  configured: readonly string[] | undefined,
  installationTeam: string | null | undefined,
): readonly string[] {
  return configured ?? (installationTeam ? [installationTeam] : []);
}
