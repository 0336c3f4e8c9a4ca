// A request's principal from its credentials (contract section 18), never
// from its body. When several come together, `Authorization` decides alone,
// then the console cookie, then the Access assertion (its header, else its
// CF_Authorization cookie): a wrong credential is
// never rescued by another one. The answer is a principal, "anonymous" (no
// credential at all) or "refused" (a credential that proves nobody: a wrong,
// revoked or expired token, a malformed, forged or ended cookie).
import { readSessionCookie, verifySessionCookie } from "./session-cookie";
import { liveSession } from "./session-store";
import { isAuthorized } from "./api-token";
import { type AccessSettings, accessAssertionOf, accessConfigured, verifyAccessAssertion } from "./access";
import { sha256Hex } from "./digest";
import { type Principal, ROOT_PRINCIPAL_ID } from "./principal";
import { ROOT_ROLES } from "./roles";
import { findLiveToken, lastUsedDue, touchLastUsed } from "./token-store";

export type Authentication = { kind: "authenticated"; principal: Principal } | { kind: "anonymous" } | { kind: "refused"; message: string };

export interface AuthSettings extends AccessSettings {
  API_TOKEN?: string | undefined;
  CONSOLE_SESSION_SECRET?: string | undefined;
}

export interface AuthDeps {
  db: D1Database;
  config: AuthSettings;
  /** Keeps the `last_used_at` write alive after the answer. */
  waitUntil: (promise: Promise<unknown>) => void;
  now?: Date;
}

const BEARER = /^bearer +(\S+) *$/i;

/**
 * The settings a credential is proven against while the host configuration is bad (no parsed
 * config): API_TOKEN and CONSOLE_SESSION_SECRET as set, with named tokens and console sessions
 * from D1 as always; not Cloudflare Access, whose settings may be the bad ones. So a valid
 * credential is still known (GET /api/health, bad_config's details) and not counted as a failure.
 */
export function rawAuthSettings(env: object): AuthSettings {
  const raw = env as Record<string, unknown>;
  const text = (name: string) => {
    const value = raw[name];
    return typeof value === "string" && value !== "" ? value : undefined;
  };
  return { API_TOKEN: text("API_TOKEN"), CONSOLE_SESSION_SECRET: text("CONSOLE_SESSION_SECRET"), ACCESS_ROLES: {} };
}

const rootDigests = new Map<string, Promise<string>>();
/** SHA-256 of the current API_TOKEN (a root console session is bound to it), computed once per value. */
export function rootTokenDigest(apiToken: string | undefined): Promise<string | null> {
  if (apiToken === undefined) return Promise.resolve(null);
  let digest = rootDigests.get(apiToken);
  if (!digest) {
    digest = sha256Hex(apiToken);
    rootDigests.set(apiToken, digest);
  }
  return digest;
}

export async function authenticate(headers: Headers, deps: AuthDeps): Promise<Authentication> {
  const now = deps.now ?? new Date();
  const authorization = headers.get("authorization");
  if (authorization !== null) return bearer(authorization, deps, now);
  const cookie = readSessionCookie(headers.get("cookie"));
  if (cookie !== null) return consoleSession(cookie, deps, now);
  const assertion = accessAssertionOf(headers);
  if (assertion !== null && accessConfigured(deps.config)) {
    const verdict = await verifyAccessAssertion(assertion.jwt, deps.config, assertion.via);
    return verdict.ok ? { kind: "authenticated", principal: verdict.principal } : { kind: "refused", message: verdict.message };
  }
  return { kind: "anonymous" };
}

async function bearer(authorization: string, deps: AuthDeps, now: Date): Promise<Authentication> {
  const value = BEARER.exec(authorization)?.[1];
  const refused: Authentication = {
    kind: "refused",
    message: "Send Authorization: Bearer <token> with API_TOKEN or a live named token (aee_...).",
  };
  if (value === undefined) return refused;
  const named = await findLiveToken(deps.db, value, now);
  if (named !== null) {
    if (lastUsedDue(named, now)) deps.waitUntil(touchLastUsed(deps.db, named.name, now).catch(() => undefined));
    return {
      kind: "authenticated",
      principal: {
        id: `token:${named.name}`,
        roles: named.roles,
        credential: { kind: "named_token", name: named.name },
        ...(named.owner !== null ? { owner: named.owner, owned_by_creator: named.owned_by_creator } : {}),
      },
    };
  }
  const root = deps.config.API_TOKEN;
  if (root !== undefined && (await isAuthorized(authorization, root))) {
    return { kind: "authenticated", principal: { id: ROOT_PRINCIPAL_ID, roles: ROOT_ROLES, credential: { kind: "root_token" } } };
  }
  return refused;
}

async function consoleSession(cookie: string, deps: AuthDeps, now: Date): Promise<Authentication> {
  const refused: Authentication = {
    kind: "refused",
    message: "The console session is unknown, ended or malformed; sign in at /console again.",
  };
  const secret = deps.config.CONSOLE_SESSION_SECRET;
  if (secret === undefined) return refused;
  const id = await verifySessionCookie(cookie, secret);
  if (id === null) return refused;
  const session = await liveSession(deps.db, id, now, await rootTokenDigest(deps.config.API_TOKEN));
  if (session === null) return refused;
  return {
    kind: "authenticated",
    principal: {
      id: session.principal,
      roles: session.roles,
      credential: { kind: "console_session", session_id: session.id },
      ...(session.owner !== null ? { owner: session.owner, owned_by_creator: session.owned_by_creator } : {}),
    },
  };
}
