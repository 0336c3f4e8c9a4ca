// The console's session on its own pages (contract sections 16 and 18). On
// /api/* the cookie is one credential among others, read by src/auth/
// authenticate.ts; here it gates the console's pages and assets. A session is
// bound to the token that opened it (src/auth/session-store.ts).
import { rootTokenDigest } from "../auth/authenticate";
import { loadConfig } from "../config/config";
import type { Env } from "../config/env";
import { readSessionCookie, verifySessionCookie } from "../auth/session-cookie";
import { type LiveSession, liveSession } from "../auth/session-store";

export { isSameOrigin } from "../auth/origin-rule";

/** The live console session a request's cookie names, or null (no cookie, console off, bad MAC, unknown, ended). */
export async function sessionOf(request: Request, env: Env, now = new Date()): Promise<LiveSession | null> {
  const cookie = readSessionCookie(request.headers.get("cookie"));
  if (cookie === null) return null;
  const loaded = loadConfig(env);
  if (loaded.state !== "ready" || loaded.config.CONSOLE_SESSION_SECRET === undefined) return null;
  const id = await verifySessionCookie(cookie, loaded.config.CONSOLE_SESSION_SECRET);
  return id === null ? null : liveSession(env.DB, id, now, await rootTokenDigest(loaded.config.API_TOKEN));
}
