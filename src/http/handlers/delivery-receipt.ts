// GET /api/deliveries/{delivery_id} (contract section 3): the receipt of a
// delivery identity in the caller's own namespace; an adapter (or an admin)
// may read Slack's with ?source=slack.
import { apiError, jsonResponse } from "../../base/api-error";
import { lacksRole } from "../../auth/authorize";
import { grants } from "../../auth/roles";
import type { Env } from "../../config/env";
import { getDelivery, principalNamespace, slackNamespace } from "../deliveries";
import { type ApiRequest, decodePathParam, notFound } from "../route-spec";

export async function handleGetDelivery(request: ApiRequest, env: Env): Promise<Response> {
  const source = new URL(request.url).searchParams.get("source");
  if (source !== null && source !== "slack") {
    throw apiError(400, { error: "invalid_request", message: 'source is "slack" or left out (the caller\'s own identities).' });
  }
  if (source === "slack" && !grants(request.principal.roles, "adapter") && !grants(request.principal.roles, "admin")) {
    throw apiError(403, {
      error: "forbidden",
      message: `${lacksRole(request.principal.id, "adapter")}: only an adapter reads Slack's deliveries.`,
    });
  }
  const namespace = source === "slack" ? slackNamespace() : principalNamespace(request.principal.id);
  const receipt = await getDelivery(env.DB, namespace, decodePathParam(request.params.deliveryId));
  if (!receipt) throw notFound("delivery", request.params.deliveryId);
  return jsonResponse(200, receipt);
}
