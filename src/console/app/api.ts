// The console's calls to the engine (contract sections 2-9, 15), from the
// page: same-origin fetch, so the browser sends the HttpOnly session cookie
// and Origin; no token exists in the page. Listings have no client method yet,
// so this tiny wrapper serves every JSON route; the run's event stream uses
// the consumer client's resuming iterator (src/client) over the same fetch.
import { EngineClient } from "../../client/engine-client";

export class ConsoleApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Back to the sign-in page when the session is gone (signed out elsewhere, expired). */
function toSignIn(): never {
  location.assign("/console");
  throw new ConsoleApiError(401, "unauthorized", "Your console session ended; sign in again.");
}

export async function api<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) toSignIn();
  const text = await response.text();
  let json: unknown = null;
  try {
    json = text === "" ? null : JSON.parse(text);
  } catch {
    // not JSON: reported below
  }
  if (!response.ok) {
    const error = (json ?? {}) as { error?: string; message?: string };
    throw new ConsoleApiError(response.status, error.error ?? "error", error.message ?? `${method} ${path} answered ${response.status}`);
  }
  return json as T;
}

/** fetch for the consumer client: drops its bearer header (there is no token here) and sends the cookie. */
function cookieFetch(input: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.delete("authorization");
  return fetch(input, { ...init, headers, credentials: "same-origin" });
}

/** The consumer client for the event stream, authenticated by the session cookie. */
export const engine = new EngineClient({ baseUrl: location.origin, token: "session-cookie", fetch: cookieFetch });

export const enc = encodeURIComponent;
