// POST /api/trigger: validate, claim the delivery identity, start the run in
// its RunObject, and answer 202 (or the initial stream for text/event-stream).
// Nothing is claimed for an input that fails validation; a claim whose run
// fails to start is released (contract section 17).
import type { RunObject } from "../../../durable-objects/run-object";
import type { StartRunInput } from "../../agent/run-record";
import { apiError, jsonResponse } from "../api-error";
import type { HostConfig } from "../../config/config";
import { claimDelivery, releaseDelivery } from "../deliveries";
import type { Env } from "../../config/env";
import { readJsonBody } from "../request-body";
import { newRunId } from "../../ids";
import { isKnownToolNameShape } from "../../execution/tool-policy";
import { type ScriptTurn, triggerBodySchema } from "../trigger-request";
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

  const duplicateId = firstDuplicateToolCallId(body.script ?? []);
  if (duplicateId) {
    throw apiError(400, {
      error: "invalid_request",
      message: `tool_call_id ${JSON.stringify(duplicateId.id)} appears twice in one script turn; tool_call_ids are unique within a turn.`,
      details: [{ path: duplicateId.path, code: "duplicate_tool_call_id", message: "repeats an earlier tool_call_id of the same turn" }],
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
  if (deliveryId !== undefined) {
    const claim = await claimDelivery(env.DB, {
      delivery_id: deliveryId,
      run_id: input.run_id,
      channel_id: input.channel_id,
      accepted_at: new Date().toISOString(),
    });
    if (!claim.claimed) {
      // The same delivery again: its run is the receipt's. Starting it is a no-op when it
      // exists; when the first request died before starting it, this delivery starts it.
      duplicate = true;
      input = { ...input, run_id: claim.receipt.run_id, channel_id: claim.receipt.channel_id };
    }
  }
  const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(input.run_id));
  try {
    await stub.start(input);
  } catch (err) {
    // A receipt must never name a run that does not exist: free the identity, then fail.
    if (deliveryId !== undefined && !(await runExists(stub))) await releaseDelivery(env.DB, deliveryId, input.run_id);
    throw err;
  }

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
  if (header !== undefined && (header.length > 200 || hasControlCharacter(header))) {
    throw apiError(400, { error: "invalid_request", message: "Idempotency-Key must be 1..200 printable characters." });
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

/** Whether the run's object holds a run; a broken object counts as none (the identity is freed). */
async function runExists(stub: DurableObjectStub<RunObject>): Promise<boolean> {
  try {
    return (await stub.summary()) !== null;
  } catch {
    return false;
  }
}

/** The first tool_call_id a script turn repeats, with its path. */
function firstDuplicateToolCallId(script: ScriptTurn[]): { id: string; path: string } | undefined {
  for (const [t, turn] of script.entries()) {
    const seen = new Set<string>();
    for (const [c, call] of (turn.tool_calls ?? []).entries()) {
      if (call.tool_call_id === undefined) continue;
      if (seen.has(call.tool_call_id)) return { id: call.tool_call_id, path: `script.${t}.tool_calls.${c}.tool_call_id` };
      seen.add(call.tool_call_id);
    }
  }
  return undefined;
}
