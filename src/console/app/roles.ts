// Whether the person signed in holds a role (contract section 18), judged as
// src/auth/roles.ts grants() judges it: every role includes `viewer`, `admin`
// includes every role but `adapter`. A page refuses up front what the API
// would refuse, and asks it nothing.

export function holds(roles: readonly string[], role: string): boolean {
  if (roles.includes(role)) return true;
  if (roles.length === 0) return false;
  if (role === "viewer") return true;
  return role !== "adapter" && roles.includes("admin");
}
