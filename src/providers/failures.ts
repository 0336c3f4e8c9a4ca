// How a failed model call is judged, for both providers: an HTTP status, a
// connection problem or an unusable answer becomes a retry decision and, when
// final, a message for a person (never quoting the API key).
import { UnusableAnswer } from "./conversation";
import { errorBodyText, scrubDetail } from "./model-error";
import { isRetryableStatus, parseRetryAfter, type AttemptFailure } from "./retry";

/** What the failed fetch itself said (the SDK's own message is just "Connection error."). */
function causeText(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    return inner instanceof Error ? `${cause.message} (${inner.message})` : cause.message;
  }
  return error.message;
}

/** Shared by both providers: an HTTP error status as a retry decision and a message. */
function classifyHttpError(
  provider: "anthropic" | "openai",
  status: number,
  headers: Headers | undefined,
  bodyText: string,
  apiKey: string | undefined,
): AttemptFailure {
  const detail = scrubDetail(bodyText, apiKey);
  if (isRetryableStatus(status)) {
    const retryAfterMs = parseRetryAfter(headers);
    return { retryable: true, what: `HTTP ${status}`, detail, status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
  if (status === 401) {
    // The provider's own words are not quoted: some echo part of the key back.
    return {
      retryable: false,
      code: "auth",
      status,
      message: `The model provider (${provider}) refused the API key (HTTP 401): MODEL_API_KEY is wrong or missing.`,
    };
  }
  if (status === 403) {
    return {
      retryable: false,
      code: "auth",
      status,
      message: `The model provider (${provider}) refused access (HTTP 403): the API key may lack permission for this model or endpoint: ${detail}`,
    };
  }
  const hint = status === 404 ? " (check MODEL_NAME and MODEL_BASE_URL)" : "";
  return {
    retryable: false,
    code: "rejected",
    status,
    message: `The model provider (${provider}) refused the request (HTTP ${status})${hint}: ${detail}`,
  };
}

/** Shared by both providers: a failure that is neither an HTTP status nor a connection problem. */
function classifyOtherError(provider: "anthropic" | "openai", error: unknown, apiKey: string | undefined): AttemptFailure {
  if (error instanceof UnusableAnswer) {
    return error.retryable
      ? { retryable: true, what: "unusable answers", detail: error.message, code: "bad_response" }
      : {
          retryable: false,
          code: "bad_response",
          message: `The model provider (${provider}) answered something unusable: ${error.message}.`,
        };
  }
  if (error instanceof SyntaxError) {
    // The SDK could not parse a JSON success body: a broken or misdirected endpoint.
    return {
      retryable: false,
      code: "bad_response",
      message: `The model provider (${provider}) answered something unusable: the response body is not valid JSON (check MODEL_BASE_URL): ${scrubDetail(error.message, apiKey)}`,
    };
  }
  const text = error instanceof Error ? error.message : String(error);
  return {
    retryable: false,
    code: "bad_response",
    message: `The model provider (${provider}) call failed: ${scrubDetail(text, apiKey)}`,
  };
}

/**
 * The error classes both official SDKs export (both are generated from the
 * same template, so their hierarchies match): what a failed attempt of either
 * provider means is decided here once, from the SDK's own classes.
 */
export interface SdkErrorClasses {
  APIUserAbortError: abstract new (...args: never[]) => Error;
  APIConnectionTimeoutError: abstract new (...args: never[]) => Error;
  APIConnectionError: abstract new (...args: never[]) => Error;
  APIError: abstract new (...args: never[]) => Error & { status: unknown; headers: Headers | undefined; error: unknown };
}

export function classifySdkError(
  provider: "anthropic" | "openai",
  sdk: SdkErrorClasses,
  error: unknown,
  apiKey: string | undefined,
): AttemptFailure {
  if (error instanceof sdk.APIUserAbortError) {
    return { retryable: false, code: "aborted", message: `The model call (${provider}) was aborted before it finished.` };
  }
  if (error instanceof sdk.APIConnectionTimeoutError) return { retryable: true, what: "a timeout" };
  if (error instanceof sdk.APIConnectionError) {
    return { retryable: true, what: "a network error", detail: scrubDetail(causeText(error), apiKey) };
  }
  if (error instanceof sdk.APIError && typeof error.status === "number") {
    return classifyHttpError(provider, error.status, error.headers, errorBodyText(error.error) ?? error.message, apiKey);
  }
  return classifyOtherError(provider, error, apiKey);
}
