// The console's one way to the engine (contract sections 2-9, 15, 16): the
// project's typed client (src/client) over a same-origin fetch, so the
// browser sends the HttpOnly session cookie and Origin; no token exists in
// the page. A 401 means the session ended: back to the sign-in page.
import { EngineClient } from "../../client/engine-client";
import { ApiError } from "../../client/errors";

/** Cloudflare Access's logout on the application's own hostname: it ends the Access session and its CF_Authorization cookie. */
const ACCESS_LOGOUT_PATH = "/cdn-cgi/access/logout";

/** Back to the sign-in page when the session is gone (signed out elsewhere, expired). */
function toSignIn(): void {
  location.assign("/console");
}

/** fetch for the client: drops its bearer header (there is no token here), sends the cookie, and leaves on 401. */
async function cookieFetch(input: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.delete("authorization");
  const response = await fetch(input, { ...init, headers, credentials: "same-origin" });
  if (response.status === 401) toSignIn();
  return response;
}

/** The engine's client, authenticated by the session cookie (the token field is never sent); its event stream on a WebSocket the cookie opens, else SSE. */
export const engine = new EngineClient({ baseUrl: location.origin, token: "session-cookie", fetch: cookieFetch, webSocket: "cookie" });

/** The contract's error code of a refusal (`expired`, `confirmation_mismatch`, ...), if it was one. */
export function errorCode(err: unknown): string | undefined {
  return err instanceof ApiError ? err.code : undefined;
}

/** The HTTP status of a refusal, if it was one. */
export function errorStatus(err: unknown): number | undefined {
  return err instanceof ApiError ? err.status : undefined;
}

/** What a person reads: the server's own message for a refusal, else the error's. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.body.message ?? err.message;
  return err instanceof Error ? err.message : String(err);
}

/** The console session (not an /api route, so not in the client): who is signed in, and sign-out. */
export const session = {
  /**
   * Who is signed in: the session's `name`, or its `principal` where the
   * server names sessions by principal (contract section 18), and its roles
   * (which pages it may use). Read by hand, not with zod, to keep zod out of
   * the page's bundle for three fields.
   */
  async who(): Promise<{ name: string; roles: string[]; access: boolean }> {
    const response = await engine.raw("/console/session");
    if (!response.ok) throw new Error(`GET /console/session answered ${response.status}`);
    const body = (await response.json()) as { name?: unknown; principal?: unknown; roles?: unknown; credential?: unknown };
    const name = typeof body.name === "string" ? body.name : typeof body.principal === "string" ? body.principal : undefined;
    if (name === undefined) throw new Error("GET /console/session named nobody");
    const roles = Array.isArray(body.roles) ? body.roles.filter((r): r is string => typeof r === "string") : [];
    return { name, roles, access: body.credential === "access" };
  },
  /** Ends the console session; behind Cloudflare Access (no session of ours) it is Access's own logout. */
  async signOut(access = false): Promise<void> {
    if (access) {
      location.assign(ACCESS_LOGOUT_PATH);
      return;
    }
    await engine.raw("/console/session", { method: "DELETE" }).catch(() => undefined);
    location.assign("/console");
  },
};
