// What each role may do on each /api route (contract section 18), written from
// the contract's words rather than read from src/http/route-roles.ts, so a
// wrong entry in the route table fails the tests that use this: the runtime
// role matrix (test/runtime/route-roles.test.ts) and the same matrix over
// loopback HTTP against wrangler dev (test/e2e/route-roles.test.ts).
import type { Role } from "../../src/auth/roles";

// Contract section 18: /api/audit is admin's, but /api/audit/public-key and /api/audit/checkpoints are viewer's (section 25).
const ADMIN_ONLY = new Set([
  "GET /api/tokens",
  "POST /api/tokens",
  "DELETE /api/tokens/:name",
  "GET /api/audit",
  "GET /api/audit/export",
  // Contract section 26.
  "GET /api/slack/installations",
  "GET /api/webhooks",
]);

/** Whether `role` may use `route` ("<METHOD> <path>"); `ownRun` marks what a requester may do on the runs it requested. */
export function roleAllows(role: Role | "none", route: string, ownRun: boolean): boolean {
  if (role === "none") return false;
  if (role === "admin") return true;
  const [method] = route.split(" ");
  if (method === "GET" && !ADMIN_ONLY.has(route)) return true; // every role includes viewer
  switch (role) {
    case "requester":
      return (
        route === "POST /api/trigger" ||
        (ownRun && (route === "POST /api/runs/:runId/cancel" || route === "POST /api/runs/:runId/inputs/:toolCallId"))
      );
    case "approver":
      return [
        "POST /api/runs/:runId/approvals/:approvalId",
        "POST /api/runs/:runId/inputs/:toolCallId",
        "POST /api/runs/:runId/cancel",
        // Contract section 18: "approver may also engage halts" (section 23); releasing is admin's.
        "POST /api/halts",
      ].includes(route);
    case "reconciler":
      return route === "POST /api/mutations/:mutationId/reconcile";
    case "adapter":
      return route === "POST /api/trigger";
    default:
      return false;
  }
}

/** A route's path with every parameter filled: the run's id, else ids that name nothing. */
export function concretePath(path: string, runId: string): string {
  return path
    .replace(":runId", runId)
    .replace(/:(approvalId|toolCallId)/, "x-1")
    .replace(":mutationId", "mut_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    .replace(/:\w+/g, "x-1");
}
