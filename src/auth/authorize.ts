// May this principal call this route (contract section 18)? Pure: the
// router asks it with the route's rule from the route table
// (src/http/route-table.ts) and, for a rule that lets a requester act on its
// own runs, checks the run's requester itself.
import { grants, type Role } from "./roles";

/** The role a route needs (one per route, in the route table). */
export interface RouteRule {
  /** The role named in a refusal; holding it is enough. */
  role: Role;
  /** Other roles that are enough on their own. */
  also?: readonly Role[];
  /** A role that is enough for the runs the principal requested itself (the route has a :runId). */
  ownRun?: Role;
  /** Any `access:` user with a role passes; the handler keeps them to what they own (their own named tokens). */
  accessSelf?: true;
}

export type Authorization = { kind: "allowed" } | { kind: "own_run_only"; role: Role } | { kind: "forbidden"; role: Role };

/** Who is asking, as far as the route's role is concerned: the roles held, and whether it is an `access:` user. */
export function authorize(held: readonly Role[], rule: RouteRule, accessUser = false): Authorization {
  if (grants(held, rule.role) || (rule.also ?? []).some((r) => grants(held, r))) return { kind: "allowed" };
  // A verified principal with no role gets 403 on everything (section 18), self-service included.
  if (rule.accessSelf === true && accessUser && held.length > 0) return { kind: "allowed" };
  if (rule.ownRun !== undefined && grants(held, rule.ownRun)) return { kind: "own_run_only", role: rule.role };
  return { kind: "forbidden", role: rule.role };
}

/** The message of a 403 forbidden (contract section 18). */
export function lacksRole(principalId: string, role: Role): string {
  return `${principalId} lacks the ${role} role`;
}
