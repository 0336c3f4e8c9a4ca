// Roles (contract section 18): what a principal may do. Every role includes
// `viewer`; `admin` includes every role but `adapter`, which is only ever
// given explicitly. The one check of "may this principal act as <role>".
// The names and their schemas are the wire's (src/wire/roles.ts).
import { ROLES, type Role } from "../wire/roles";

export { ROLES, type Role, roleSchema, rolesSchema } from "../wire/roles";

/** Every role but `adapter`: what `token:root` holds. */
export const ROOT_ROLES: readonly Role[] = ROLES.filter((r) => r !== "adapter");

/** True when `held` grants `wanted` (a principal with no role at all holds nothing, not even viewer). */
export function grants(held: readonly Role[], wanted: Role): boolean {
  if (held.includes(wanted)) return true;
  if (held.length === 0) return false;
  if (wanted === "viewer") return true;
  return wanted !== "adapter" && held.includes("admin");
}
