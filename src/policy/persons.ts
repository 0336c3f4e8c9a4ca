// Persons, not credentials (contract section 19): which human a principal
// stands for, so one human with a token, an Access login and a Slack account
// is one vote. An `access:` user is the person of that email (lower-cased); a
// named token with an `owner` counts as its owner; a Slack user whose
// verified email is x is the person `access:x`, any other Slack user a person
// of their own. `token:root`, ownerless tokens and Access service tokens are
// no person (null). Pure: the caller looks the owner and the email up.
import { normalisePrincipalId } from "./approver-patterns";

/** A person's key (`access:<email>` or `slack:…`), or null for a credential that is nobody. */
export type Person = string | null;

export interface PersonFacts {
  /** A named token's owner (an `access:` or `slack:` principal id). */
  owner?: string | undefined;
  /** A Slack user's verified email (`users.info`, scope `users:read.email`). */
  verified_email?: string | undefined;
}

/** The person of a principal id, given what the caller knows about it. */
export function personOf(principalId: string, facts: PersonFacts = {}): Person {
  if (principalId.startsWith("access:")) return normalisePrincipalId(principalId);
  if (principalId.startsWith("slack:")) {
    const email = facts.verified_email?.trim();
    return email ? `access:${email.toLowerCase()}` : principalId;
  }
  if (principalId.startsWith("token:")) {
    if (principalId === "token:root" || facts.owner === undefined) return null;
    // An owner is a person's principal id; it is not itself a token (which would chain).
    return facts.owner.startsWith("token:") ? null : personOf(facts.owner, { verified_email: facts.verified_email });
  }
  // access-service:<cn> (a machine) and anything unknown: no person, fail closed.
  return null;
}

/**
 * The person a run's `user_id`/`on_behalf_of` names: a principal id as
 * personOf reads it, a bare email as that `access:` person; anything else
 * (a chat front end's own user id) is compared by its text only (null).
 */
export function personOfUserId(userId: string): Person {
  if (userId.includes(":")) return personOf(userId);
  return /^[^\s@]+@[^\s@]+$/.test(userId) ? `access:${userId.toLowerCase()}` : null;
}
