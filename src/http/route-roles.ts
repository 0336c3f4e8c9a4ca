// The role each /api route needs (contract section 18): the one table the
// router enforces, in one place (src/http/router.ts, before any handler). Keys
// are "<METHOD> <path>" exactly as the route is registered. A route missing
// here is refused for everyone (403), and the runtime test generated from the
// router's routes fails, so a new route cannot ship without a role.
import type { Role } from "../auth/roles";

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

export const ROUTE_ROLES: Readonly<Record<string, RouteRule>> = {
  "POST /api/trigger": { role: "requester", also: ["adapter"] },
  "GET /api/runs/:runId": { role: "viewer" },
  "GET /api/runs/:runId/events": { role: "viewer" },
  "POST /api/runs/:runId/cancel": { role: "approver", ownRun: "requester" },
  "POST /api/runs/:runId/approvals/:approvalId": { role: "approver" },
  "POST /api/runs/:runId/inputs/:toolCallId": { role: "approver", ownRun: "requester" },
  "GET /api/runs/:runId/mutations": { role: "viewer" },
  "GET /api/mutations/:mutationId": { role: "viewer" },
  "POST /api/mutations/:mutationId/reconcile": { role: "reconciler" },
  "GET /api/storage-pool": { role: "viewer" },
  "GET /api/deliveries/:deliveryId": { role: "viewer" },
  "GET /api/runs": { role: "viewer" },
  "GET /api/approvals": { role: "viewer" },
  "GET /api/inputs": { role: "viewer" },
  "GET /api/mutations": { role: "viewer" },
  "GET /api/openapi.json": { role: "viewer" },
  "GET /api/mcp/servers": { role: "viewer" },
  "POST /api/mcp/servers/:server/connect": { role: "admin" },
  // Contract section 18: an `access:` user without admin creates, lists and revokes only tokens owned by themselves.
  "POST /api/tokens": { role: "admin", accessSelf: true },
  "GET /api/tokens": { role: "admin", accessSelf: true },
  "DELETE /api/tokens/:name": { role: "admin", accessSelf: true },
  "GET /api/audit": { role: "admin" },
  // Halts (contract section 23): an approver may engage one; only an admin releases.
  "POST /api/halts": { role: "approver" },
  "GET /api/halts": { role: "viewer" },
  "GET /api/halts/:haltId": { role: "viewer" },
  "DELETE /api/halts/:haltId": { role: "admin" },
  // Operating it (contract section 22). /api/health answers ahead of the guard (it is exempt from
  // bad_config) and checks this same rule itself (src/operate/health-route.ts).
  "GET /api/metrics": { role: "viewer" },
  "GET /api/health": { role: "viewer" },
};

/** The rule of a registered route, by its method and registered path. */
export function ruleOf(method: string, path: string): RouteRule | undefined {
  return ROUTE_ROLES[`${method} ${path}`];
}
