// Every role against every /api route (contract section 18), generated from
// the router's own route table: a route without a role in src/http/route-roles.ts
// fails here, and each role is tried on each route. What each role may do is
// written in test/support/role-expectations.ts from the contract's words, not
// read from the route table, so a wrong entry in the table fails too.
import { describe, expect, it } from "vitest";
import { ROLES } from "../../src/auth/roles";
import { ROUTE_ROLES } from "../../src/http/route-roles";
import { router } from "../../src/http/router";
import { concretePath, roleAllows } from "../support/role-expectations";
import { apiAs, namedToken, trigger } from "./helpers";

/** The /api routes the router serves, as "<METHOD> <path>" (the /api/* guard itself left out). */
const API_ROUTES = router.routes
  .filter(([method, , , path]) => method !== "ALL" && path?.startsWith("/api/"))
  .map(([method, , , path]) => `${method} ${path}`);

async function call(token: string, route: string, runId: string): Promise<Response> {
  const [method, path] = route.split(" ") as [string, string];
  const res = await apiAs(token, concretePath(path, runId), {
    method,
    ...(method === "POST" ? { body: "{}" } : {}),
  });
  return res;
}

describe("the route table", () => {
  it("gives every /api route a role, and names no route the router does not serve", () => {
    expect(API_ROUTES.length).toBeGreaterThan(15);
    for (const route of API_ROUTES) expect(ROUTE_ROLES[route], `${route} has no role in src/http/route-roles.ts`).toBeDefined();
    for (const route of Object.keys(ROUTE_ROLES)) expect(API_ROUTES, `${route} is in the role table but not routed`).toContain(route);
  });
});

describe("each role against each route", () => {
  for (const role of [...ROLES, "none"] as const) {
    it(`${role}: allowed where the contract says, else 403 forbidden naming the missing role`, async () => {
      const { token, principal } = await namedToken(role === "none" ? [] : [role], `role-${role}`);
      // A run requested by someone else (token:root): a requester's own-run routes are refused on it.
      const { json } = await trigger({ message: "roles", script: [{ text: "hi" }] });
      for (const route of API_ROUTES) {
        const res = await call(token, route, json.run_id);
        const body = res.headers.get("content-type")?.includes("application/json")
          ? await res.json<any>()
          : (await res.body?.cancel(), null);
        if (roleAllows(role, route, false)) {
          expect(res.status, `${role} on ${route}: ${JSON.stringify(body)}`).not.toBe(403);
          expect(res.status, `${role} on ${route}`).not.toBe(401);
        } else {
          expect(res.status, `${role} on ${route}: ${JSON.stringify(body)}`).toBe(403);
          expect(body).toEqual({ error: "forbidden", message: `${principal} lacks the ${ROUTE_ROLES[route]!.role} role` });
        }
      }
    });
  }

  it("a requester cancels and answers the runs it requested, not others'", async () => {
    const requester = await namedToken(["requester"], "own");
    const started = await apiAs(requester.token, "/api/trigger", {
      method: "POST",
      body: JSON.stringify({
        message: "mine",
        script: [{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which?" } }] }, { text: "ok" }],
      }),
    });
    expect(started.status).toBe(202);
    const { run_id } = await started.json<any>();
    await expect.poll(async () => (await (await apiAs(requester.token, `/api/runs/${run_id}`)).json<any>()).pending_inputs.length).toBe(1);
    const answered = await apiAs(requester.token, `/api/runs/${run_id}/inputs/ask-1`, { method: "POST", body: '{"answer":"this"}' });
    expect(answered.status).toBe(200);
    expect([200, 202]).toContain((await apiAs(requester.token, `/api/runs/${run_id}/cancel`, { method: "POST" })).status);

    const other = await namedToken(["requester"], "other");
    const refused = await apiAs(other.token, `/api/runs/${run_id}/cancel`, { method: "POST" });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ error: "forbidden", message: `${other.principal} lacks the approver role` });
  });
});
