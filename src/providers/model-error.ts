// The one error a model provider's next() throws. Its message is for a person
// (it ends up in a run_failed event), so it says what went wrong and what to
// check, and never carries the API key: every message is scrubbed with the
// key in hand, and the provider's own words for a 401 are not repeated at all
// (OpenAI's echo part of the key back).

export type ModelProviderName = "anthropic" | "openai";

/**
 * What kind of failure it was, so the engine can choose a run_failed code
 * without parsing the message:
 * - `not_configured`: a setting is missing (no API key for a provider that needs one);
 * - `auth`: the provider refused the key (401) or the access (403);
 * - `rejected`: the provider refused the request (other 4xx): a bad model name, base URL or conversation;
 * - `unavailable`: the provider kept failing (429, 5xx, network, timeout) through every retry;
 * - `bad_response`: the provider answered something this code cannot use;
 * - `aborted`: the caller's abort signal fired.
 */
export type ModelErrorCode = "not_configured" | "auth" | "rejected" | "unavailable" | "bad_response" | "aborted";

export class ModelError extends Error {
  override readonly name = "ModelError";
  readonly provider: ModelProviderName;
  readonly code: ModelErrorCode;
  /** The HTTP status of the last failed attempt, when there was one. */
  readonly status?: number;
  /** How many model calls were made before giving up. */
  readonly attempts: number;

  constructor(message: string, details: { provider: ModelProviderName; code: ModelErrorCode; status?: number; attempts?: number }) {
    super(message);
    this.provider = details.provider;
    this.code = details.code;
    if (details.status !== undefined) this.status = details.status;
    this.attempts = details.attempts ?? 0;
  }
}

/** Longest piece of a provider's own error text quoted in a message. */
const MAX_DETAIL_CHARS = 300;

/** Things that look like API keys, whoever's they are. */
const KEY_LIKE = /\b(?:sk|pk|rk|key|sess)[-_][A-Za-z0-9*_.-]{6,}/gi;

/**
 * A provider's error text made fit to quote: the configured key (and anything
 * key-shaped) replaced, whitespace folded, cut to a few hundred characters.
 */
export function scrubDetail(text: string, apiKey: string | undefined): string {
  let out = text;
  if (apiKey) out = out.split(apiKey).join("[redacted]");
  out = out.replace(KEY_LIKE, "[redacted]").replace(/\s+/g, " ").trim();
  return out.length > MAX_DETAIL_CHARS ? `${out.slice(0, MAX_DETAIL_CHARS)}…` : out;
}

/** The human-readable part of a provider's error body (Anthropic, OpenAI and most compatible servers). */
export function errorBodyText(body: unknown): string | undefined {
  if (typeof body === "string") return body.trim() === "" ? undefined : body;
  if (typeof body !== "object" || body === null) return undefined;
  const record = body as Record<string, unknown>;
  const inner = record.error;
  if (typeof inner === "string") return inner;
  if (typeof inner === "object" && inner !== null) {
    const message = (inner as Record<string, unknown>).message;
    if (typeof message === "string") return message;
  }
  if (typeof record.message === "string") return record.message;
  if (typeof record.detail === "string") return record.detail;
  try {
    return JSON.stringify(body);
  } catch {
    return undefined;
  }
}
