// GET /api/openapi.json (contract section 15): the route table
// (src/http/route-table.ts) as an OpenAPI 3.1 document. Every entry's zod
// schemas, the same ones its handler validates with, become the operation's
// parameters, body and answers, through @asteasolutions/zod-to-openapi 9
// (zod 4 native: it reads `.meta()`), so the document cannot drift from the
// routes. How each route is called follows its auth: the API's credentials
// for a role, Slack's signature, the console session or Access for the OAuth
// callback, nothing for a public route; the role itself is `x-required-role`.
import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import type { RouteAuth, RouteSpec } from "./route-spec";

const OPENAPI_VERSION = "3.1.0";
const API_VERSION = "0.1.0";

/** The API's credentials (contract section 18): a bearer token, the console's session cookie, a Cloudflare Access assertion. */
const API_CREDENTIALS: Record<string, string[]>[] = [{ bearer: [] }, { consoleSession: [] }, { cloudflareAccess: [] }];

function securityOf(auth: RouteAuth): Record<string, string[]>[] | undefined {
  switch (auth.kind) {
    case "role":
    case "role_self":
      return undefined; // the document's default: the API's credentials
    case "slack_signature":
      return [{ slackSignature: [] }];
    case "oauth_state":
    case "browser_role":
      return [{ consoleSession: [] }, { cloudflareAccess: [] }];
    case "public":
      return [];
  }
}

/** `:name` (itty-router) as `{name}` (OpenAPI). */
function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, "{$1}");
}

function buildDocument(routes: readonly RouteSpec[]) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  // Contract section 18: the console's session cookie and a Cloudflare Access assertion are credentials too.
  registry.registerComponent("securitySchemes", "consoleSession", { type: "apiKey", in: "cookie", name: "console_session" });
  registry.registerComponent("securitySchemes", "cloudflareAccess", { type: "apiKey", in: "header", name: "Cf-Access-Jwt-Assertion" });
  // Contract section 14: Slack signs each request with the app's signing secret (v0, with X-Slack-Request-Timestamp).
  registry.registerComponent("securitySchemes", "slackSignature", { type: "apiKey", in: "header", name: "X-Slack-Signature" });
  for (const route of routes) {
    const security = securityOf(route.auth);
    const role =
      route.auth.kind === "role" || route.auth.kind === "role_self" || route.auth.kind === "browser_role"
        ? { "x-required-role": route.auth.rule.role }
        : {};
    registry.registerPath({
      method: route.method.toLowerCase() as Lowercase<RouteSpec["method"]>,
      path: openApiPath(route.path),
      summary: route.summary,
      ...(route.description !== undefined ? { description: route.description } : {}),
      ...(route.request !== undefined ? { request: route.request } : {}),
      ...(security !== undefined ? { security } : {}),
      ...role,
      responses: route.responses,
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: OPENAPI_VERSION,
    info: {
      title: "approved-execution-engine",
      version: API_VERSION,
      description: "Approved execution for AI agents on Cloudflare Workers: runs, approvals, a sequenced SSE event log, durable outcomes.",
    },
    security: API_CREDENTIALS,
  });
}

export type OpenApiDocument = ReturnType<typeof buildDocument>;

const built = new WeakMap<readonly RouteSpec[], OpenApiDocument>();

/** The document of a route table, built once per isolate (it only depends on the code). */
export function openApiDocumentOf(routes: readonly RouteSpec[]): OpenApiDocument {
  let doc = built.get(routes);
  if (!doc) {
    doc = buildDocument(routes);
    built.set(routes, doc);
  }
  return doc;
}
