// GET /api/runs/{run_id}/events: replay then live tail, as SSE or, with
// `Upgrade: websocket`, as a WebSocket (contract sections 5 and 27). The
// Worker checks the resume point, the client key and, for an upgrade, the
// Origin rule for credentials the browser sends by itself; the run's object
// then accepts a hibernatable socket for the watcher. An SSE watcher's socket
// is the Worker's own, which writes its frames to the SSE response
// (src/stream/sse-relay.ts), so no watcher holds a request open on the object.
import type { RunStub } from "../../agent/run-rpc";
import { apiError } from "../../base/api-error";
import { MAX_IDENTIFIER_CHARS } from "../../ids";
import { isBrowserHeld, type Principal } from "../../auth/principal";
import { isSameOrigin } from "../../auth/origin-rule";
import { streamCredentialOf } from "../../auth/stream-credential";
import { isWebSocketUpgrade, watchUrl } from "../../stream/watch-request";
import { sseResponseFromSocket } from "../../stream/sse-relay";

const NON_NEGATIVE_INTEGER = /^(0|[1-9][0-9]{0,15})$/;

export function wantsEventStream(request: Request): boolean {
  return (request.headers.get("accept") ?? "").toLowerCase().includes("text/event-stream");
}

/** `after` wins over Last-Event-ID; neither means from the start. */
function resumePoint(url: URL, lastEventId: string | null): number {
  const after = url.searchParams.get("after");
  if (after !== null) {
    if (!NON_NEGATIVE_INTEGER.test(after)) {
      throw apiError(400, {
        error: "invalid_request",
        message: `"after" must be a non-negative integer sequence, got ${JSON.stringify(after)}.`,
        details: [{ path: "after", message: "expected a non-negative integer" }],
      });
    }
    return Number(after);
  }
  if (lastEventId !== null && lastEventId.trim() !== "") {
    const id = lastEventId.trim();
    if (!NON_NEGATIVE_INTEGER.test(id)) {
      throw apiError(400, {
        error: "invalid_request",
        message: `Last-Event-ID must be an event sequence, got ${JSON.stringify(id)}.`,
        details: [{ path: "Last-Event-ID", message: "expected a non-negative integer" }],
      });
    }
    return Number(id);
  }
  return 0;
}

const UPGRADE = { headers: { upgrade: "websocket" } };

/**
 * An SSE stream of the run served by the Worker from the object's socket (the
 * events route and the trigger's initial stream); the object's own answer
 * (404, 410 replay_gap, 204) when it opens none.
 */
export async function openEventStream(
  stub: RunStub,
  after: number,
  clientKey: string | undefined,
  principal: Principal,
): Promise<Response> {
  const answer = await stub.fetch(watchUrl(after, "sse", streamCredentialOf(principal), clientKey), UPGRADE);
  const ws = answer.webSocket;
  if (!ws) return answer;
  return sseResponseFromSocket(ws);
}

export async function handleEvents(request: Request & { principal: Principal }, stub: RunStub): Promise<Response> {
  const url = new URL(request.url);
  const after = resumePoint(url, request.headers.get("last-event-id"));
  const clientKey = url.searchParams.get("client_key") ?? request.headers.get("x-client-key") ?? undefined;
  if (clientKey !== undefined && (clientKey.length === 0 || clientKey.length > MAX_IDENTIFIER_CHARS)) {
    throw apiError(400, { error: "invalid_request", message: `client_key must be 1..${MAX_IDENTIFIER_CHARS} characters.` });
  }
  const { principal } = request;
  if (!isWebSocketUpgrade(request)) return openEventStream(stub, after, clientKey, principal);
  // A page on another site must not open a stream on the operator's cookie (contract section 27).
  if (isBrowserHeld(principal.credential) && !isSameOrigin(request)) {
    throw apiError(403, {
      error: "forbidden_origin",
      message: "A WebSocket opened with a credential the browser sends by itself must come from this origin (Origin header).",
    });
  }
  return stub.fetch(watchUrl(after, "websocket", streamCredentialOf(principal), clientKey), UPGRADE);
}
