// POST /api/trigger: validate, claim the delivery identity, start the run in
// its RunObject, and answer 202 (or the initial stream for text/event-stream).
// Nothing is claimed for an input that fails validation (contract section 17).
import { apiError, jsonResponse } from "../../base/api-error";
import { triggerPersons } from "../trigger-persons";
import type { HostConfig } from "../../config/config";
import { runStubFor, startRun } from "../start-run";
import type { Env } from "../../config/env";
import { readJsonBody } from "../request-body";
import { newRunId, MAX_IDENTIFIER_CHARS } from "../../ids";
import { isKnownToolNameShape } from "../../execution/tool-policy";
import { type ScriptTurn, triggerBodySchema } from "../trigger-request";
import { openEventStream, wantsEventStream } from "./events";
import type { Principal } from "../../auth/principal";
import { grants } from "../../auth/roles";
import { lacksRole } from "../../auth/authorize";
import { countTrigger } from "../../auth/rate-limits";
import { getDelivery, principalNamespace } from "../deliveries";
import { refuseIfHalted } from "../halted-trigger";
import { requestOrigin } from "../request-origin";

export async function handleTrigger(request: Request, env: Env, config: HostConfig, principal: Principal): Promise<Response> {
  const body = await readJsonBody(request, triggerBodySchema);
  const requester = requesterOf(principal, body.user_id);
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

  // Contract section 18: a trigger whose delivery identity is already known is never counted (its receipt answers).
  const known = deliveryId !== undefined && (await getDelivery(env.DB, principalNamespace(principal.id), deliveryId)) !== null;
  if (!known) await countTrigger(env, principal.id, config.TRIGGER_RATE_PER_MINUTE);

  // Contract section 19: who the run is for, as persons, found once here and kept on the run.
  const persons = await triggerPersons(env, config, principal, requester.on_behalf_of);
  // Contract section 23: a halt of `all` or of this run's principal refuses the trigger; a known delivery identity still gets its receipt.
  if (!known) {
    await refuseIfHalted(env.DB, config.STORAGE_WAIT_MS, {
      requested_by: principal.id,
      on_behalf_of: requester.on_behalf_of,
      persons: [requester.on_behalf_of !== undefined ? persons.on_behalf_of_person : persons.requester_person],
    });
  }
  const started = await startRun(
    env,
    {
      run_id: newRunId(),
      channel_id: body.channel_id,
      user_id: requester.user_id,
      requested_by: principal.id,
      requester_person: persons.requester_person,
      ...(requester.on_behalf_of !== undefined ? { on_behalf_of: requester.on_behalf_of } : {}),
      ...(persons.on_behalf_of_person !== undefined ? { on_behalf_of_person: persons.on_behalf_of_person } : {}),
      delivery_id: deliveryId ?? null,
      message: body.message,
      max_tool_calls: body.max_tool_calls ?? null,
      script: body.script ?? null,
      source: "api",
    },
    requestOrigin(principal, request),
  );
  const { input, duplicate } = started;
  const stub = runStubFor(env, input.run_id);

  const eventsUrl = `/api/runs/${input.run_id}/events`;
  if (wantsEventStream(request)) {
    const stream = await openEventStream(stub, 0, undefined, principal);
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

/**
 * Who the run is for (contract section 18): the principal itself, unless an
 * `adapter` relays someone else's request by naming them in `user_id`
 * (recorded as on_behalf_of). Anyone else naming another user is refused.
 */
function requesterOf(principal: Principal, userId: string | undefined): { user_id: string; on_behalf_of?: string } {
  if (userId === undefined || userId === principal.id) return { user_id: principal.id };
  if (!grants(principal.roles, "adapter")) {
    throw apiError(403, {
      error: "forbidden",
      message: `${lacksRole(principal.id, "adapter")}: only an adapter may trigger on behalf of someone else; leave user_id out.`,
    });
  }
  return { user_id: userId, on_behalf_of: userId };
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
