// GET /api/openapi.json (contract section 15): every route the router serves
// is in the document (the list is read from the router itself, so a new route
// without documentation fails here), every documented operation is served,
// and the document validates as OpenAPI 3.1 with
// @seriousme/openapi-schema-validator (the OpenAPI Initiative's JSON Schemas).
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/http/openapi";
import { router } from "../../src/http/router";

const OPERATIONS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** "GET /api/runs/{runId}" for every concrete route of the router (middleware on wildcards and ALL excluded). */
function servedRoutes(): string[] {
  return router.routes
    .filter(([method, , , path]) => method !== "ALL" && path !== undefined && !path.includes("*"))
    .map(([method, , , path]) => `${method} ${String(path).replace(/:(\w+)/g, "{$1}")}`);
}

function documentedRoutes(doc: ReturnType<typeof openApiDocument>): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const op of OPERATIONS) if ((item as Record<string, unknown>)[op]) out.push(`${op.toUpperCase()} ${path}`);
  }
  return out;
}

describe("OpenAPI document", () => {
  it("documents every route the router serves", () => {
    const served = servedRoutes();
    expect(served.length).toBeGreaterThanOrEqual(17);
    const documented = documentedRoutes(openApiDocument());
    const missing = served.filter((route) => !documented.includes(route));
    expect(missing, "routes served but not in the OpenAPI document").toEqual([]);
  });

  it("documents no route the router does not serve (HEAD is served for every GET)", () => {
    const served = new Set(servedRoutes());
    const phantom = documentedRoutes(openApiDocument()).filter((route) => {
      if (route.startsWith("HEAD ")) return !served.has(route) && !served.has(route.replace(/^HEAD /, "GET "));
      return !served.has(route);
    });
    expect(phantom).toEqual([]);
  });

  it("validates as OpenAPI 3.1", async () => {
    const doc = openApiDocument();
    expect(doc.openapi).toBe("3.1.0");
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    // The validator can fail: an operation without responses and a bad parameter location are refused.
    const broken = structuredClone(doc) as unknown as { paths: Record<string, unknown> };
    broken.paths["/broken"] = { get: { parameters: [{ name: "x", in: "body" }], responses: "none" } };
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it("describes the listing queries with the zod schemas the routes validate with", () => {
    const params = (openApiDocument().paths?.["/api/runs"]?.get?.parameters ?? []) as unknown as {
      name: string;
      schema: Record<string, unknown>;
    }[];
    expect(params.map((p) => p.name).sort()).toEqual(["channel_id", "cursor", "limit", "status", "user_id"]);
    expect(params.find((p) => p.name === "limit")?.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 200, default: 50 });
    const trigger = openApiDocument().paths?.["/api/trigger"]?.post?.requestBody as { content: Record<string, { schema: unknown }> };
    expect(JSON.stringify(trigger.content["application/json"]?.schema)).toContain("max_tool_calls");
  });
});
