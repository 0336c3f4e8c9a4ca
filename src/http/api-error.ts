// The router's one error handler: a thrown apiError (src/base/api-error.ts,
// where the codes and the JSON shape live) keeps its status and code; anything
// else is a bug, logged here and answered as a bare 500 internal_error.
import { StatusError } from "itty-router";
import { errorJson, jsonResponse } from "../base/api-error";
import { logger } from "../operate/logger";

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
  return errorJson(500, { error: "internal_error", message: "The server hit an unexpected error; it has been logged." });
}
