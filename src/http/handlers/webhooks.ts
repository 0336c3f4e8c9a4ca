// GET /api/webhooks (contract section 26, admin): the configured endpoints,
// their state and counts (src/webhooks/webhook-listing.ts), never a secret.
import { jsonResponse } from "../../base/api-error";
import type { HostConfig } from "../../config/config";
import type { Env } from "../../config/env";
import { listWebhooks } from "../../webhooks/webhook-listing";

export async function handleListWebhooks(env: Env, config: HostConfig): Promise<Response> {
  return jsonResponse(200, await listWebhooks(env.DB, config.WEBHOOKS));
}
