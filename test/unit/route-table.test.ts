// The one route table (src/http/route-table.ts, issue 28 point 5): every
// route has an auth and schemas, the router serves exactly the table, the
// role table is the table's rules, the OpenAPI document's operations are the
// table's, and the error codes are one closed union whose spellings are the
// contract's.
import { describe, expect, it } from "vitest";
import { apiError, ERROR_CODES, errorCodeSchema, errorJson } from "../../src/base/api-error";
import { openApiDocument } from "../../src/http/openapi";
import { ROUTE_ROLES } from "../../src/http/route-roles";
import { ROUTES } from "../../src/http/route-table";
import { router } from "../../src/http/router";

const key = (method: string, path: string) => `${method} ${path}`;
const TABLE = ROUTES.map((r) => key(r.method, r.path));

describe("the route table", () => {
  it("names each route once, every one with an auth, a summary, answers and its path params' schema", () => {
    expect(new Set(TABLE).size).toBe(TABLE.length);
    for (const route of ROUTES) {
      const label = key(route.method, route.path);
      expect(route.summary, label).not.toBe("");
      expect(Object.keys(route.responses).length, label).toBeGreaterThan(0);
      const pathParams = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]).sort();
      const params = route.request?.params;
      const declared = params && "shape" in params ? Object.keys(params.shape as object).sort() : [];
      expect(declared, `${label}: the params schema names its path's parameters`).toEqual(pathParams);
    }
  });

  it("guards every /api route with a role (contract section 18), and /slack/* with Slack's signature (section 14)", () => {
    for (const route of ROUTES) {
      const label = key(route.method, route.path);
      if (route.path.startsWith("/api/")) expect(["role", "role_self"], label).toContain(route.auth.kind);
      if (route.path.startsWith("/slack/"))
        expect(route.auth.kind, label).toBe(
          // Contract section 26: the install is an admin's browser; Slack's redirect back is bound by its state.
          route.path === "/slack/install" ? "browser_role" : route.path === "/slack/oauth_redirect" ? "oauth_state" : "slack_signature",
        );
    }
    // Contract section 2's Slack routes, and the ones served without any credential.
    expect(TABLE).toEqual(expect.arrayContaining(["POST /slack/events", "POST /slack/interactivity"]));
    expect(ROUTES.filter((r) => r.auth.kind === "public").map((r) => key(r.method, r.path))).toEqual([
      "GET /healthz",
      "HEAD /healthz",
      "GET /oauth/client.json",
    ]);
  });

  it("is what the router serves, nothing more (the /api/* guard aside)", () => {
    const served = router.routes.filter(([method]) => method !== "ALL").map(([method, , , path]) => key(method, String(path)));
    expect([...served].sort()).toEqual([...TABLE].sort());
    // The guard is registered after every route that proves its caller otherwise, before every route that needs a role.
    const guard = router.routes.findIndex(([method, , , path]) => method === "ALL" && path === "/api/*");
    router.routes.forEach(([method, , , path], i) => {
      if (method === "ALL") return;
      const route = ROUTES.find((r) => r.method === method && r.path === path)!;
      expect(i > guard, `${method} ${path}`).toBe(route.auth.kind === "role");
    });
  });

  it("gives the role table exactly the table's rules", () => {
    const withRole = ROUTES.filter((r) => r.auth.kind === "role" || r.auth.kind === "role_self");
    expect(Object.keys(ROUTE_ROLES).sort()).toEqual(withRole.map((r) => key(r.method, r.path)).sort());
    for (const route of withRole) if ("rule" in route.auth) expect(ROUTE_ROLES[key(route.method, route.path)]).toBe(route.auth.rule);
  });

  it("generates the OpenAPI document's operations, one per route, with the route's role and how it is called", () => {
    const doc = openApiDocument();
    const documented: string[] = [];
    for (const [path, item] of Object.entries(doc.paths ?? {})) {
      for (const [method, op] of Object.entries(item as Record<string, unknown>)) {
        if (["get", "head", "post", "delete", "put", "patch"].includes(method)) {
          documented.push(key(method.toUpperCase(), path.replace(/\{(\w+)\}/g, ":$1")));
          const route = ROUTES.find((r) => r.method === method.toUpperCase() && r.path === path.replace(/\{(\w+)\}/g, ":$1"))!;
          const operation = op as { "x-required-role"?: string; security?: unknown[] };
          expect(operation["x-required-role"], `${method} ${path}`).toBe("rule" in route.auth ? route.auth.rule.role : undefined);
        }
      }
    }
    expect(documented.sort()).toEqual([...TABLE].sort());
    expect(doc.paths?.["/slack/events"]?.post?.security).toEqual([{ slackSignature: [] }]);
    expect(doc.paths?.["/healthz"]?.get?.security).toEqual([]);
    // Errors are described by the one union of codes, not any string.
    const schemas = (doc.components?.schemas ?? {}) as Record<string, { properties: { error: { enum?: string[] } } }>;
    const errorSchema = schemas.Error;
    expect(errorSchema?.properties.error.enum).toEqual([...ERROR_CODES]);
  });
});

describe("the error codes", () => {
  it("spell every code the contract names as an API error", () => {
    // Contract sections 2, 6, 8, 13, 14, 15, 18, 19, 21 and 22, as written there.
    const named = [
      "unauthorized",
      "method_not_allowed",
      "not_configured",
      "bad_config",
      "forbidden",
      "forbidden_origin",
      "actor_mismatch",
      "rate_limited",
      "not_an_approver",
      "self_approval_forbidden",
      "confirmation_mismatch",
      "invalid_answer",
      "already_resolved",
      "expired",
      "not_reconcilable",
      "storage_timeout",
      "storage_unavailable",
      "replay_gap",
      "name_taken",
      "not_oauth",
      "bad_state",
      "authorization_failed",
      "bad_request",
    ];
    for (const code of named) expect(errorCodeSchema.safeParse(code).success, code).toBe(true);
  });

  it("refuses a code outside the union, at build time and at run time", async () => {
    expect(errorCodeSchema.safeParse("no_such_code").success).toBe(false);
    expect(errorCodeSchema.safeParse("Unauthorized").success).toBe(false);
    // @ts-expect-error an error code the union does not name does not type-check
    const thrown = apiError(400, { error: "no_such_code", message: "x" });
    expect(thrown.status).toBe(400);
    // @ts-expect-error nor in an answer built at once
    const answered = errorJson(418, { error: "teapot", message: "x" });
    expect(await answered.json()).toEqual({ error: "teapot", message: "x" });
  });
});
