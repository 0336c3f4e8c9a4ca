// Cloudflare Access (contract section 18) tested offline: a JWKS stand-in on
// loopback (test/support/jwks-server.ts) serves the public key, jose signs
// the assertions here (good, wrong aud, wrong iss, expired, not yet valid,
// unknown key), and the Worker verifies them with jose: access:<email>
// principals with ACCESS_ROLES, service tokens, the Origin rule for users,
// the console with no sign-in of its own, and the JWKS cache.
import { createExecutionContext, env, runDurableObjectAlarm } from "cloudflare:test";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/config";
import worker from "../../src/index";
import { freshAddress, TOKEN } from "./helpers";

const ORIGIN = "https://engine.test";
const AUD = "aud-runtime-test";
const TEAM = env.ACCESS_TEST_TEAM_DOMAIN;
const accessEnv = {
  ...env,
  ACCESS_TEAM_DOMAIN: TEAM,
  ACCESS_AUD: AUD,
  ACCESS_ROLES: JSON.stringify({
    "ada@example.com": ["approver"],
    "*@example.com": ["viewer"],
    "access-service:ci.access": ["requester"],
  }),
} as never;

let signingKey: CryptoKey;
let strayKey: CryptoKey;
let goodJwk: Record<string, unknown>;

/** What the team domain's JWKS serves from now on. */
async function serveKeys(keys: unknown[]): Promise<void> {
  const res = await fetch(`${TEAM}/_control/keys`, { method: "POST", body: JSON.stringify({ keys }) });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  const pair = await generateKeyPair("RS256", { extractable: true });
  const stray = await generateKeyPair("RS256", { extractable: true });
  signingKey = pair.privateKey;
  strayKey = stray.privateKey;
  goodJwk = { ...(await exportJWK(pair.publicKey)), kid: "k-good", alg: "RS256", use: "sig" };
  await serveKeys([goodJwk]);
});

interface AssertionOptions {
  payload?: JWTPayload;
  aud?: string;
  iss?: string;
  exp?: number;
  nbf?: number;
  kid?: string;
  key?: CryptoKey;
}

async function assertion(o: AssertionOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1_000);
  const jwt = new SignJWT(o.payload ?? { email: "Ada@Example.com" })
    .setProtectedHeader({ alg: "RS256", kid: o.kid ?? "k-good" })
    .setIssuer(o.iss ?? TEAM)
    .setAudience([o.aud ?? AUD])
    .setIssuedAt(now - 5)
    .setExpirationTime(o.exp ?? now + 300);
  if (o.nbf !== undefined) jwt.setNotBefore(o.nbf);
  return jwt.sign(o.key ?? signingKey);
}

function call(path: string, jwt: string, init: { method?: string; origin?: string; body?: string } = {}): Promise<Response> {
  const headers = new Headers({ "cf-access-jwt-assertion": jwt, "cf-connecting-ip": freshAddress() });
  if (init.origin !== undefined) headers.set("origin", init.origin);
  if (init.body !== undefined) headers.set("content-type", "application/json");
  return worker.fetch(
    new Request(`${ORIGIN}${path}`, { method: init.method ?? "GET", headers, body: init.body }),
    accessEnv,
    createExecutionContext(),
  );
}

async function fetches(): Promise<number> {
  return (await (await fetch(`${TEAM}/_control/fetches`)).json<{ fetches: number }>()).fetches;
}

describe("Access assertions", () => {
  it("a good assertion is access:<email> (lower-cased) with the union of its ACCESS_ROLES", async () => {
    const jwt = await assertion();
    expect((await call("/api/runs", jwt)).status).toBe(200);
    // approver from its email, viewer from *@example.com: it may decide, not trigger.
    const trigger = await call("/api/trigger", jwt, { method: "POST", origin: ORIGIN, body: '{"message":"x"}' });
    expect(await trigger.json()).toEqual({ error: "forbidden", message: "access:ada@example.com lacks the requester role" });
    const cancel = await call("/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel", jwt, { method: "POST", origin: ORIGIN });
    expect(cancel.status).toBe(404);
  });

  for (const [what, options] of [
    ["a wrong aud", { aud: "someone-else" }],
    ["a wrong iss", { iss: "https://evil.cloudflareaccess.com" }],
    ["an expired one (past the 60 s leeway)", { exp: Math.floor(Date.now() / 1_000) - 120 }],
    ["one not valid yet (past the leeway)", { nbf: Math.floor(Date.now() / 1_000) + 120 }],
    ["one signed by an unknown key", { kid: "k-unknown", key: undefined as unknown as CryptoKey }],
    ["one with a known kid but another key's signature", { key: undefined as unknown as CryptoKey }],
  ] as [string, AssertionOptions][]) {
    it(`${what} is 401`, async () => {
      const opts = { ...options, ...(options.key === undefined && "key" in options ? { key: strayKey } : {}) };
      const res = await call("/api/runs", await assertion(opts));
      expect(res.status).toBe(401);
      expect((await res.json<any>()).error).toBe("unauthorized");
    });
  }

  it("exp within the 60 s leeway still passes", async () => {
    expect((await call("/api/runs", await assertion({ exp: Math.floor(Date.now() / 1_000) - 30 }))).status).toBe(200);
  });

  it("garbage is 401, never a 500", async () => {
    for (const jwt of ["x", "a.b.c", "eyJ.eyJ.x", ""]) expect((await call("/api/runs", jwt)).status, jwt).toBe(401);
  });

  it("a verified user with no role gets 403 on everything", async () => {
    const res = await call("/api/runs", await assertion({ payload: { email: "mallory@other.test" } }));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: "forbidden", message: "access:mallory@other.test lacks the viewer role" });
  });

  it("its 403 on /api/health (served ahead of the router's guard) is audited like any other", async () => {
    const who = "access:nobody-health@other.test";
    const res = await call("/api/health", await assertion({ payload: { email: "nobody-health@other.test" } }));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: "forbidden", message: `${who} lacks the viewer role` });
    // The queue's alarm writes to D1: fired here, unless it has already fired by itself (then polled for).
    await runDurableObjectAlarm(env.AUDIT_QUEUE.get(env.AUDIT_QUEUE.idFromName(who)));
    const refusals = async () => {
      const listed = await worker.fetch(
        new Request(`${ORIGIN}/api/audit?action=access.refused&principal=${encodeURIComponent(who)}`, {
          headers: { authorization: `Bearer ${TOKEN}`, "cf-connecting-ip": freshAddress() },
        }),
        accessEnv,
        createExecutionContext(),
      );
      return (await listed.json<any>()).entries;
    };
    await expect
      .poll(refusals, { timeout: 5_000, interval: 25 })
      .toEqual([expect.objectContaining({ target: "GET /api/health", result: "refused", count: 1, details: { error: "forbidden" } })]);
  });

  it('"*" in ACCESS_ROLES matches Access users only, never a service token', async () => {
    const starEnv = { ...(accessEnv as object), ACCESS_ROLES: JSON.stringify({ "*": ["viewer", "requester"] }) } as never;
    const as = async (jwt: string) =>
      worker.fetch(
        new Request(`${ORIGIN}/api/runs`, { headers: { "cf-access-jwt-assertion": jwt, "cf-connecting-ip": freshAddress() } }),
        starEnv,
        createExecutionContext(),
      );
    expect((await as(await assertion({ payload: { email: "someone@elsewhere.io" } }))).status).toBe(200);
    // A service token no entry names holds no role: 403 on everything.
    const service = await as(await assertion({ payload: { common_name: "other.access" } }));
    expect(service.status).toBe(403);
    expect((await service.json<any>()).error).toBe("forbidden");
  });

  it("a service token is access-service:<common_name>; the Origin rule is for users' browser-sent assertions", async () => {
    const service = await assertion({ payload: { common_name: "ci.access" } });
    const res = await call("/api/trigger", service, { method: "POST", body: '{"message":"from ci"}' });
    expect(res.status).toBe(202);
    const { run_id } = await res.json<any>();
    const summary = await (await call(`/api/runs/${run_id}`, service)).json<any>();
    expect(summary).toMatchObject({ requested_by: "access-service:ci.access", user_id: "access-service:ci.access" });

    const user = await assertion();
    for (const origin of [undefined, "https://evil.test"]) {
      const refused = await call(`/api/runs/${run_id}/cancel`, user, { method: "POST", ...(origin ? { origin } : {}) });
      expect(refused.status).toBe(403);
      expect((await refused.json<any>()).error).toBe("forbidden_origin");
    }
  });

  it("Authorization decides when both come: a wrong bearer token is not rescued by a good assertion", async () => {
    const headers = new Headers({
      authorization: "Bearer wrong",
      "cf-access-jwt-assertion": await assertion(),
      "cf-connecting-ip": freshAddress(),
    });
    const res = await worker.fetch(new Request(`${ORIGIN}/api/runs`, { headers }), accessEnv, createExecutionContext());
    expect(res.status).toBe(401);
    headers.set("authorization", `Bearer ${TOKEN}`);
    expect((await worker.fetch(new Request(`${ORIGIN}/api/runs`, { headers }), accessEnv, createExecutionContext())).status).toBe(200);
  });

  it("the console works behind Access with no sign-in of its own", async () => {
    const jwt = await assertion();
    const page = await call("/console", jwt);
    expect(await page.text()).toContain('src="/console/assets/console.js"');
    expect(await (await call("/console/session", jwt)).json()).toMatchObject({
      principal: "access:ada@example.com",
      roles: ["approver", "viewer"],
      credential: "access",
    });
  });

  it("keeps the JWKS cached; an unknown kid fetches again at most once per 30 s", async () => {
    await call("/api/runs", await assertion()); // warm
    const before = await fetches();
    for (let i = 0; i < 3; i++) expect((await call("/api/runs", await assertion())).status).toBe(200);
    expect(await fetches()).toBe(before);
    expect((await call("/api/runs", await assertion({ kid: "k-new-1", key: strayKey }))).status).toBe(401);
    expect((await call("/api/runs", await assertion({ kid: "k-new-2", key: strayKey }))).status).toBe(401);
    expect(await fetches()).toBeLessThanOrEqual(before + 1);
  });

  it("after Cloudflare rotates its keys, an unknown kid fetches the JWKS again (past the 30 s) and the new key is accepted", async () => {
    const rotated = await generateKeyPair("RS256", { extractable: true });
    const rotatedJwk = { ...(await exportJWK(rotated.publicKey)), kid: "k-rotated", alg: "RS256", use: "sig" };
    expect((await call("/api/runs", await assertion())).status).toBe(200); // the key set holds k-good
    // Only the clock is moved (jose reads Date.now() in this isolate); the stand-in is real loopback HTTP.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 30_001); // contract section 18: at most once per 30 s
      await serveKeys([goodJwk, rotatedJwk]);
      const before = await fetches();
      expect((await call("/api/runs", await assertion({ kid: "k-rotated", key: rotated.privateKey }))).status).toBe(200);
      expect(await fetches()).toBe(before + 1);
      // Within 30 s of that fetch another unknown kid is 401 and fetches nothing.
      vi.setSystemTime(Date.now() + 29_000);
      expect((await call("/api/runs", await assertion({ kid: "k-other", key: strayKey }))).status).toBe(401);
      expect(await fetches()).toBe(before + 1);
      // Cached at most 10 minutes: past that, even a known kid reads the keys again.
      vi.setSystemTime(Date.now() + 600_001);
      expect((await call("/api/runs", await assertion())).status).toBe(200);
      expect(await fetches()).toBe(before + 2);
    } finally {
      vi.useRealTimers();
      await serveKeys([goodJwk]);
    }
  });
});

/** The request as a browser behind Access sends it: the assertion in Access's CF_Authorization cookie, no header. */
function callWithCookie(
  path: string,
  cookie: string,
  init: { method?: string; origin?: string; body?: string; extra?: Record<string, string> } = {},
) {
  const headers = new Headers({ cookie, "cf-connecting-ip": freshAddress(), ...init.extra });
  if (init.origin !== undefined) headers.set("origin", init.origin);
  if (init.body !== undefined) headers.set("content-type", "application/json");
  return worker.fetch(
    new Request(`${ORIGIN}${path}`, { method: init.method ?? "GET", headers, body: init.body }),
    accessEnv,
    createExecutionContext(),
  );
}

describe("Access's CF_Authorization cookie", () => {
  it("is the assertion when no header comes, verified the same: access:<email> with its roles", async () => {
    const cookie = `theme=dark; CF_Authorization=${await assertion()}; other=1`;
    const runs = await callWithCookie("/api/runs", cookie);
    expect(runs.status).toBe(200);
    const trigger = await callWithCookie("/api/trigger", cookie, { method: "POST", origin: ORIGIN, body: '{"message":"x"}' });
    expect(await trigger.json()).toEqual({ error: "forbidden", message: "access:ada@example.com lacks the requester role" });
  });

  for (const [what, options] of [
    ["a wrong aud", { aud: "someone-else" }],
    ["a wrong iss", { iss: "https://evil.cloudflareaccess.com" }],
    ["an expired one", { exp: Math.floor(Date.now() / 1_000) - 120 }],
    ["one signed by a foreign key under the known kid", { foreign: true }],
    ["one signed by an unknown key", { kid: "k-cookie-unknown", foreign: true }],
  ] as [string, AssertionOptions & { foreign?: true }][]) {
    it(`${what} is 401 on the API and no console`, async () => {
      const { foreign, ...rest } = options;
      const cookie = `CF_Authorization=${await assertion({ ...rest, ...(foreign ? { key: strayKey } : {}) })}`;
      const res = await callWithCookie("/api/runs", cookie);
      expect(res.status).toBe(401);
      expect((await res.json<any>()).error).toBe("unauthorized");
      expect(await (await callWithCookie("/console", cookie)).text()).toContain('src="/console/assets/sign-in.js"');
      expect((await callWithCookie("/console/session", cookie)).status).toBe(401);
      expect((await callWithCookie("/console/assets/console.js", cookie)).status).toBe(401);
    });
  }

  it("the console works behind Access on the cookie alone", async () => {
    const cookie = `CF_Authorization=${await assertion()}`;
    expect(await (await callWithCookie("/console", cookie)).text()).toContain('src="/console/assets/console.js"');
    expect((await callWithCookie("/console/assets/console.js", cookie)).status).toBe(200);
    expect(await (await callWithCookie("/console/session", cookie)).json()).toMatchObject({ principal: "access:ada@example.com" });
  });

  it("is sent by the browser by itself: a state change on it needs the request's own Origin, a service token's too", async () => {
    const service = await assertion({ payload: { common_name: "ci.access" } });
    const started = await call("/api/trigger", service, { method: "POST", body: '{"message":"from ci"}' });
    const { run_id } = await started.json<any>();
    for (const jwt of [await assertion(), service]) {
      for (const origin of [undefined, "https://evil.test"]) {
        const refused = await callWithCookie(`/api/runs/${run_id}/cancel`, `CF_Authorization=${jwt}`, {
          method: "POST",
          ...(origin ? { origin } : {}),
        });
        expect(refused.status).toBe(403);
        expect((await refused.json<any>()).error).toBe("forbidden_origin");
      }
    }
    const cancelled = await callWithCookie(`/api/runs/${run_id}/cancel`, `CF_Authorization=${await assertion()}`, {
      method: "POST",
      origin: ORIGIN,
    });
    // 202 while the run is live, 200 once it has ended: either way past the Origin rule and the role.
    expect([200, 202]).toContain(cancelled.status);
  });

  it("the header decides when both come, and the console cookie before either", async () => {
    const good = `CF_Authorization=${await assertion()}`;
    const badHeader = await callWithCookie("/api/runs", good, { extra: { "cf-access-jwt-assertion": "x.y.z" } });
    expect(badHeader.status).toBe(401);
    const forged = await callWithCookie("/api/runs", `console_session=${"0".repeat(32)}.${"A".repeat(43)}; ${good}`);
    expect(forged.status).toBe(401);
  });
});

describe("Access settings", () => {
  const base = { API_TOKEN: "t".repeat(32), ACCESS_AUD: AUD };
  it("takes https, or plain http on loopback with a port; anything else is bad_config", () => {
    expect(parseConfig({ ...base, ACCESS_TEAM_DOMAIN: "https://team.cloudflareaccess.com" }).state).toBe("ready");
    expect(parseConfig({ ...base, ACCESS_TEAM_DOMAIN: "http://127.0.0.1:9999" }).state).toBe("ready");
    for (const domain of ["http://team.cloudflareaccess.com", "http://127.0.0.1", "https://team.cloudflareaccess.com/path", "team"]) {
      expect(parseConfig({ ...base, ACCESS_TEAM_DOMAIN: domain }).state, domain).toBe("bad_config");
    }
    expect(parseConfig({ API_TOKEN: "t".repeat(32), ACCESS_TEAM_DOMAIN: "https://team.cloudflareaccess.com" }).state).toBe("bad_config");
  });

  it('"*" may grant only viewer and requester', () => {
    const domain = { ...base, ACCESS_TEAM_DOMAIN: "https://team.cloudflareaccess.com" };
    expect(parseConfig({ ...domain, ACCESS_ROLES: '{"*":["viewer","requester"]}' }).state).toBe("ready");
    const wide = parseConfig({ ...domain, ACCESS_ROLES: '{"*":["approver"]}' });
    expect(wide).toMatchObject({ state: "bad_config", details: [expect.objectContaining({ path: "ACCESS_ROLES.*" })] });
  });

  it("with Access and no API_TOKEN the API is configured (not_configured only when neither is set)", () => {
    expect(parseConfig({ ACCESS_AUD: AUD, ACCESS_TEAM_DOMAIN: "https://team.cloudflareaccess.com" }).state).toBe("ready");
    expect(parseConfig({}).state).toBe("not_configured");
  });
});
