// The engine client's errors (contract section 2): every non-2xx answer of the
// API becomes one ApiError carrying the status, the error code, the message,
// the details and, where the server sent one, Retry-After. A 410 replay_gap
// on the event stream is its own ReplayGapError, since a consumer must act on
// it (start again from a snapshot), not retry it.

/** The API's error body: {"error": code, "message", "details"?, ...extra fields}. */
export interface ApiErrorBody {
  error: string;
  message?: string;
  details?: unknown;
  [extra: string]: unknown;
}

export class ApiError extends Error {
  override readonly name: string = "ApiError";
  /** HTTP status of the answer. */
  readonly status: number;
  /** The contract's error code (`"expired"`, `"already_resolved"`, ...), or `http_<status>` for a non-JSON answer. */
  readonly code: string;
  readonly details: unknown;
  /** Seconds to wait before asking again, when the server sent Retry-After. */
  readonly retryAfterSeconds: number | undefined;
  /** The whole error body, for codes that carry extra fields (`decision`, `state`, `earliest_sequence`). */
  readonly body: ApiErrorBody;

  constructor(status: number, body: ApiErrorBody, retryAfterSeconds?: number, what = "request") {
    super(`${what} failed with ${status} ${body.error}: ${body.message ?? "(no message)"}`);
    this.status = status;
    this.code = body.error;
    this.details = body.details;
    this.retryAfterSeconds = retryAfterSeconds;
    this.body = body;
  }
}

/**
 * The events the consumer needs were dropped by retention (410 replay_gap).
 * Resuming is impossible without a gap; read the run's summary and outcome
 * rows instead, or resume from `earliestSequence - 1` and accept the gap.
 */
export class ReplayGapError extends ApiError {
  override readonly name = "ReplayGapError";
  readonly earliestSequence: number;

  constructor(body: ApiErrorBody, requestedAfter: number) {
    super(410, body, undefined, `resuming after sequence ${requestedAfter}`);
    this.earliestSequence = typeof body.earliest_sequence === "number" ? body.earliest_sequence : Number.NaN;
    this.message = `Events after sequence ${requestedAfter} are no longer retained (earliest kept: ${this.earliestSequence}); read the run's summary and outcome rows instead of replaying.`;
  }
}

/** The stream kept failing without delivering anything new; the last error is the cause. */
export class StreamRetriesExhaustedError extends Error {
  override readonly name = "StreamRetriesExhaustedError";
  constructor(
    readonly runId: string,
    readonly lastSequence: number,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(
      `The event stream of ${runId} failed ${attempts} times in a row after sequence ${lastSequence} without a new event; check the server and resume with events(runId, { after: ${lastSequence} }).`,
      options,
    );
  }
}

/** Parses an error answer into an ApiError (or a ReplayGapError for 410 replay_gap). */
export async function errorFromResponse(response: Response, what: string, requestedAfter?: number): Promise<ApiError> {
  const text = await response.text().catch(() => "");
  let body: ApiErrorBody;
  try {
    const parsed: unknown = JSON.parse(text);
    body =
      parsed !== null && typeof parsed === "object" && typeof (parsed as { error?: unknown }).error === "string"
        ? (parsed as ApiErrorBody)
        : { error: `http_${response.status}`, message: text.slice(0, 500) };
  } catch {
    body = { error: `http_${response.status}`, message: text.slice(0, 500) };
  }
  if (response.status === 410 && body.error === "replay_gap" && requestedAfter !== undefined) {
    return new ReplayGapError(body, requestedAfter);
  }
  return new ApiError(response.status, body, retryAfterSeconds(response.headers.get("retry-after")), what);
}

function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1_000));
}
