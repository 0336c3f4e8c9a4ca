// What one entry of the route table (src/http/route-table.ts) says: method,
// path, who may call it (its auth), the zod schemas of what it takes and
// answers (the OpenAPI document is generated from them), and its handler.
// Also the small helpers the handlers share (the run's stub, 404s, path params).
import type { ResponseConfig, RouteConfig } from "@asteasolutions/zod-to-openapi";
import type { IRequest } from "itty-router";
import type { RunStub } from "../agent/run-rpc";
import type { RouteRule } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { apiError } from "../base/api-error";
import type { HostConfig } from "../config/config";
import type { Env } from "../config/env";
import { isRunId } from "../ids";
import { runStubFor } from "./start-run";

/** A request past the /api/* guard: its parsed configuration and its principal (contract section 18). */
export type ApiRequest = IRequest & { config: HostConfig; principal: Principal };

type RouteMethod = "GET" | "HEAD" | "POST" | "PUT" | "DELETE";

/**
 * Who may call a route:
 *  - `role`: behind the /api/* guard (configuration, credential, Origin), then the rule (contract section 18);
 *  - `role_self`: the same rule, checked by the handler itself ahead of the guard (GET /api/health, exempt from bad_config);
 *  - `slack_signature`: Slack's v0 signature instead of a credential (contract section 14);
 *  - `oauth_state`: the authorization server's redirect, bound to the connecting principal by a single-use state (section 21);
 *  - `browser_role`: the rule, held through a console session or an Access user only (never a bearer token), checked by the handler (section 26);
 *  - `public`: nobody needs to prove anything.
 */
export type RouteAuth =
  | { kind: "role"; rule: RouteRule }
  | { kind: "role_self"; rule: RouteRule }
  | { kind: "slack_signature" }
  | { kind: "oauth_state" }
  | { kind: "browser_role"; rule: RouteRule }
  | { kind: "public" };

type RouteHandler = (request: ApiRequest, env: Env, ctx: ExecutionContext) => Response | Promise<Response>;

export interface RouteSpec {
  method: RouteMethod;
  /** itty-router's form: `:name` for a path parameter. */
  path: string;
  auth: RouteAuth;
  summary: string;
  description?: string;
  /** What it takes (params, query, headers, body), as zod: the schemas the handler validates with. */
  request?: RouteConfig["request"];
  /** What it answers, by status, as zod. */
  responses: Record<number, ResponseConfig>;
  handler: RouteHandler;
}

/** "<METHOD> <path>", the key a route is known by in the role table and the tests. */
export function routeKey(route: Pick<RouteSpec, "method" | "path">): string {
  return `${route.method} ${route.path}`;
}

export function runStub(env: Env, runId: string | undefined): RunStub {
  if (runId === undefined || !isRunId(runId)) throw notFound("run", runId);
  return runStubFor(env, runId);
}

export function notFound(what: string, id: string | undefined) {
  return apiError(404, { error: "not_found", message: `No ${what} ${JSON.stringify(id ?? "")}.` });
}

/** Path params arrive percent-encoded; a malformed escape is simply an unknown id. */
export function decodePathParam(raw: string | undefined): string {
  try {
    return decodeURIComponent(raw ?? "");
  } catch {
    return raw ?? "";
  }
}
