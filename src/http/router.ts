// The Worker's routes (contract section 2). Every /api/* route passes the
// config check (503 not_configured / bad_config) and the bearer check (401)
// before its handler; every error leaves through the one `catch`.
import { Router, type IRequest } from "itty-router";
import type { RunObject } from "../../durable-objects/run-object";
import { apiError, errorResponse, jsonResponse } from "./api-error";
import { isAuthorized } from "./auth";
import { isConsoleRequest } from "../console/console-auth";
import { loadConfig, type HostConfig } from "../config/config";
import { getDelivery } from "./deliveries";
import type { Env } from "../config/env";
import { handleEvents } from "./handlers/events";
import { handleGetMutation, handleReconcile, handleRunMutations, handleStoragePool } from "./handlers/mutations";
import { handleTrigger } from "./handlers/trigger";
import { approvalDecisionSchema, inputAnswerSchema } from "./decision-requests";
import { verdictResponse } from "./decision-answers";
import { readJsonBody } from "./request-body";
import { isRunId } from "../ids";
import { handleListApprovals, handleListInputs, handleListMutations, handleListRuns } from "./handlers/listings";
import { openApiDocument } from "./openapi";
import { handleMetrics } from "../operate/metrics-route";
import { handleHealth } from "../operate/health-route";

type ApiRequest = IRequest & { config: HostConfig };
type Args = [Env, ExecutionContext];

async function guardApi(request: ApiRequest, env: Env): Promise<void> {
  const loaded = loadConfig(env);
  if (loaded.state === "bad_config") {
    // Which setting and entry is wrong names servers and tools: only for a caller with the token.
    const token = (env as unknown as Record<string, unknown>).API_TOKEN;
    const trusted = typeof token === "string" && token !== "" && (await isAuthorized(request.headers.get("authorization"), token));
    throw apiError(503, { error: "bad_config", message: loaded.message, ...(trusted ? { details: loaded.details } : {}) });
  }
  if (loaded.state === "not_configured") throw apiError(503, { error: "not_configured", message: loaded.message });
  // The console's session cookie was checked before routing (src/console/console-auth.ts, contract section 16).
  if (!isConsoleRequest(request) && !(await isAuthorized(request.headers.get("authorization"), loaded.config.API_TOKEN))) {
    throw apiError(401, { error: "unauthorized", message: "Send Authorization: Bearer <API_TOKEN>." });
  }
  request.config = loaded.config;
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

export const router = Router<ApiRequest, Args>({
  catch: errorResponse,
  finally: [(response: Response | undefined, request: ApiRequest) => response ?? unrouted(request)],
});

router
  .get("/healthz", () => jsonResponse(200, { status: "ok" }))
  .head("/healthz", () => new Response(null, { status: 200, headers: { "content-type": "application/json; charset=utf-8" } }))
  .get("/api/health", (request, env) => handleHealth(request, env))
  .all("/api/*", guardApi)
  .post("/api/trigger", (request, env) => handleTrigger(request, env, request.config))
  .get("/api/runs/:runId", async ({ params }, env) => {
    const summary = await runStub(env, params.runId).summary();
    if (!summary) throw notFound("run", params.runId);
    return jsonResponse(200, summary);
  })
  .get("/api/runs/:runId/events", (request, env) => handleEvents(request, runStub(env, request.params.runId)))
  .post("/api/runs/:runId/cancel", async ({ params }, env) => {
    const result = await runStub(env, params.runId).cancel();
    if (!result.found) throw notFound("run", params.runId);
    return jsonResponse(result.already_ended ? 200 : 202, { status: result.status });
  })
  .post("/api/runs/:runId/approvals/:approvalId", async (request, env) => {
    const body = await readJsonBody(request, approvalDecisionSchema);
    return verdictResponse(await runStub(env, request.params.runId).decideApproval(decodePathParam(request.params.approvalId), body));
  })
  .post("/api/runs/:runId/inputs/:toolCallId", async (request, env) => {
    const body = await readJsonBody(request, inputAnswerSchema);
    return verdictResponse(
      await runStub(env, request.params.runId).answerInput(decodePathParam(request.params.toolCallId), body.answer, body.answered_by),
    );
  })
  .get("/api/runs/:runId/mutations", (request, env, ctx) => {
    const stub = runStub(env, request.params.runId);
    return handleRunMutations(env, request.config, ctx, request.params.runId!, async () => (await stub.summary()) !== null);
  })
  .get("/api/mutations/:mutationId", (request, env, ctx) =>
    handleGetMutation(env, request.config, ctx, decodePathParam(request.params.mutationId)),
  )
  .post("/api/mutations/:mutationId/reconcile", (request, env, ctx) =>
    handleReconcile(request, env, request.config, ctx, decodePathParam(request.params.mutationId)),
  )
  .get("/api/storage-pool", (_request, env) => handleStoragePool(env))
  .get("/api/deliveries/:deliveryId", async ({ params }, env) => {
    const receipt = await getDelivery(env.DB, decodePathParam(params.deliveryId));
    if (!receipt) throw notFound("delivery", params.deliveryId);
    return jsonResponse(200, receipt);
  });

// Listings across runs and the route table as OpenAPI (contract section 15).
router
  .get("/api/runs", (request, env) => handleListRuns(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS))
  .get("/api/approvals", (request, env) => handleListApprovals(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS))
  .get("/api/inputs", (request, env) => handleListInputs(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS))
  .get("/api/mutations", (request, env) => handleListMutations(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS))
  .get("/api/openapi.json", () => jsonResponse(200, openApiDocument()))
  .get("/api/metrics", (request, env) => handleMetrics(env, request.config));
