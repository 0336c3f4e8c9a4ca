// WebhookCourier: the one object (WEBHOOK_COURIER.idFromName("deployment"))
// whose alarm delivers the deployment's webhook outbox (contract section 26:
// halts and policy notifications, in D1's webhook_outbox). A thin shell over
// src/webhooks: wake() arms the alarm now; each alarm drains every endpoint's
// lane (lane-delivery.ts) and arms the next for the earliest notification
// still due. An alarm that fails is retried a little later.
import { DurableObject } from "cloudflare:workers";
import { loadConfig } from "../src/config/config";
import type { Env } from "../src/config/env";
import { logger } from "../src/operate/logger";
import { wakeSealer } from "../src/audit/wake-sealer";
import { deploymentStore, nextDeploymentAttemptAt } from "../src/webhooks/deployment-outbox";
import { disabledEntriesOrNone, recordAttemptIn } from "../src/webhooks/endpoint-state";
import { drainLanes } from "../src/webhooks/lane-delivery";

/** After a failed drain, try again this much later. */
const RETRY_AFTER_FAILURE_MS = 10_000;

export class WebhookCourier extends DurableObject<Env> {
  #draining: Promise<void> | null = null;

  /** Something was enqueued: deliver now (an alarm already due sooner stays). */
  async wake(): Promise<void> {
    const armed = await this.ctx.storage.getAlarm();
    if (armed === null || armed > Date.now()) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = null;
    });
    await this.#draining;
  }

  async #drain(): Promise<void> {
    const loaded = loadConfig(this.env);
    if (loaded.state === "bad_config") return;
    const { config } = loaded;
    const db = this.env.DB;
    try {
      await drainLanes(deploymentStore(db), {
        endpoints: config.WEBHOOKS,
        settings: config,
        disabled: await disabledEntriesOrNone(db),
        recorded: recordAttemptIn(db, () => this.ctx.waitUntil(wakeSealer(this.env))),
        clock: () => Date.now(),
      });
      const next = await nextDeploymentAttemptAt(db);
      if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
    } catch (err) {
      logger.warn("webhooks: the deployment outbox's drain failed; retrying", { error: err instanceof Error ? err.message : String(err) });
      await this.ctx.storage.setAlarm(Date.now() + RETRY_AFTER_FAILURE_MS);
    }
  }
}
