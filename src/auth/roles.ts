// Roles (contract section 18): what a principal may do. Every role includes
// `viewer`; `admin` includes every role but `adapter`, which is only ever
// given explicitly. The one check of "may this principal act as <role>".
import { z } from "zod";

export const ROLES = ["viewer", "requester", "approver", "reconciler", "admin", "adapter"] as const;
export type Role = (typeof ROLES)[number];

export const roleSchema = z.enum(ROLES);
/** A non-empty set of roles, as a token or an Access rule grants it. */
export const rolesSchema = z
  .array(roleSchema)
  .min(1)
  .transform((roles) => [...new Set(roles)]);

/** Every role but `adapter`: what `token:root` holds. */
export const ROOT_ROLES: readonly Role[] = ROLES.filter((r) => r !== "adapter");

/** True when `held` grants `wanted` (a principal with no role at all holds nothing, not even viewer). */
export function grants(held: readonly Role[], wanted: Role): boolean {
  if (held.includes(wanted)) return true;
  if (held.length === 0) return false;
  if (wanted === "viewer") return true;
  return wanted !== "adapter" && held.includes("admin");
}
