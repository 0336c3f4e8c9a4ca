// The Worker entry: routes requests and exports the Durable Object classes
// that wrangler.toml binds. /slack/* is the Slack app (contract section 14),
// verified by Slack's signature instead of the API token; /console is the
// operator console (contract section 16); everything else goes through the
// router, whose guard learns each /api/* request's principal (section 18).
// Every 401/429 is counted for the metrics, and the Cron Trigger runs
// retention (contract section 22) and wakes the audit sealer (section 25).
import type { Env } from "./config/env";
import { handleConsoleRequest } from "./console/console-routes";
import { jsonResponse } from "./http/api-error";
import { router } from "./http/router";
import { countRefusal } from "./operate/refusal-counters";
import { scheduledRetention } from "./operate/retention-job";
import { handleSlackRequest } from "./slack/slack-app";
import { sealerStub, wakeSealer } from "./audit/wake-sealer";
import { logger } from "./operate/logger";

/** Requests that may have written an audit entry in a D1 batch: the sealer is woken after them (contract section 25). */
const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export { RunObject } from "../durable-objects/run-object";
export { StoragePool } from "../durable-objects/storage-pool";
export { AuditQueue } from "../durable-objects/audit-queue";
export { RateLimiter } from "../durable-objects/rate-limiter";
export { AuditSealer } from "../durable-objects/audit-sealer";

const SLACK_ROUTES: Record<string, "events" | "interactivity"> = { "/slack/events": "events", "/slack/interactivity": "interactivity" };

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
  },
} satisfies ExportedHandler<Env>;

async function routeRequest(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const { pathname } = new URL(request.url);
  if (pathname === "/console" || pathname.startsWith("/console/")) return handleConsoleRequest(request, env);
  if (pathname.startsWith("/slack/")) {
    const route = SLACK_ROUTES[pathname];
    if (route === undefined)
      return Promise.resolve(jsonResponse(404, { error: "not_found", message: `No route for ${request.method} ${pathname}.` }));
    if (request.method !== "POST") {
      return Promise.resolve(jsonResponse(405, { error: "method_not_allowed", message: `${pathname} takes POST.` }, { allow: "POST" }));
    }
    return handleSlackRequest(request, env, ctx, route);
  }
  return router.fetch(request, env, ctx);
}
