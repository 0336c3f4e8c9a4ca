// A 403 answered in the Worker, audited (contract section 18: access.refused
// for every 403, coalesced per principal, action, target and minute): counted
// in the principal's AuditQueue Durable Object before the 403 leaves, whose
// alarm writes it to D1 (durable-objects/audit-queue.ts). Used by the API's
// router and by the console's own routes.
import type { Env } from "../config/env";
import { logger } from "../operate/logger";

/** Queues one refusal of `principal` on `target` ("<METHOD> <path>") with its error code; a queue failure is logged, the 403 still stands. */
export async function queueRefusal(env: Env, principal: string, target: string, error: string): Promise<void> {
  try {
    const queue = env.AUDIT_QUEUE.get(env.AUDIT_QUEUE.idFromName(principal));
    await queue.enqueue({ principal, action: "access.refused", target, at: new Date().toISOString(), details: { error } });
  } catch (err) {
    // The refusal still stands; only its audit entry is missing, which the log says.
    logger.error("audit: a refusal could not be queued", { principal, error: (err as Error).message });
  }
}
