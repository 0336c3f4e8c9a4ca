// Actor fields (contract section 18): `decided_by`, `answered_by` and
// `reconciled_by` are written by the engine and are the request's principal.
// A body may leave them out or repeat the principal; a body that names anyone
// else is refused (403 actor_mismatch), never recorded.
import { apiError } from "../base/api-error";
import type { Principal } from "./principal";

export type ActorField = "decided_by" | "answered_by" | "reconciled_by";

/** The actor to record for `principal`, or a 403 when the body named someone else. */
export function actorOf(principal: Principal, field: ActorField, named: string | undefined): string {
  if (named !== undefined && named !== principal.id) {
    throw apiError(403, {
      error: "actor_mismatch",
      message: `${field} is ${JSON.stringify(named)} but this request is made by ${principal.id}; leave ${field} out, the engine records the principal.`,
    });
  }
  return principal.id;
}
