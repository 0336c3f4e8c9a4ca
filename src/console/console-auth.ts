// The console's cookie on /api/* (contract section 16). src/index.ts calls
// admitConsoleCookie() once for every /api/* request; the router's guard then
// accepts a request this module admitted (isConsoleRequest) as it accepts the
// bearer token. For a request that carries the cookie and no Authorization:
//  - the cookie must name a live session (else the guard's usual 401);
//  - a state-changing method must carry Origin equal to the request's origin
//    (a missing Origin is refused too): 403 forbidden_origin;
//  - decisions, answers and reconciliations are recorded as
//    `console:<name given at sign-in>`, whatever the body says: the actor
//    field is overwritten before the route reads the body.
// Admitted requests are remembered by identity (a WeakSet), so no header a
// caller could forge marks a request as authenticated.
import { z } from "zod";
import { loadConfig } from "../config/config";
import type { Env } from "../config/env";
import { errorResponse, jsonResponse } from "../http/api-error";
import { readJsonBody } from "../http/request-body";
import { readSessionCookie, verifySessionCookie } from "./session-cookie";
import { type ConsoleSession, liveSession } from "./session-store";

const admitted = new WeakSet<Request>();

/** True for a request admitted by its console session (the router's guard asks). */
export function isConsoleRequest(request: Request): boolean {
  return admitted.has(request);
}

/** Methods that change nothing; every other method needs the console's own Origin. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The body field that names who acted, per route that records one (contract sections 6 and 8). */
const ACTOR_FIELDS: { path: RegExp; field: "decided_by" | "answered_by" | "reconciled_by" }[] = [
  { path: /^\/api\/runs\/[^/]+\/approvals\/[^/]+$/, field: "decided_by" },
  { path: /^\/api\/runs\/[^/]+\/inputs\/[^/]+$/, field: "answered_by" },
  { path: /^\/api\/mutations\/[^/]+\/reconcile$/, field: "reconciled_by" },
];

const CONSOLE_ACTOR_PREFIX = "console:";

/** The live console session a request's cookie names, or null (no cookie, console off, bad MAC, unknown, revoked, expired). */
export async function sessionOf(request: Request, env: Env, now = new Date()): Promise<ConsoleSession | null> {
  const cookie = readSessionCookie(request.headers.get("cookie"));
  if (cookie === null) return null;
  const loaded = loadConfig(env);
  if (loaded.state !== "ready" || loaded.config.CONSOLE_SESSION_SECRET === undefined) return null;
  const id = await verifySessionCookie(cookie, loaded.config.CONSOLE_SESSION_SECRET);
  return id === null ? null : liveSession(env.DB, id, now);
}

/** True when the request's Origin header is exactly the origin it was sent to. */
export function isSameOrigin(request: Request): boolean {
  return request.headers.get("origin") === new URL(request.url).origin;
}

/**
 * For /api/*: the request to route (unchanged when the cookie plays no part,
 * or a copy admitted by the session with its actor field set), or a refusal.
 */
export async function admitConsoleCookie(request: Request, env: Env): Promise<Request | Response> {
  // The bearer token, when sent, decides alone; the cookie is never a fallback for a wrong token.
  if (request.headers.has("authorization")) return request;
  const session = await sessionOf(request, env);
  if (session === null) return request; // the router's guard answers 401 (or 503 when unconfigured)
  if (!SAFE_METHODS.has(request.method) && !isSameOrigin(request)) {
    return jsonResponse(403, {
      error: "forbidden_origin",
      message: "A state-changing request with the console's cookie must come from the console's own origin (Origin header).",
    });
  }
  const actor = ACTOR_FIELDS.find((a) => a.path.test(new URL(request.url).pathname));
  let routed = request;
  if (actor !== undefined && request.method === "POST") {
    let body: Record<string, unknown>;
    try {
      body = await readJsonBody(request, z.record(z.string(), z.unknown()));
    } catch (err) {
      return errorResponse(err);
    }
    const headers = new Headers(request.headers);
    headers.delete("content-length");
    headers.set("content-type", "application/json");
    routed = new Request(request.url, {
      method: request.method,
      headers,
      body: JSON.stringify({ ...body, [actor.field]: `${CONSOLE_ACTOR_PREFIX}${session.name}` }),
    });
  }
  admitted.add(routed);
  return routed;
}
