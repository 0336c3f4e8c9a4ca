// GET /api/runs/{run_id}/events: replay then live tail as SSE. The Worker only
// validates the resume point; the RunObject's response (and its stream) is
// handed back untouched, so a client closing its socket cancels the object's
// stream and releases that subscriber.
import type { RunStub } from "../../agent/run-rpc";
import { apiError } from "../../base/api-error";
import { MAX_IDENTIFIER_CHARS } from "../../ids";

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

export function openEventStream(stub: RunStub, after: number, clientKey: string | undefined): Promise<Response> {
  const url = new URL("https://run-object/events");
  url.searchParams.set("after", String(after));
  if (clientKey !== undefined) url.searchParams.set("client_key", clientKey);
  return stub.fetch(url.toString());
}

export async function handleEvents(request: Request, stub: RunStub): Promise<Response> {
  const url = new URL(request.url);
  const after = resumePoint(url, request.headers.get("last-event-id"));
  const clientKey = url.searchParams.get("client_key") ?? request.headers.get("x-client-key") ?? undefined;
  if (clientKey !== undefined && (clientKey.length === 0 || clientKey.length > MAX_IDENTIFIER_CHARS)) {
    throw apiError(400, { error: "invalid_request", message: `client_key must be 1..${MAX_IDENTIFIER_CHARS} characters.` });
  }
  return openEventStream(stub, after, clientKey);
}
