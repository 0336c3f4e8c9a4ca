// HTTP errors of the API and their one JSON shape: {"error": code, "message", "details"?}.
// Built on itty-router's StatusError so a handler can `throw apiError(...)`
// anywhere and the router's single `catch` turns it into a response.
import { StatusError } from "itty-router";
import { logger } from "../operate/logger";

type ErrorCode =
  | "unauthorized"
  | "not_configured"
  | "bad_config"
  | "invalid_request"
  | "invalid_json"
  | "payload_too_large"
  | "unsupported_media_type"
  | "not_found"
  | "method_not_allowed"
  | "replay_gap"
  | "internal_error"
  // Contract section 23.
  | "halted"
  | "invalid_scope"
  | "self_release_forbidden"
  | "second_person_required"
  | "storage_timeout";

export interface ErrorBody {
  error: ErrorCode | string;
  message: string;
  details?: unknown;
  [extra: string]: unknown;
}

export function apiError(status: number, body: ErrorBody): StatusError {
  return new StatusError(status, body);
}

export function jsonResponse(status: number, body: unknown, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json; charset=utf-8");
  return new Response(JSON.stringify(body), { status, headers: h });
}

/** The router's one error handler: StatusErrors keep their code; anything else is a logged 500. */
export function errorResponse(err: unknown): Response {
  if (err instanceof StatusError) {
    const { status, stack: _stack, message: _message, ...rest } = err as StatusError & Record<string, unknown>;
    const body: Record<string, unknown> = { error: rest.error ?? "error", message: err.message, ...rest };
    delete body.status;
    if (typeof body.message !== "string" || body.message === "") body.message = String(body.error);
    // A 429 (contract section 18) says when to come back in the header too.
    const retryAfter = typeof body.retry_after_seconds === "number" ? { "retry-after": String(body.retry_after_seconds) } : undefined;
    return jsonResponse(status, body, retryAfter);
  }
  // A bug, not bad input: say nothing internal to the caller, keep the stack in the log.
  logger.error("unhandled error", { error: err instanceof Error ? (err.stack ?? String(err)) : String(err) });
  return jsonResponse(500, { error: "internal_error", message: "The server hit an unexpected error; it has been logged." });
}
