/**
 * How the MCP client names a failure (contract sections 7 and 21): the three failure codes, the
 * error that carries one, and what becomes of anything the SDK, the network or a server throws:
 * an McpTransportError whose text is redacted and bounded, with the HTTP status of a refusal
 * (401/403: the server refused the token).
 *
 * Not responsible for: whether the tools/call left (mcp-transport.ts knows), nor what execution
 * makes of the failure (mcp-send.ts, mcp-result.ts).
 */
import { InsufficientScopeError, SdkError, SdkErrorCode, SdkHttpError, UnauthorizedError } from "@modelcontextprotocol/client";
import { truncateUtf8 } from "./utf8-text";
import { redactText } from "./redaction";

export type McpFailureCode = "transport_timeout" | "transport_error" | "response_too_large";

/** Bound on error text (server-provided text can be arbitrarily long). */
const MESSAGE_MAX_BYTES = 512;

export class McpTransportError extends Error {
  override readonly name = "McpTransportError";
  constructor(
    readonly code: McpFailureCode,
    message: string,
    /** The HTTP status the server refused with, when it did (401/403: GET /api/health says authorization_required). */
    readonly httpStatus?: number,
  ) {
    super(message);
  }
}

/** An error from the SDK's `what` operation (bounded by `timeoutMs`), classified: its own request timeout is `transport_timeout`. */
export function classifySdkError(error: unknown, what: string, timeoutMs: number): McpTransportError {
  if (error instanceof McpTransportError) return error;
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout)
    return new McpTransportError("transport_timeout", `${what} timed out after ${timeoutMs} ms`);
  return new McpTransportError("transport_error", `${what} failed: ${errorText(error)}`, httpStatusOf(error));
}

/** Anything thrown, as an McpTransportError (one already classified is kept as it is). */
export function toTransportError(error: unknown): McpTransportError {
  return error instanceof McpTransportError ? error : new McpTransportError("transport_error", errorText(error), httpStatusOf(error));
}

/** `{ httpStatus }` when the error carries one, for spreading into an answer. */
export function withStatus(error: McpTransportError): { httpStatus?: number } {
  return error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {};
}

/** The HTTP status of a refusal, as the SDK's errors carry it (its auth errors: 401, 403 insufficient_scope). */
function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof UnauthorizedError) return 401;
  if (error instanceof InsufficientScopeError) return 403;
  return error instanceof SdkHttpError && error.status >= 400 ? error.status : undefined;
}

/** Error text for a message: redacted and bounded; the request's URL and headers are never added to it. */
function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name === "Error" ? "" : `${error.name}: `}${error.message}` : String(error);
  // Cut generously first (bounds the work), redact, then cut to size: a credential split by the first cut lies beyond the second.
  return truncateUtf8(redactText(truncateUtf8(text, 4 * MESSAGE_MAX_BYTES)), MESSAGE_MAX_BYTES);
}
