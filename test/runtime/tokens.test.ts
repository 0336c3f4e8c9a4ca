// Named API tokens (contract section 18) in workerd against real D1: made by
// an admin and shown once (D1 keeps only the SHA-256), listed without values,
// used as bearer tokens and to sign in to the console, expired and revoked
// (which ends their console sessions), names never reused; each change
// audited in its own D1 batch.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/auth/digest";
import { api, apiAs } from "./helpers";

const ORIGIN = "https://engine.test";

function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

async function create(body: Record<string, unknown>): Promise<Response> {
  return api("/api/tokens", { method: "POST", body: JSON.stringify(body) });
}

async function made(roles: string[], extra: Record<string, unknown> = {}): Promise<{ name: string; token: string; body: any }> {
  const name = uniqueName("tk");
  const res = await create({ name, roles, ...extra });
  expect(res.status).toBe(201);
  const body = await res.json<any>();
  return { name, token: body.token, body };
}

async function row(name: string): Promise<Record<string, unknown> | null> {
  return env.DB.prepare("SELECT * FROM api_tokens WHERE name = ?1").bind(name).first();
}

async function auditOf(target: string): Promise<{ action: string; principal: string; result: string }[]> {
  const { results } = await env.DB.prepare("SELECT action, principal, result FROM audit_log WHERE target = ?1 ORDER BY at, id")
    .bind(target)
    .all<{ action: string; principal: string; result: string }>();
  return results;
}

async function signIn(token: string): Promise<Response> {
  return SELF.fetch(`${ORIGIN}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
}

describe("POST /api/tokens", () => {
  it("answers 201 with the value once; D1 keeps its SHA-256, never the value", async () => {
    const { name, token, body } = await made(["viewer", "requester"], { owner: "access:ada@example.com", ttl_days: 7 });
    expect(token).toMatch(/^aee_[A-Za-z0-9_-]{43}$/);
    expect(body).toEqual({
      name,
      token,
      roles: ["viewer", "requester"],
      owner: "access:ada@example.com",
      created_at: expect.any(String),
      expires_at: expect.any(String),
    });
    expect(Date.parse(body.expires_at) - Date.parse(body.created_at)).toBe(7 * 86_400_000);
    const stored = await row(name);
    expect(stored?.token_sha256).toBe(await sha256Hex(token));
    expect(JSON.stringify(stored)).not.toContain(token.slice(4));
    expect(await auditOf(`token:${name}`)).toEqual([{ action: "token.create", principal: "token:root", result: "ok" }]);
  });

  it("defaults to 90 days", async () => {
    const { body } = await made(["viewer"]);
    expect(Date.parse(body.expires_at) - Date.parse(body.created_at)).toBe(90 * 86_400_000);
  });

  it("validates name, roles, owner and ttl_days (400)", async () => {
    for (const bad of [
      { name: "root", roles: ["viewer"] },
      { name: "Has_Upper", roles: ["viewer"] },
      { name: "-dash", roles: ["viewer"] },
      { name: "x".repeat(64), roles: ["viewer"] },
      { name: uniqueName("r"), roles: [] },
      { name: uniqueName("r"), roles: ["superuser"] },
      { name: uniqueName("r"), roles: ["viewer"], owner: "bob" },
      { name: uniqueName("r"), roles: ["viewer"], ttl_days: 0 },
      { name: uniqueName("r"), roles: ["viewer"], ttl_days: 3651 },
      { name: uniqueName("r"), roles: ["viewer"], token: "aee_mine" },
    ]) {
      const res = await create(bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect((await res.json<any>()).error).toBe("invalid_request");
    }
  });

  it("never uses a name twice, revoked names included: 409 name_taken, and no second audit entry", async () => {
    const { name } = await made(["viewer"]);
    const again = await create({ name, roles: ["admin"] });
    expect(again.status).toBe(409);
    expect((await again.json<any>()).error).toBe("name_taken");
    expect((await api(`/api/tokens/${name}`, { method: "DELETE" })).status).toBe(200);
    expect((await create({ name, roles: ["viewer"] })).status).toBe(409);
    expect((await auditOf(`token:${name}`)).map((e) => e.action)).toEqual(["token.create", "token.revoke"]);
  });
});

describe("using a named token", () => {
  it("authenticates as token:<name> with its roles; GET /api/tokens lists it without a value", async () => {
    const { name, token } = await made(["viewer"]);
    expect((await apiAs(token, "/api/runs")).status).toBe(200);
    const forbidden = await apiAs(token, "/api/trigger", { method: "POST", body: '{"message":"x"}' });
    expect(await forbidden.json()).toEqual({ error: "forbidden", message: `token:${name} lacks the requester role` });
    const listed = (await (await api("/api/tokens")).json<any>()).tokens.find((t: any) => t.name === name);
    expect(listed).toEqual({
      name,
      roles: ["viewer"],
      owner: null,
      owned_by_creator: false,
      created_at: expect.any(String),
      expires_at: expect.any(String),
      last_used_at: expect.any(String),
      revoked_at: null,
    });
    expect(JSON.stringify(await (await api("/api/tokens")).json())).not.toContain(token);
  });

  it("GET /api/tokens shows an owner redacted as the audit log shows it (issue 29)", async () => {
    // An owner that holds a secret-looking value (a GitLab token's shape): the audit entry redacts it.
    const secret = ["gl", "pat-", "0a1b2c3d4e5f6789abcd"].join("");
    const { name, body } = await made(["viewer"], { owner: `access:${secret}@example.com` });
    expect(body.owner).toBe("access:[redacted]@example.com");
    const { results } = await env.DB.prepare("SELECT details FROM audit_log WHERE target = ?1 AND action = 'token.create'")
      .bind(`token:${name}`)
      .all<{ details: string }>();
    const audited = JSON.parse(results[0]?.details ?? "{}").owner;
    expect(audited).toBe("access:[redacted]@example.com");
    const listing = await (await api("/api/tokens")).text();
    expect(listing).not.toContain(secret);
    expect(JSON.parse(listing).tokens.find((t: any) => t.name === name).owner).toBe(audited);
  });

  it("writes last_used_at at most once a minute", async () => {
    const { name, token } = await made(["viewer"]);
    expect((await row(name))?.last_used_at).toBeNull();
    await apiAs(token, "/api/runs");
    await expect.poll(async () => (await row(name))?.last_used_at).not.toBeNull();
    const first = (await row(name))?.last_used_at;
    for (let i = 0; i < 3; i++) await apiAs(token, "/api/runs");
    expect((await row(name))?.last_used_at).toBe(first);
    // A minute later (moved back in D1 rather than waited for), the next use writes it again.
    await env.DB.prepare("UPDATE api_tokens SET last_used_at = '2000-01-01T00:00:00.000Z' WHERE name = ?1").bind(name).run();
    await apiAs(token, "/api/runs");
    await expect.poll(async () => (await row(name))?.last_used_at).not.toBe("2000-01-01T00:00:00.000Z");
  });

  it("an expired token is 401", async () => {
    const { name, token } = await made(["viewer"]);
    await env.DB.prepare("UPDATE api_tokens SET expires_at = '2000-01-01T00:00:00.000Z' WHERE name = ?1").bind(name).run();
    const res = await apiAs(token, "/api/runs");
    expect(res.status).toBe(401);
    expect((await signIn(token)).status).toBe(401);
  });

  it("a wrong aee_ value is 401", async () => {
    expect((await apiAs(`aee_${"A".repeat(43)}`, "/api/runs")).status).toBe(401);
  });
});

describe("DELETE /api/tokens/{name}", () => {
  it("revokes it: 200 {name, revoked_at}; from the next request on the token and its console sessions are 401", async () => {
    const { name, token } = await made(["approver"]);
    const signedIn = await signIn(token);
    expect(signedIn.status).toBe(204);
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
    const who = await SELF.fetch(`${ORIGIN}/console/session`, { headers: { cookie } });
    expect(await who.json<any>()).toMatchObject({ principal: `token:${name}`, roles: ["approver"] });
    expect((await SELF.fetch(`${ORIGIN}/api/runs`, { headers: { cookie } })).status).toBe(200);

    const revoked = await api(`/api/tokens/${name}`, { method: "DELETE" });
    expect(revoked.status).toBe(200);
    const answer = await revoked.json<any>();
    expect(answer).toEqual({ name, revoked_at: expect.any(String) });
    expect((await apiAs(token, "/api/runs")).status).toBe(401);
    expect((await SELF.fetch(`${ORIGIN}/api/runs`, { headers: { cookie } })).status).toBe(401);
    expect((await signIn(token)).status).toBe(401);
    // Again: the same answer, nothing changes.
    expect(await (await api(`/api/tokens/${name}`, { method: "DELETE" })).json()).toEqual(answer);
    expect((await api("/api/tokens/never-made", { method: "DELETE" })).status).toBe(404);
  });

  it("a console session takes its token's current roles", async () => {
    const { name, token } = await made(["viewer"]);
    const cookie = (await signIn(token)).headers.get("set-cookie")!.split(";")[0]!;
    const cancel = () =>
      SELF.fetch(`${ORIGIN}/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel`, { method: "POST", headers: { cookie, origin: ORIGIN } });
    expect((await cancel()).status).toBe(403);
    await env.DB.prepare(`UPDATE api_tokens SET roles = '["approver"]' WHERE name = ?1`).bind(name).run();
    expect((await cancel()).status).toBe(404);
  });
});
