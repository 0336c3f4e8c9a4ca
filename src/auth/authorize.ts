// May this principal call this route (contract section 18)? Pure: the
// router asks it with the route's rule from src/http/route-roles.ts and, for
// a rule that lets a requester act on its own runs, checks the run's
// requester itself.
import type { RouteRule } from "../http/route-roles";
import { grants, type Role } from "./roles";

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
