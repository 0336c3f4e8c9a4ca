// ACCESS_ROLES (contract section 18): the roles of a Cloudflare Access
// principal, the union of every matching entry: its email, `*@<domain>` for
// its email's domain, `access-service:<common_name>` for a service token, and
// `*` for any Access user (never a service token). Pure.
import type { Role } from "./roles";

export type AccessIdentity = { kind: "user"; email: string } | { kind: "service"; id: string };

export function grantsOf(rules: Record<string, Role[]>, who: AccessIdentity): Role[] {
  const keys = who.kind === "user" ? [who.email, `*@${who.email.slice(who.email.lastIndexOf("@") + 1)}`, "*"] : [who.id];
  const roles = new Set<Role>();
  for (const [pattern, granted] of Object.entries(rules)) {
    if (keys.includes(pattern.toLowerCase())) for (const role of granted) roles.add(role);
  }
  return [...roles];
}
