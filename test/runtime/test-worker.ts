// The Worker entry of the runtime test project (vitest.config.ts points the
// pool's `main` here): the real Worker and StoragePool, and a RunObject whose
// outcome storage a test can put a fault seam in front of
// (test/runtime/storage-seam.ts). The seam lives here, not in the production class.
import { RunObject as ProductionRunObject } from "../../durable-objects/run-object";
import type { OutcomeDb } from "../../src/outcomes/mutation-outcomes";
import worker from "../../src/index";

export { StoragePool } from "../../durable-objects/storage-pool";
export { AuditQueue } from "../../durable-objects/audit-queue";
export { RateLimiter } from "../../durable-objects/rate-limiter";
export { AuditSealer } from "../../durable-objects/audit-sealer";
export { HaltCanceller } from "../../durable-objects/halt-canceller";
export { WebhookCourier } from "../../durable-objects/webhook-courier";

export class RunObject extends ProductionRunObject {
  #seam: OutcomeDb | undefined;

  /** Outcome storage through `db` (a wrapper that can stall, fail or hold writes) instead of D1. */
  useOutcomeDbForTests(db: OutcomeDb): void {
    this.#seam = db;
  }

  protected override outcomeDb(): OutcomeDb {
    return this.#seam ?? super.outcomeDb();
  }
}

export default worker;
