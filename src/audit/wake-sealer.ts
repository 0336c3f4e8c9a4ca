// Wakes the audit sealer (contract section 25) after entries reach D1: the
// one sealer object (AUDIT_SEALER, named "audit") arms its alarm, which
// chains them within 2 s. Never on the decision path's critical section: a
// wake that fails is logged, and the Cron Trigger wakes the sealer anyway.
import type { Env } from "../config/env";
import { logger } from "../operate/logger";

/** The one sealer per deployment. */
const AUDIT_SEALER_NAME = "audit";

export function sealerStub(env: Env) {
  return env.AUDIT_SEALER.get(env.AUDIT_SEALER.idFromName(AUDIT_SEALER_NAME));
}

export async function wakeSealer(env: Env): Promise<void> {
  try {
    await sealerStub(env).wake();
  } catch (err) {
    logger.warn("audit: the sealer could not be woken; the next wake or the Cron Trigger seals", { error: (err as Error).message });
  }
}
