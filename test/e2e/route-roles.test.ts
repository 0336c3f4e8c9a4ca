// Every role against every /api route over loopback HTTP (contract section
// 18), against wrangler dev: the same matrix as the runtime test
// (test/runtime/route-roles.test.ts, which also checks that the route table
// names exactly the routes the router serves), here through the real Worker
// entry, with tokens made by POST /api/tokens as an operator would. What each
// role may do comes from test/support/role-expectations.ts (the contract's
// words), not from the route table under test.
import { beforeAll, describe, expect, inject, it } from "vitest";
import { ROLES } from "../../src/auth/roles";
import { ROUTE_ROLES } from "../../src/http/route-roles";
import { concretePath, roleAllows } from "../support/role-expectations";

const url = inject("workerUrl");
const rootToken = inject("workerToken");

function call(token: string, route: string, runId: string): Promise<Response> {
  const [method, path] = route.split(" ") as [string, string];
  return fetch(`${url}${concretePath(path, runId)}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(method === "POST" ? { "content-type": "application/json" } : {}) },
    ...(method === "POST" ? { body: "{}" } : {}),
  });
}

/** A named token with one role, made through the API by the root token, as the README's walk-through does. */
async function tokenWith(role: string): Promise<{ token: string; principal: string }> {
  const name = `e2e-${role}-${Date.now().toString(36)}`;
  const res = await fetch(`${url}/api/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ name, roles: [role] }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return { token: ((await res.json()) as { token: string }).token, principal: `token:${name}` };
}

let runId: string;
beforeAll(async () => {
  // A run requested by someone else (token:root): a requester's own-run routes are refused on it.
  const res = await fetch(`${url}/api/trigger`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ message: "roles over HTTP", script: [{ text: "hi" }] }),
  });
  expect(res.status).toBe(202);
  runId = ((await res.json()) as { run_id: string }).run_id;
});

describe("each role against each route, over HTTP", () => {
  const routes = Object.keys(ROUTE_ROLES);
  it("covers the whole table", () => {
    expect(routes.length).toBeGreaterThan(15);
  });

  for (const role of ROLES) {
    it(`${role}: allowed where the contract says, else 403 forbidden naming the missing role`, async () => {
      const { token, principal } = await tokenWith(role);
      for (const route of routes) {
        const res = await call(token, route, runId);
        // application/json only: the audit export (contract section 25) is JSON Lines.
        const body = res.headers.get("content-type")?.includes("application/json") ? await res.json() : (await res.body?.cancel(), null);
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
});
