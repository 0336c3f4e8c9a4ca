// The Worker's router (contract section 2), built from the one route table
// (src/http/route-table.ts). Every /api/* route passes one guard before its
// handler: the config check (503 not_configured / bad_config), the principal
// from the request's credential (401), the Origin rule for credentials a
// browser sends by itself (403 forbidden_origin), and the route's role from
// the table (403 forbidden, contract section 18). Routes that prove their
// caller otherwise (Slack's signature, the OAuth callback's state, GET
// /api/health's own check, public ones) are registered ahead of the guard.
// Every error leaves through the one `catch`.
import { Router } from "itty-router";
import { apiError, errorJson } from "../base/api-error";
import { errorResponse } from "./api-error";
import { isAuthorized } from "../auth/api-token";
import { authenticate } from "../auth/authenticate";
import { authorize, lacksRole } from "../auth/authorize";
import { isBrowserHeld, type Principal } from "../auth/principal";
import { isSameOrigin, SAFE_METHODS } from "../auth/origin-rule";
import { ruleOf } from "./route-roles";
import { countAuthFailure } from "../auth/rate-limits";
import { loadConfig } from "../config/config";
import type { Env } from "../config/env";
import { isRunId } from "../ids";
import { queueRefusal } from "../audit/queue-refusal";
import { activePolicyProblem } from "../outcomes/policy-store";
import { type ApiRequest, runStub } from "./route-spec";
import { ROUTES } from "./route-table";

type Args = [Env, ExecutionContext];

async function guardApi(request: ApiRequest, env: Env, ctx: ExecutionContext): Promise<void> {
  const loaded = loadConfig(env);
  if (loaded.state === "bad_config") {
    // Which setting and entry is wrong names servers and tools: only for a caller with the token.
    const token = (env as unknown as Record<string, unknown>).API_TOKEN;
    const trusted = typeof token === "string" && token !== "" && (await isAuthorized(request.headers.get("authorization"), token));
    throw apiError(503, { error: "bad_config", message: loaded.message, ...(trusted ? { details: loaded.details } : {}) });
  }
  if (loaded.state === "not_configured") throw apiError(503, { error: "not_configured", message: loaded.message });
  const config = loaded.config;
  // Contract section 24: an active stored policy version that no longer validates stops every route; nothing falls back.
  const badPolicy = await activePolicyProblem(env.DB, config);
  if (badPolicy !== null) {
    throw apiError(503, {
      error: "bad_config",
      message: `The active policy version ${badPolicy.version} no longer validates; nothing falls back to an older version or the settings. Fix it in D1 (policy_active, policy_versions) or redeploy code that accepts it.`,
      policy_version: badPolicy.version,
      details: badPolicy.details.map((d) => ({ path: `policy_versions.${badPolicy.version}.${d.path}`, message: d.message })),
    });
  }
  const auth = await authenticate(request.headers, { db: env.DB, config, waitUntil: (p) => ctx.waitUntil(p) });
  if (auth.kind !== "authenticated") {
    // Counted per client address; past the limit the failure is a 429 (a valid credential never gets here).
    const limited = await countAuthFailure(env, request.headers);
    if (limited !== null) throw limited;
    throw apiError(401, {
      error: "unauthorized",
      message: auth.kind === "refused" ? auth.message : "Send Authorization: Bearer <token> (API_TOKEN or a named token).",
    });
  }
  const { principal } = auth;
  // Set before any refusal, so the refusal is audited as this principal's (auditRefusal below).
  request.principal = principal;
  if (isBrowserHeld(principal.credential) && !SAFE_METHODS.has(request.method) && !isSameOrigin(request)) {
    throw apiError(403, {
      error: "forbidden_origin",
      message: "A state-changing request with a credential the browser sends by itself must come from this origin (Origin header).",
    });
  }
  request.config = config;
  await checkRole(request, env, principal);
}

/** The route's role from the one table (contract section 18); an unrouted request falls through to 404/405. */
async function checkRole(request: ApiRequest, env: Env, principal: Principal): Promise<void> {
  const route = matchedRoute(request.method, new URL(request.url).pathname);
  if (route === undefined) return;
  const rule = ruleOf(request.method, route.path);
  if (rule === undefined) {
    // Fail closed: a route nobody gave a role serves no one.
    throw apiError(403, {
      error: "forbidden",
      message: `${request.method} ${route.path} has no role in the route table; nobody may call it.`,
    });
  }
  const verdict = authorize(principal.roles, rule, principal.credential.kind === "access_user");
  if (verdict.kind === "allowed") return;
  if (verdict.kind === "own_run_only") {
    // A requester acts on the runs it requested; an unknown run is the handler's 404.
    const runId = route.params.runId;
    const summary = runId !== undefined && isRunId(runId) ? await runStub(env, runId).summary() : null;
    if (summary === null || summary.requested_by === principal.id) return;
  }
  throw apiError(403, { error: "forbidden", message: lacksRole(principal.id, verdict.role) });
}

/** The registered route (not the /api/* guard) that serves this method and path, with its params. */
function matchedRoute(method: string, pathname: string): { path: string; params: Record<string, string> } | undefined {
  for (const [routeMethod, pattern, , path] of router.routes) {
    if (routeMethod !== method) continue;
    const match = pathname.match(pattern);
    if (match) return { path: path ?? "", params: match.groups ?? {} };
  }
  return undefined;
}

/** The methods the routes serve at `pathname` (middleware registered for every method left out). */
function allowedMethods(pathname: string): string[] {
  const methods = new Set<string>();
  for (const [method, pattern] of router.routes) if (method !== "ALL" && pattern.test(pathname)) methods.add(method);
  return [...methods].sort();
}

/** No handler answered: 405 with Allow when the path exists for other methods, else 404. */
function unrouted(request: ApiRequest): Response {
  const { pathname } = new URL(request.url);
  const allow = allowedMethods(pathname);
  if (allow.length > 0) {
    return errorJson(
      405,
      { error: "method_not_allowed", message: `${pathname} does not serve ${request.method}; it serves ${allow.join(", ")}.` },
      { allow: allow.join(", ") },
    );
  }
  return errorJson(404, { error: "not_found", message: `No route for ${request.method} ${pathname}.` });
}

/**
 * Every 403 of an authenticated request (forbidden, forbidden_origin,
 * actor_mismatch) is counted in the principal's durable refusal queue before
 * it is answered (contract section 18: access.refused, coalesced per minute).
 */
async function auditRefusal(response: Response, request: ApiRequest, env: Env): Promise<Response> {
  const principal = (request as Partial<ApiRequest>).principal;
  if (response.status !== 403 || principal === undefined) return response;
  const code = await response
    .clone()
    .json<{ error?: unknown }>()
    .then((b) => String(b.error ?? "forbidden"))
    .catch(() => "forbidden");
  await queueRefusal(env, principal.id, `${request.method} ${new URL(request.url).pathname}`, code);
  return response;
}

export const router = Router<ApiRequest, Args>({
  catch: errorResponse,
  finally: [(response: Response | undefined, request: ApiRequest) => response ?? unrouted(request), auditRefusal],
});

// Routes that prove their caller themselves first, then the guard, then every route behind it (the table's order).
const ahead = ROUTES.filter((route) => route.auth.kind !== "role");
const behind = ROUTES.filter((route) => route.auth.kind === "role");
for (const route of ahead) router[methodOf(route.method)](route.path, route.handler);
router.all("/api/*", guardApi);
for (const route of behind) router[methodOf(route.method)](route.path, route.handler);

function methodOf(method: string): "get" | "head" | "post" | "put" | "delete" {
  return method.toLowerCase() as "get" | "head" | "post" | "put" | "delete";
}
