// POST /api/trigger: validate, claim the delivery identity, start the run in
// its RunObject, and answer 202 (or the initial stream for text/event-stream).
import type { StartRunInput } from "../../agent/run-record";
import { apiError, jsonResponse } from "../api-error";
import type { HostConfig } from "../../config/config";
import { claimDelivery } from "../deliveries";
import type { Env } from "../../config/env";
import { readJsonBody } from "../request-body";
import { newRunId, MAX_IDENTIFIER_CHARS } from "../../ids";
import { isKnownToolNameShape } from "../../execution/tool-policy";
import { triggerBodySchema } from "../trigger-request";
import { openEventStream, wantsEventStream } from "./events";

export async function handleTrigger(request: Request, env: Env, config: HostConfig): Promise<Response> {
  const body = await readJsonBody(request, triggerBodySchema);
  const deliveryId = resolveDeliveryId(body.delivery_id, request.headers.get("idempotency-key"));
  if (body.script !== undefined && config.MODEL_PROVIDER !== "scripted") {
    throw apiError(400, {
      error: "invalid_request",
      message: `"script" is only honoured with MODEL_PROVIDER=scripted; this deployment uses ${config.MODEL_PROVIDER}.`,
      details: [{ path: "script", message: "not allowed with this model provider" }],
    });
  }
  const badTool = body.script
    ?.flatMap((turn, t) => (turn.tool_calls ?? []).map((call, c) => ({ call, path: `script.${t}.tool_calls.${c}.tool_name` })))
    .find(({ call }) => !isKnownToolNameShape(call.tool_name));
  if (badTool) {
    throw apiError(400, {
      error: "invalid_request",
      message: `Tool names are "human__ask" or "mcp__<server>__<tool>"; got ${JSON.stringify(badTool.call.tool_name)}.`,
      details: [{ path: badTool.path, message: "not a tool name this engine can call" }],
    });
  }

  let input: StartRunInput = {
    run_id: newRunId(),
    channel_id: body.channel_id,
    user_id: body.user_id,
    delivery_id: deliveryId ?? null,
    message: body.message,
    max_tool_calls: body.max_tool_calls ?? null,
    script: body.script ?? null,
  };
  let duplicate = false;
  const acceptedAt = new Date().toISOString();
  if (deliveryId !== undefined) {
    const claim = await claimDelivery(env.DB, deliveryId, input, acceptedAt);
    if (!claim.claimed) {
      duplicate = true;
      input = claim.start_input;
    }
  }
  // Idempotent in the object: for a duplicate this only finishes a start that
  // the first request may not have reached (it died after the receipt).
  const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(input.run_id));
  await stub.start(input);

  const eventsUrl = `/api/runs/${input.run_id}/events`;
  if (wantsEventStream(request)) {
    const stream = await openEventStream(stub, 0, undefined);
    const headers = new Headers(stream.headers);
    headers.set("x-run-id", input.run_id);
    headers.set("content-location", eventsUrl);
    if (duplicate) headers.set("x-delivery-status", "duplicate");
    return new Response(stream.body, { status: stream.status, headers });
  }
  return jsonResponse(duplicate ? 200 : 202, {
    status: duplicate ? "duplicate" : "accepted",
    run_id: input.run_id,
    channel_id: input.channel_id,
    events_url: eventsUrl,
    ...(deliveryId !== undefined ? { delivery_id: deliveryId } : {}),
  });
}

function resolveDeliveryId(fromBody: string | undefined, fromHeader: string | null): string | undefined {
  const header = fromHeader?.trim() || undefined;
  if (header !== undefined && (header.length > MAX_IDENTIFIER_CHARS || hasControlCharacter(header))) {
    throw apiError(400, { error: "invalid_request", message: `Idempotency-Key must be 1..${MAX_IDENTIFIER_CHARS} printable characters.` });
  }
  if (fromBody !== undefined && header !== undefined && fromBody !== header) {
    throw apiError(400, {
      error: "invalid_request",
      message: "delivery_id and the Idempotency-Key header disagree; send one, or the same value in both.",
    });
  }
  return fromBody ?? header;
}

/** True when `text` holds a C0 control character (a header value must not). */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x20) return true;
  return false;
}
