// The Worker's routes (contract section 2). Every /api/* route passes one
// guard before its handler: the config check (503 not_configured /
// bad_config), the principal from the request's credential (401), the Origin
// rule for credentials a browser sends by itself (403 forbidden_origin), and
// the route's role from the one table in route-roles.ts (403 forbidden,
// contract section 18). Every error leaves through the one `catch`.
import { Router, type IRequest } from "itty-router";
import type { RunObject } from "../../durable-objects/run-object";
import { apiError, errorResponse, jsonResponse } from "./api-error";
import { isAuthorized } from "./auth";
import { authenticate } from "../auth/authenticate";
import { authorize, lacksRole } from "../auth/authorize";
import { isBrowserHeld, type Principal } from "../auth/principal";
import { isSameOrigin, SAFE_METHODS } from "../auth/origin-rule";
import { ruleOf } from "./route-roles";
import { countAuthFailure } from "../auth/rate-limits";
import { actorOf } from "../auth/actor-fields";
import { loadConfig, type HostConfig } from "../config/config";
import { getDelivery, principalNamespace, slackNamespace } from "./deliveries";
import { grants } from "../auth/roles";
import type { Env } from "../config/env";
import { handleEvents } from "./handlers/events";
import { handleGetMutation, handleReconcile, handleRunMutations, handleStoragePool } from "./handlers/mutations";
import { handleTrigger } from "./handlers/trigger";
import { approvalDecisionSchema, inputAnswerSchema, mcpInputAnswerSchema } from "./decision-requests";
import { actionResponse, apiDecider } from "./decision-answers";
import type { PersonAction } from "../wire/run-protocol";
import { readJsonBody, validate } from "./request-body";
import { z } from "zod";
import { isRunId } from "../ids";
import { handleListApprovals, handleListInputs, handleListMutations, handleListRuns, listing } from "./handlers/listings";
import { auditQuerySchema, listAudit } from "../audit/audit-reads";
import { openApiDocument } from "./openapi";
import { handleMetrics } from "../operate/metrics-route";
import { handleHealth } from "../operate/health-route";
import { handleCreateToken, handleListTokens, handleRevokeToken, type TokenAudit } from "./handlers/tokens";
import { handleListMcpServers } from "./handlers/mcp-servers";
import { handleCallback, handleClientDocument, handleConnect } from "../mcp-oauth/oauth-routes";
import { auditStatement, newAuditId } from "../audit/audit-log";
import { queueRefusal } from "../audit/queue-refusal";
import { handleEngageHalt, handleGetHalt, handleListHalts, handleReleaseHalt } from "./handlers/halts";

type ApiRequest = IRequest & { config: HostConfig; principal: Principal };
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

/** Audit entries of a D1 change by this request's principal, for the change's own batch. */
function tokenAudit(db: D1Database, principal: Principal): TokenAudit {
  return {
    entry: (action, target, details) =>
      auditStatement(
        db,
        {
          id: newAuditId(),
          at: new Date().toISOString(),
          principal: principal.id,
          action,
          target,
          result: "ok",
          ...(details ? { details } : {}),
        },
        { onlyIfPreviousChanged: action === "token.create" },
      ),
  };
}

function runStub(env: Env, runId: string | undefined): DurableObjectStub<RunObject> {
  if (runId === undefined || !isRunId(runId)) throw notFound("run", runId);
  return env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(runId));
}

function notFound(what: string, id: string | undefined) {
  return apiError(404, { error: "not_found", message: `No ${what} ${JSON.stringify(id ?? "")}.` });
}

/** Path params arrive percent-encoded; a malformed escape is simply an unknown id. */
function decodePathParam(raw: string | undefined): string {
  try {
    return decodeURIComponent(raw ?? "");
  } catch {
    return raw ?? "";
  }
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
    return jsonResponse(
      405,
      { error: "method_not_allowed", message: `${pathname} does not serve ${request.method}; it serves ${allow.join(", ")}.` },
      { allow: allow.join(", ") },
    );
  }
  return jsonResponse(404, { error: "not_found", message: `No route for ${request.method} ${pathname}.` });
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

router
  .get("/healthz", () => jsonResponse(200, { status: "ok" }))
  .head("/healthz", () => new Response(null, { status: 200, headers: { "content-type": "application/json; charset=utf-8" } }))
  .get("/api/health", (request, env, ctx) => handleHealth(request, env, ctx))
  .all("/api/*", guardApi)
  .post("/api/trigger", (request, env) => handleTrigger(request, env, request.config, request.principal))
  .get("/api/runs/:runId", async ({ params }, env) => {
    const summary = await runStub(env, params.runId).summary();
    if (!summary) throw notFound("run", params.runId);
    return jsonResponse(200, summary);
  })
  .get("/api/runs/:runId/events", (request, env) => handleEvents(request, runStub(env, request.params.runId)))
  .post("/api/runs/:runId/cancel", async ({ params, principal }, env) => {
    const verdict = await runStub(env, params.runId).act({ kind: "cancel", actor: apiDecider(principal) });
    if (verdict.kind !== "cancel" || !verdict.result.found) throw notFound("run", params.runId);
    return jsonResponse(verdict.result.already_ended ? 200 : 202, { status: verdict.result.status });
  })
  .post("/api/runs/:runId/approvals/:approvalId", async (request, env) => {
    const { decided_by, decision, ...body } = await readJsonBody(request, approvalDecisionSchema);
    const { principal } = request;
    actorOf(principal, "decided_by", decided_by);
    const id = decodePathParam(request.params.approvalId);
    const actor = apiDecider(principal);
    const reason = body.reason !== undefined ? { reason: body.reason } : {};
    const action: PersonAction =
      decision === "approve"
        ? {
            kind: "approve",
            approval_id: id,
            actor,
            ...reason,
            ...(body.confirmation !== undefined ? { confirmation: body.confirmation } : {}),
          }
        : { kind: "deny", approval_id: id, actor, ...reason };
    return actionResponse(await runStub(env, request.params.runId).act(action), "approval", id);
  })
  .post("/api/runs/:runId/inputs/:toolCallId", async (request, env) => {
    // An MCP question's answer names its `action`; anything else is checked as human__ask's, so the issues name its fields.
    const raw = await readJsonBody(request, z.unknown());
    const isAction = typeof raw === "object" && raw !== null && "action" in raw;
    const body = isAction ? validate(mcpInputAnswerSchema, raw) : validate(inputAnswerSchema, raw);
    actorOf(request.principal, "answered_by", body.answered_by);
    const id = decodePathParam(request.params.toolCallId);
    const stub = runStub(env, request.params.runId);
    const actor = apiDecider(request.principal);
    if ("answer" in body)
      return actionResponse(await stub.act({ kind: "answer", tool_call_id: id, answer: body.answer, actor }), "question", id);
    // An MCP tool's question mid-call (contract section 21): only someone eligible to approve the call answers it.
    const answer = body.action === "accept" ? { action: body.action, content: body.content } : { action: body.action };
    return actionResponse(await stub.act({ kind: "answer_form", input_id: id, answer, actor }), "question", id);
  })
  .get("/api/runs/:runId/mutations", (request, env, ctx) => {
    const stub = runStub(env, request.params.runId);
    return handleRunMutations(env, request.config, ctx, request.params.runId!, async () => (await stub.summary()) !== null);
  })
  .get("/api/mutations/:mutationId", (request, env, ctx) =>
    handleGetMutation(env, request.config, ctx, decodePathParam(request.params.mutationId)),
  )
  .post("/api/mutations/:mutationId/reconcile", (request, env, ctx) =>
    handleReconcile(request, env, request.config, ctx, decodePathParam(request.params.mutationId), request.principal),
  )
  .get("/api/storage-pool", (_request, env) => handleStoragePool(env))
  .get("/api/deliveries/:deliveryId", async (request, env) => {
    // Contract section 3: the caller's own namespace; an adapter (or an admin) may read Slack's with ?source=slack.
    const source = new URL(request.url).searchParams.get("source");
    if (source !== null && source !== "slack") {
      throw apiError(400, { error: "invalid_request", message: 'source is "slack" or left out (the caller\'s own identities).' });
    }
    if (source === "slack" && !grants(request.principal.roles, "adapter") && !grants(request.principal.roles, "admin")) {
      throw apiError(403, {
        error: "forbidden",
        message: `${lacksRole(request.principal.id, "adapter")}: only an adapter reads Slack's deliveries.`,
      });
    }
    const namespace = source === "slack" ? slackNamespace() : principalNamespace(request.principal.id);
    const receipt = await getDelivery(env.DB, namespace, decodePathParam(request.params.deliveryId));
    if (!receipt) throw notFound("delivery", request.params.deliveryId);
    return jsonResponse(200, receipt);
  });

// Listings across runs and the route table as OpenAPI (contract section 15).
router
  .get("/api/runs", (request, env) => handleListRuns(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS))
  .get("/api/approvals", (request, env) => handleListApprovals(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS))
  .get("/api/inputs", (request, env) => handleListInputs(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS))
  .get("/api/mutations", (request, env) => handleListMutations(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS))
  .get("/api/openapi.json", () => jsonResponse(200, openApiDocument()))
  .get("/api/metrics", (request, env) => handleMetrics(env, request.config))
  // The configured MCP servers as last seen (contract section 21).
  .get("/api/mcp/servers", (request, env) => handleListMcpServers(env.DB, request.config))
  // OAuth for hosted servers (contract section 21): the connect (admin), the callback and the client metadata document.
  .post("/api/mcp/servers/:server/connect", (request, env) =>
    handleConnect(env.DB, request.config, decodePathParam(request.params.server), request.principal.id),
  )
  .get("/oauth/callback", (request, env, ctx) => handleCallback(request, env, ctx))
  .get("/oauth/client.json", (_request, env) => handleClientDocument(env));

// Named tokens and the audit log (contract section 18).
router
  .post("/api/tokens", (request, env) => handleCreateToken(request, env.DB, request.principal, tokenAudit(env.DB, request.principal)))
  .get("/api/tokens", (request, env) => handleListTokens(env.DB, request.principal))
  .delete("/api/tokens/:name", (request, env) =>
    handleRevokeToken(env.DB, decodePathParam(request.params.name), request.principal, tokenAudit(env.DB, request.principal)),
  )
  .get("/api/audit", (request, env) =>
    listing(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS, auditQuerySchema, "entries", listAudit),
  );

// Halts (contract section 23).
router
  .post("/api/halts", (request, env) => handleEngageHalt(request, env, request.config, request.principal))
  .get("/api/halts", (request, env) => handleListHalts(new URL(request.url), env, request.config.STORAGE_WAIT_MS))
  .get("/api/halts/:haltId", (request, env) => handleGetHalt(env, decodePathParam(request.params.haltId)))
  .delete("/api/halts/:haltId", (request, env) => handleReleaseHalt(env, decodePathParam(request.params.haltId), request.principal));
