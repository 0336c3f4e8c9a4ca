// The roles of contract section 18 as the wire names them (tokens, Access
// rules, the console's session): the names and their zod schemas. What a role
// grants is decided above, in src/auth/roles.ts; the host configuration
// (ACCESS_ROLES) and the token routes read the names from here.
import { z } from "zod";

export const ROLES = ["viewer", "requester", "approver", "reconciler", "admin", "adapter"] as const;
export type Role = (typeof ROLES)[number];

export const roleSchema = z.enum(ROLES);
/** A non-empty set of roles, as a token or an Access rule grants it. */
export const rolesSchema = z
  .array(roleSchema)
  .min(1)
  .transform((roles) => [...new Set(roles)]);
