// Rate limits (contract section 18), counted in RateLimiter Durable Objects:
// failed authentications per client address (past 10 in the 60-second window
// that starts at the first failure: 429 rate_limited with Retry-After; a valid
// credential is never refused) and triggers per principal
// (TRIGGER_RATE_PER_MINUTE; a known delivery identity is never counted).
import { createExecutionContext, env, runDurableObjectAlarm, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { FixedWindow } from "../../src/auth/rate-limit";
import worker from "../../src/index";
import { api, freshAddress, namedToken, TOKEN } from "./helpers";

const ORIGIN = "https://engine.test";

function from(address: string, authorization: string | null, path = "/api/runs"): Promise<Response> {
  const headers = new Headers({ "cf-connecting-ip": address });
  if (authorization !== null) headers.set("authorization", authorization);
  return SELF.fetch(`${ORIGIN}${path}`, { headers });
}

describe("failed authentications per client address", () => {
  it("the 11th failure within the window is 429 with Retry-After; the right token still works; another address is untouched", async () => {
    const address = freshAddress();
    for (let i = 1; i <= 10; i++) expect((await from(address, "Bearer wrong-token")).status, `failure ${i}`).toBe(401);
    const limited = await from(address, anotherWrongCredential());
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await limited.json()).toMatchObject({ error: "rate_limited", message: expect.stringContaining(address) });
    expect((await from(address, null)).status).toBe(429);
    // A valid credential is never refused by this limit, so nobody can lock an operator out.
    expect((await from(address, `Bearer ${TOKEN}`)).status).toBe(200);
    expect((await from(address, `Bearer ${(await namedToken(["viewer"])).token}`)).status).toBe(200);
    expect((await from(freshAddress(), "Bearer wrong-token")).status).toBe(401);
  });

  it("counts failures on /api/health too (it answers ahead of the router's guard)", async () => {
    const address = freshAddress();
    for (let i = 1; i <= 10; i++) expect((await from(address, "Bearer wrong-token", "/api/health")).status, `failure ${i}`).toBe(401);
    const limited = await from(address, "Bearer wrong-token", "/api/health");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    // The same address's count, wherever the failures happened.
    expect((await from(address, "Bearer wrong-token")).status).toBe(429);
    expect((await from(address, `Bearer ${TOKEN}`, "/api/health")).status).not.toBe(429);
  });

  it("counts failed console sign-ins too", async () => {
    const address = freshAddress();
    const signIn = () =>
      SELF.fetch(`${ORIGIN}/console/session`, {
        method: "POST",
        headers: { "content-type": "application/json", "cf-connecting-ip": address },
        body: JSON.stringify({ token: "guess" }),
      });
    for (let i = 0; i < 10; i++) expect((await signIn()).status).toBe(401);
    const limited = await signIn();
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    const right = await SELF.fetch(`${ORIGIN}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": address },
      body: JSON.stringify({ token: TOKEN }),
    });
    expect(right.status).toBe(204);
  });

  it("counts failed GET /console/session look-ups too (issue 29): a forged cookie is a failed sign-in", async () => {
    const address = freshAddress();
    const look = (cookie: string) =>
      SELF.fetch(`${ORIGIN}/console/session`, { headers: { cookie: `console_session=${cookie}`, "cf-connecting-ip": address } });
    for (let i = 0; i < 10; i++) expect((await look(`guess${i}.sig`)).status, `look-up ${i + 1}`).toBe(401);
    const limited = await look("guess.sig");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    // The same address's count as the API's.
    expect((await from(address, "Bearer wrong-token")).status).toBe(429);
  });

  it("the window ends 60 s after its first failure: the object's alarm drops it and failures are 401 again", async () => {
    const address = freshAddress();
    for (let i = 0; i < 11; i++) await from(address, "Bearer wrong-token");
    expect((await from(address, "Bearer wrong-token")).status).toBe(429);
    // The window's end, fired now rather than waited for.
    expect(await runDurableObjectAlarm(env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`auth-failures:${address}`)))).toBe(true);
    expect((await from(address, "Bearer wrong-token")).status).toBe(401);
  });
});

/** A second kind of failure (no scheme), to show every failure counts, not only one header value. */
function anotherWrongCredential(): string {
  return "Basic d3Jvbmc6d3Jvbmc=";
}

describe("the fixed window (pure)", () => {
  it("allows `limit` hits from the first, refuses the next with the seconds left, and restarts after the window", () => {
    const rows = new Map<number, { started_at: number; count: number }>();
    // A minimal SqlLike over a map: the three statements FixedWindow runs.
    const sql = {
      exec(query: string, ...bindings: unknown[]) {
        if (query.startsWith("SELECT")) {
          const row = rows.get(1);
          return { toArray: () => (row ? [row] : []), one: () => row } as never;
        }
        if (query.startsWith("INSERT OR REPLACE")) rows.set(1, { started_at: bindings[0] as number, count: 1 });
        else if (query.startsWith("UPDATE")) rows.set(1, { ...rows.get(1)!, count: bindings[0] as number });
        else if (query.startsWith("DELETE")) rows.clear();
        return { toArray: () => [], one: () => undefined } as never;
      },
    };
    const window = new FixedWindow(sql);
    const t0 = 1_000_000;
    for (let i = 1; i <= 3; i++) expect(window.hit(3, 60_000, t0 + i - 1)).toEqual({ allowed: true, count: i });
    expect(window.hit(3, 60_000, t0 + 20_000)).toEqual({ allowed: false, count: 4, retry_after_seconds: 40 });
    expect(window.hit(3, 60_000, t0 + 59_999)).toMatchObject({ allowed: false, retry_after_seconds: 1 });
    expect(window.hit(3, 60_000, t0 + 60_000)).toEqual({ allowed: true, count: 1 });
  });
});

describe("triggers per principal", () => {
  const limitedEnv = { ...env, TRIGGER_RATE_PER_MINUTE: "2" } as never;
  const triggerAs = (token: string, body: Record<string, unknown>, e: never = limitedEnv) =>
    worker.fetch(
      new Request(`${ORIGIN}/api/trigger`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "cf-connecting-ip": freshAddress() },
        body: JSON.stringify(body),
      }),
      e,
      createExecutionContext(),
    );

  it("past TRIGGER_RATE_PER_MINUTE a principal's trigger is 429 with Retry-After; other principals are counted apart", async () => {
    const a = await namedToken(["requester"], "burst");
    expect((await triggerAs(a.token, { message: "1" })).status).toBe(202);
    expect((await triggerAs(a.token, { message: "2" })).status).toBe(202);
    const third = await triggerAs(a.token, { message: "3" });
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await third.json()).toMatchObject({ error: "rate_limited", message: expect.stringContaining(a.principal) });
    const b = await namedToken(["requester"], "calm");
    expect((await triggerAs(b.token, { message: "1" })).status).toBe(202);
  });

  it("a repeat of a known delivery identity is never counted and never 429", async () => {
    const a = await namedToken(["requester"], "dupes");
    const delivery = `Ev-${crypto.randomUUID()}`;
    expect((await triggerAs(a.token, { message: "1", delivery_id: delivery })).status).toBe(202);
    for (let i = 0; i < 4; i++) expect((await triggerAs(a.token, { message: "1", delivery_id: delivery })).status).toBe(200);
    expect((await triggerAs(a.token, { message: "2" })).status).toBe(202);
    expect((await triggerAs(a.token, { message: "3" })).status).toBe(429);
    expect((await triggerAs(a.token, { message: "1", delivery_id: delivery })).status).toBe(200);
  });

  it("TRIGGER_RATE_PER_MINUTE=0 turns the limit off", async () => {
    const off = { ...env, TRIGGER_RATE_PER_MINUTE: "0" } as never;
    const a = await namedToken(["requester"], "nolimit");
    for (let i = 0; i < 4; i++) expect((await triggerAs(a.token, { message: String(i) }, off)).status).toBe(202);
    expect((await api("/api/runs")).status).toBe(200);
  });
});
