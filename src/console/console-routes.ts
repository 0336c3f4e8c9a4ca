// The console's routes (contract section 16): /console (the sign-in page
// without a session, the application with one), its assets, and the session
// (POST sign-in, GET who, DELETE sign-out). The gate holds for every path:
// only the sign-in page, its script and the stylesheet are public; everything
// else needs a live session. Every answer carries the console's security
// headers (a CSP with scripts from 'self' only, no framing, no referrer).
import { z } from "zod";
import { loadConfig } from "../config/config";
import type { Env } from "../config/env";
import { isAuthorized } from "../auth/api-token";
import { validate } from "../http/request-body";
import { readJsonBody } from "../http/request-body";
import { errorJson, jsonResponse } from "../base/api-error";
import { errorResponse } from "../http/api-error";
import { isSameOrigin, sessionOf } from "./console-auth";
import { CONSOLE_SCRIPT, CONSOLE_STYLE, SIGN_IN_SCRIPT } from "./generated/console-assets";
import { APP_PAGE, SIGN_IN_PAGE } from "./pages";
import { clearedSetCookie, newSessionId, sessionSetCookie, signSessionId } from "../auth/session-cookie";
import { createSessionStatement, purgeExpiredSessions, revokeSessionStatement } from "../auth/session-store";
import { authenticate, rawAuthSettings, rootTokenDigest } from "../auth/authenticate";
import { ROOT_PRINCIPAL_ID } from "../auth/principal";
import { accessAssertionOf, accessConfigured, verifyAccessAssertion } from "../auth/access";
import { findLiveToken } from "../auth/token-store";
import { countAuthFailure } from "../auth/rate-limits";
import { auditStatement, newAuditId } from "../audit/audit-log";
import { queueRefusal } from "../audit/queue-refusal";

/** A session as the audit log names it: a prefix of its id (never the cookie, whose MAC the id alone lacks). */
function sessionTarget(id: string): string {
  return `console_session:${id.slice(0, 8)}`;
}

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** `{"token"}` only (contract section 18): other fields, such as the `name` earlier versions took, are ignored. */
const signInSchema = z.object({ token: z.string().min(1).max(4_096) });

type Asset = { body: string; type: string; public: boolean };
const ASSETS: Record<string, Asset> = {
  "/console/assets/sign-in.js": { body: SIGN_IN_SCRIPT, type: "text/javascript; charset=utf-8", public: true },
  "/console/assets/console.css": { body: CONSOLE_STYLE, type: "text/css; charset=utf-8", public: true },
  "/console/assets/console.js": { body: CONSOLE_SCRIPT, type: "text/javascript; charset=utf-8", public: false },
};

function withSecurityHeaders(response: Response): Response {
  const out = new Response(response.body, response);
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) out.headers.set(name, value);
  return out;
}

function html(body: string): Response {
  return new Response(body, { status: 200, headers: { "content-type": "text/html; charset=utf-8" } });
}

const unauthorized = () => errorJson(401, { error: "unauthorized", message: "Sign in at /console first (no live console session)." });
const methodNotAllowed = (allow: string) =>
  errorJson(405, { error: "method_not_allowed", message: `This console route takes ${allow}.` }, { allow });

/** Every request under /console (the Worker's entry sends them here). */
export async function handleConsoleRequest(request: Request, env: Env): Promise<Response> {
  return withSecurityHeaders(await route(request, env));
}

async function route(request: Request, env: Env): Promise<Response> {
  const loaded = loadConfig(env);
  if (loaded.state === "bad_config") {
    // Which setting and entry is wrong names servers and tools: only for a valid credential, as on the API.
    const auth = await authenticate(request.headers, { db: env.DB, config: rawAuthSettings(env), waitUntil: () => undefined });
    const trusted = auth.kind === "authenticated";
    return errorJson(503, { error: "bad_config", message: loaded.message, ...(trusted ? { details: loaded.details } : {}) });
  }
  const secret = loaded.state === "ready" ? loaded.config.CONSOLE_SESSION_SECRET : undefined;
  // Behind Cloudflare Access the console needs no sign-in of its own (contract section 18).
  const behindAccess = loaded.state === "ready" && accessConfigured(loaded.config);
  if (loaded.state !== "ready" || (secret === undefined && !behindAccess)) {
    return errorJson(503, {
      error: "not_configured",
      message: "The console is off: set CONSOLE_SESSION_SECRET (and API_TOKEN) with `wrangler secret put`, or in .dev.vars locally.",
    });
  }
  const { pathname } = new URL(request.url);
  const read = request.method === "GET" || request.method === "HEAD";

  if (pathname === "/console" || pathname === "/console/") {
    if (!read) return methodNotAllowed("GET, HEAD");
    return html((await viewerOf(request, env)) ? APP_PAGE : SIGN_IN_PAGE);
  }

  if (pathname === "/console/session") {
    switch (request.method) {
      case "POST":
        if (secret === undefined)
          return errorJson(503, {
            error: "not_configured",
            message: "Sign-in is off: set CONSOLE_SESSION_SECRET, or use the console through Cloudflare Access.",
          });
        return signIn(request, env, loaded.config.API_TOKEN, secret, loaded.config.CONSOLE_SESSION_TTL_SECONDS);
      case "GET": {
        const viewer = await viewerOf(request, env);
        if (viewer) return jsonResponse(200, viewer);
        // A failed look-up is a failed sign-in like any other: counted per client address, 429 past the limit.
        const limited = await countAuthFailure(env, request.headers);
        return limited !== null ? errorResponse(limited) : unauthorized();
      }
      case "DELETE":
        return signOut(request, env);
      default:
        return methodNotAllowed("GET, POST, DELETE");
    }
  }

  const asset = ASSETS[pathname];
  if (asset === undefined) {
    // Unknown paths say nothing about what exists to a caller without a session.
    if (!(await viewerOf(request, env))) return unauthorized();
    return errorJson(404, { error: "not_found", message: `No console page ${pathname}.` });
  }
  if (!read) return methodNotAllowed("GET, HEAD");
  if (!asset.public && !(await viewerOf(request, env))) return unauthorized();
  return new Response(request.method === "HEAD" ? null : asset.body, { headers: { "content-type": asset.type } });
}

/**
 * Who is looking: a live console session, else a verified Cloudflare Access
 * user (no sign-in of its own). `credential` tells the page how to sign out:
 * a session ends here (DELETE /console/session), Access at its own logout.
 */
async function viewerOf(
  request: Request,
  env: Env,
): Promise<{ principal: string; roles: readonly string[]; credential: "console_session" | "access"; expires_at?: string } | null> {
  const session = await sessionOf(request, env);
  if (session) return { principal: session.principal, roles: session.roles, credential: "console_session", expires_at: session.expires_at };
  const loaded = loadConfig(env);
  const assertion = accessAssertionOf(request.headers);
  if (loaded.state !== "ready" || assertion === null || !accessConfigured(loaded.config)) return null;
  const verdict = await verifyAccessAssertion(assertion.jwt, loaded.config, assertion.via);
  return verdict.ok ? { principal: verdict.principal.id, roles: verdict.principal.roles, credential: "access" } : null;
}

async function signIn(request: Request, env: Env, apiToken: string | undefined, secret: string, ttlSeconds: number): Promise<Response> {
  // Browsers send Origin on every POST; one from another site is a login-forgery attempt.
  if (request.headers.has("origin") && !isSameOrigin(request)) {
    return errorJson(403, { error: "forbidden_origin", message: "Sign in from the console's own page." });
  }
  let body: z.output<typeof signInSchema>;
  try {
    body = validate(signInSchema, await readJsonBody(request, z.unknown()));
  } catch (err) {
    return errorResponse(err);
  }
  const now = new Date();
  const named = await findLiveToken(env.DB, body.token, now);
  const isRoot = named === null && apiToken !== undefined && (await isAuthorized(`Bearer ${body.token}`, apiToken));
  if (named === null && !isRoot) {
    const limited = await countAuthFailure(env, request.headers);
    if (limited !== null) return errorResponse(limited);
    return errorJson(401, { error: "unauthorized", message: "That is neither API_TOKEN nor a live named token." });
  }
  const id = newSessionId();
  // A session ends no later than the named token that opened it.
  const ttlEnd = now.getTime() + ttlSeconds * 1_000;
  const expiresAt = named === null ? ttlEnd : Math.min(ttlEnd, Date.parse(named.expires_at));
  await purgeExpiredSessions(env.DB, now);
  const session = {
    id,
    principal: named === null ? ROOT_PRINCIPAL_ID : `token:${named.name}`,
    token_name: named?.name ?? null,
    created_at: now.toISOString(),
    expires_at: new Date(expiresAt).toISOString(),
  };
  await env.DB.batch([
    createSessionStatement(env.DB, session, named === null ? await rootTokenDigest(apiToken) : null),
    auditStatement(env.DB, {
      id: newAuditId(),
      at: session.created_at,
      principal: session.principal,
      action: "session.create",
      target: sessionTarget(id),
      result: "ok",
      details: { expires_at: session.expires_at },
      // Contract section 25: the console's own action, from the client's address where known.
      via: "console",
      ...clientIpOf(request),
    }),
  ]);
  return new Response(null, { status: 204, headers: { "set-cookie": sessionSetCookie(await signSessionId(id, secret), ttlSeconds) } });
}

/** The client's address (CF-Connecting-IP) as an audit entry's client_ip, where known. */
function clientIpOf(request: Request): { client_ip?: string } {
  const ip = request.headers.get("cf-connecting-ip");
  return ip ? { client_ip: ip } : {};
}

async function signOut(request: Request, env: Env): Promise<Response> {
  const session = await sessionOf(request, env);
  if (!session) return unauthorized();
  if (!isSameOrigin(request)) {
    await queueRefusal(env, session.principal, "DELETE /console/session", "forbidden_origin");
    return errorJson(403, { error: "forbidden_origin", message: "Sign out from the console's own page (Origin header)." });
  }
  await env.DB.batch([
    revokeSessionStatement(env.DB, session.id),
    auditStatement(env.DB, {
      id: newAuditId(),
      at: new Date().toISOString(),
      principal: session.principal,
      action: "session.end",
      target: sessionTarget(session.id),
      result: "ok",
      via: "console",
      ...clientIpOf(request),
    }),
  ]);
  return new Response(null, { status: 204, headers: { "set-cookie": clearedSetCookie() } });
}
