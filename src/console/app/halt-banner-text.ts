// The words of the console's halt banner (contract section 23: a banner on
// every console page while a halt is active, with a Halt control for those
// who may engage one). Pure, so a unit test reads them without a browser.
import type { Halt } from "../../client/types";
import { holds } from "./roles";

/** Contract section 23: an `approver` or `admin` engages a halt. */
export function mayEngageHalt(roles: readonly string[] | undefined): boolean {
  return roles !== undefined && holds(roles, "approver");
}

/** The banner's line, or null when no halt is active (no banner). */
export function haltBannerText(halts: readonly Pick<Halt, "halt_id" | "scope" | "reason" | "status">[] | undefined): string | null {
  const active = (halts ?? []).filter((h) => h.status === "active");
  if (active.length === 0) return null;
  const named = active.map((h) => `${h.scope} (${h.halt_id}: ${h.reason})`).join("; ");
  return `Mutations are halted: ${named}. Calls in scope are not sent and cannot be approved until an admin releases the halt.`;
}
