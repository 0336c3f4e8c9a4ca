// HaltCanceller: the alarm of one halt's cancel job (contract section 23,
// `cancel_runs: true`), HALT_CANCELLER.idFromName(halt_id). A thin shell:
// start() stores the halt's id and arms the alarm; each alarm runs one batch
// (src/outcomes/halt-cancel-job.ts) through the run objects' one `act` RPC,
// as the engaging principal, stores the job's progress once the batch's D1
// write succeeded, and arms the next until the job is finished. An alarm that
// fails is retried from the stored progress (a repeated cancel is a no-op).
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/config/env";
import { CANCEL_START, type CancelProgress, cancelStep } from "../src/outcomes/halt-cancel-job";
import { logger } from "../src/operate/logger";
import { personOf } from "../src/policy/persons";

/** After a failed batch, try again this much later. */
const RETRY_AFTER_FAILURE_MS = 10_000;

export class HaltCanceller extends DurableObject<Env> {
  /** POST /api/halts with cancel_runs: the job starts at once. */
  async start(haltId: string): Promise<void> {
    await this.ctx.storage.put("halt_id", haltId);
    await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const haltId = await this.ctx.storage.get<string>("halt_id");
    if (haltId === undefined) return;
    try {
      const progress = (await this.ctx.storage.get<CancelProgress>("progress")) ?? CANCEL_START;
      const step = await cancelStep(this.env.DB, haltId, progress, async (runId, principal) => {
        const stub = this.env.RUN_OBJECT.get(this.env.RUN_OBJECT.idFromName(runId));
        // The engager may engage a halt, so it holds approver or admin (contract section 23).
        await stub.act({
          kind: "cancel",
          actor: { via: "api", principal_id: principal, person: personOf(principal), has_approver_role: true },
        });
      });
      if (step.kind !== "nothing") await this.ctx.storage.put("progress", step.progress);
      if (step.kind === "more") await this.ctx.storage.setAlarm(Date.now());
    } catch (err) {
      logger.warn("halts: a cancel batch failed; retrying", { halt_id: haltId, error: err instanceof Error ? err.message : String(err) });
      await this.ctx.storage.setAlarm(Date.now() + RETRY_AFTER_FAILURE_MS);
    }
  }
}
