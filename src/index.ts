// The Worker entry: routes requests and exports the Durable Object classes
// that wrangler.toml binds. /console is the operator console (contract
// section 16); everything else goes through the router built from the route
// table (src/http/route-table.ts): /api/* behind the guard that learns each
// request's principal (section 18), /slack/* verified by Slack's signature
// instead (section 14).
// Every 401/429 is counted for the metrics, and the Cron Trigger runs
// retention (contract section 22), wakes the audit sealer (section 25) and
// the webhook courier (section 26).
import type { Env } from "./config/env";
import { handleConsoleRequest } from "./console/console-routes";
import { router } from "./http/router";
import { countRefusal } from "./operate/refusal-counters";
import { scheduledRetention } from "./operate/retention-job";
import { resumeCancelJobs } from "./outcomes/halt-cancel-job";
import { sealerStub, wakeSealer } from "./audit/wake-sealer";
import { logger } from "./operate/logger";
import { wakeCourier } from "./webhooks/deployment-outbox";

/** Requests that may have written an audit entry in a D1 batch: the sealer is woken after them (contract section 25). */
const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export { RunObject } from "../durable-objects/run-object";
export { StoragePool } from "../durable-objects/storage-pool";
export { AuditQueue } from "../durable-objects/audit-queue";
export { RateLimiter } from "../durable-objects/rate-limiter";
export { AuditSealer } from "../durable-objects/audit-sealer";
export { HaltCanceller } from "../durable-objects/halt-canceller";
export { WebhookCourier } from "../durable-objects/webhook-courier";

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    // Every 401 and 429 counts in the metrics (contract section 22), whoever refused.
    const response = await countRefusal(await routeRequest(request, env, ctx), env.DB, (p) => ctx.waitUntil(p));
    if (!READ_METHODS.has(request.method)) ctx.waitUntil(wakeSealer(env));
    return response;
  },
  /** The Cron Trigger (wrangler.toml [triggers]): retention in bounded batches (contract section 22). */
  async scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
    // The audit chain first (contract section 25): seal what a lost wake left, sign daily, retry R2 copies; then
    // retention, which deletes only sealed entries up to a checkpoint.
    ctx.waitUntil(
      sealerStub(env)
        .scheduled()
        .catch((err: Error) => logger.error("audit: the scheduled seal failed", { error: err.message }))
        .then(() => scheduledRetention(env, controller.scheduledTime)),
    );
    // Contract section 26: the deployment's webhook outbox, whatever wake was lost.
    ctx.waitUntil(wakeCourier(env));
    // Contract section 23: a halt's cancel job whose arming was lost is armed again.
    ctx.waitUntil(
      resumeCancelJobs(env.DB, (haltId) => env.HALT_CANCELLER.get(env.HALT_CANCELLER.idFromName(haltId)).start(haltId)).catch(
        (err: Error) => logger.error("halts: resuming cancel jobs failed", { error: err.message }),
      ),
    );
  },
} satisfies ExportedHandler<Env>;

async function routeRequest(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const { pathname } = new URL(request.url);
  if (pathname === "/console" || pathname.startsWith("/console/")) return handleConsoleRequest(request, env);
  return router.fetch(request, env, ctx);
}
