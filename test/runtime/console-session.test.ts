// The console's session and its cookie on /api/* (contract section 16), in
// workerd against real D1: sign-in, the cookie's attributes, sign-out, the
// Origin rule for state-changing requests, the session's principal as the
// actor (contract section 18), the session's binding to API_TOKEN, the gate on
// every console asset, the security headers, and 503 when unconfigured.
import { createExecutionContext, env, runDurableObjectAlarm, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { api, freshAddress, sleep, TOKEN, trigger } from "./helpers";

const ORIGIN = "https://engine.test";
const CREATE = "mcp__demo__create_dashboard";

async function signIn(token = TOKEN, extra: Record<string, unknown> = {}): Promise<Response> {
  return SELF.fetch(`${ORIGIN}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": freshAddress() },
    body: JSON.stringify({ token, ...extra }),
  });
}

/** Signs in and returns the `console_session=...` pair to send as Cookie. */
async function cookieFor(): Promise<string> {
  const res = await signIn();
  expect(res.status).toBe(204);
  const setCookie = res.headers.get("set-cookie") ?? "";
  return setCookie.split(";")[0]!;
}

function withCookie(cookie: string, path: string, init: RequestInit & { origin?: string | null } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("cookie", cookie);
  if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", freshAddress());
  if (init.origin !== null) headers.set("origin", init.origin ?? ORIGIN);
  if (init.body !== undefined) headers.set("content-type", "application/json");
  return SELF.fetch(`${ORIGIN}${path}`, { ...init, headers });
}

async function waitFor<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 5_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

async function pendingApproval(runId: string) {
  return waitFor(async () => (await (await api(`/api/runs/${runId}`)).json<any>()).pending_approvals[0], "the approval");
}

async function eventsOf(runId: string): Promise<any[]> {
  const text = await (await api(`/api/runs/${runId}/events`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)));
}

describe("sign-in", () => {
  it("answers 204 with an HttpOnly, Secure, SameSite=Strict cookie that is not the token", async () => {
    const res = await signIn();
    expect(res.status).toBe(204);
    const setCookie = res.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^console_session=[0-9a-f]{32}\.[A-Za-z0-9_-]+; HttpOnly; Secure; SameSite=Strict; Path=\/; Max-Age=43200$/);
    expect(setCookie).not.toContain(TOKEN);
    const row = await env.DB.prepare("SELECT principal, token_name, revoked FROM console_sessions WHERE id = ?1")
      .bind(setCookie.slice("console_session=".length, setCookie.indexOf(".")))
      .first();
    expect(row).toEqual({ principal: "token:root", token_name: null, revoked: 0 });
  });

  it("takes {token} only: a name is ignored, the session's principal is the token's", async () => {
    const res = await signIn(TOKEN, { name: "automatic" });
    expect(res.status).toBe(204);
    const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
    const who = await withCookie(cookie, "/console/session", { method: "GET" });
    expect(await who.json<any>()).toMatchObject({
      principal: "token:root",
      roles: ["viewer", "requester", "approver", "reconciler", "admin"],
      credential: "console_session",
    });
  });

  it("a wrong token is 401 and sets nothing", async () => {
    const res = await signIn("not-the-token");
    expect(res.status).toBe(401);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect((await res.json<any>()).error).toBe("unauthorized");
  });

  it("bad input is 400, never a session", async () => {
    const res = await SELF.fetch(`${ORIGIN}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: "" }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("set-cookie")).toBeNull();
  });

  it("a cookie whose MAC was altered, or signed with another secret, is refused", async () => {
    const cookie = await cookieFor();
    const [id, mac] = cookie.slice("console_session=".length).split(".");
    const flipped = `console_session=${id}.${mac!.startsWith("A") ? "B" : "A"}${mac!.slice(1)}`;
    expect((await withCookie(flipped, "/api/storage-pool")).status).toBe(401);
    expect((await withCookie(cookie, "/api/storage-pool")).status).toBe(200);
  });

  it("a malformed or forged cookie is 401, never a 500", async () => {
    for (const value of ["garbage", "abc.A", `${"0".repeat(32)}.A`, `${"0".repeat(32)}.%%%`, ".", "a.b.c", ""]) {
      const res = await withCookie(`console_session=${value}`, "/api/storage-pool");
      expect(res.status, value).toBe(401);
      expect((await res.json<any>()).error).toBe("unauthorized");
    }
  });

  it("a session made before principals (no principal on its row) is refused", async () => {
    const cookie = await cookieFor();
    await env.DB.prepare("UPDATE console_sessions SET principal = NULL WHERE id = ?1")
      .bind(cookie.slice("console_session=".length).split(".")[0])
      .run();
    expect((await withCookie(cookie, "/api/storage-pool")).status).toBe(401);
  });

  it("a root session ends when API_TOKEN is rotated", async () => {
    const cookie = await cookieFor();
    const rotated = { ...env, API_TOKEN: "rotated-runtime-token-0123456789abcdefghij" } as never;
    const call = (e: never) =>
      worker.fetch(
        new Request(`${ORIGIN}/api/storage-pool`, { headers: { cookie, "cf-connecting-ip": freshAddress() } }),
        e,
        createExecutionContext(),
      );
    expect((await call(env as never)).status).toBe(200);
    expect((await call(rotated)).status).toBe(401);
    const page = await worker.fetch(new Request(`${ORIGIN}/console`, { headers: { cookie } }), rotated, createExecutionContext());
    expect(await page.text()).toContain('id="sign-in"');
  });
});

describe("the cookie on /api/*", () => {
  it("reads with the cookie alone; a wrong bearer token is not rescued by the cookie", async () => {
    const cookie = await cookieFor();
    expect((await withCookie(cookie, "/api/storage-pool", { origin: null })).status).toBe(200);
    const both = await withCookie(cookie, "/api/storage-pool", { headers: { authorization: "Bearer wrong" } });
    expect(both.status).toBe(401);
  });

  it("a state-changing request needs Origin equal to the request's origin: 403 forbidden_origin otherwise, also without Origin", async () => {
    const cookie = await cookieFor();
    const { json } = await trigger({ message: "x", script: [{ text: "hello" }] });
    for (const origin of ["https://evil.test", null, "null"]) {
      const res = await withCookie(cookie, `/api/runs/${json.run_id}/cancel`, { method: "POST", origin });
      expect(res.status).toBe(403);
      expect(await res.json<any>()).toMatchObject({ error: "forbidden_origin" });
    }
    const sameOrigin = await withCookie(cookie, `/api/runs/${json.run_id}/cancel`, { method: "POST" });
    expect([200, 202]).toContain(sameOrigin.status);
  });

  it("records decisions as the session's principal; a body naming someone else is 403 actor_mismatch", async () => {
    const cookie = await cookieFor();
    const { json } = await trigger({
      message: "x",
      script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "c1", arguments: { title: "console" } }] }, { text: "done" }],
    });
    const approval = await pendingApproval(json.run_id);
    const res = await withCookie(cookie, `/api/runs/${json.run_id}/approvals/${approval.approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny", decided_by: "mallory" }),
    });
    expect(res.status).toBe(403);
    expect(await res.json<any>()).toMatchObject({ error: "actor_mismatch" });
    expect(await pendingApproval(json.run_id)).toMatchObject({ approval_id: approval.approval_id });
    const named = await withCookie(cookie, `/api/runs/${json.run_id}/approvals/${approval.approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny", decided_by: "token:root" }),
    });
    expect(named.status).toBe(200);
    const resolved = await waitFor(
      async () => (await eventsOf(json.run_id)).find((e) => e.type === "approval_resolved"),
      "approval_resolved",
    );
    expect(resolved).toMatchObject({ decision: "denied", decided_by: "token:root" });
  });

  it("records answers as the session's principal when the body names nobody", async () => {
    const cookie = await cookieFor();
    const { json } = await trigger({
      message: "x",
      script: [
        { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which team?" } }] },
        { text: "ok" },
      ],
    });
    await waitFor(async () => (await (await api(`/api/runs/${json.run_id}`)).json<any>()).pending_inputs[0], "the question");
    const res = await withCookie(cookie, `/api/runs/${json.run_id}/inputs/ask-1`, {
      method: "POST",
      body: JSON.stringify({ answer: "core" }),
    });
    expect(res.status).toBe(200);
    const received = await waitFor(async () => (await eventsOf(json.run_id)).find((e) => e.type === "human_input_received"), "the answer");
    expect(received.answered_by).toBe("token:root");
  });

  it("a malformed body with the cookie is the route's usual 400, not a 500", async () => {
    const cookie = await cookieFor();
    const res = await withCookie(cookie, "/api/mutations/mut_x/reconcile", { method: "POST", body: "{not json" });
    expect(res.status).toBe(400);
    expect((await res.json<any>()).error).toBe("invalid_json");
  });
});

describe("sign-out", () => {
  it("DELETE /console/session ends the session: the same cookie is 401 from then on", async () => {
    const cookie = await cookieFor();
    expect((await withCookie(cookie, "/console/session", { method: "GET" })).status).toBe(200);
    const out = await withCookie(cookie, "/console/session", { method: "DELETE" });
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(/^console_session=; .*Max-Age=0$/);
    expect((await withCookie(cookie, "/api/storage-pool")).status).toBe(401);
    expect((await withCookie(cookie, "/console/session", { method: "GET" })).status).toBe(401);
    expect((await withCookie(cookie, "/console/assets/console.js", { method: "GET" })).status).toBe(401);
  });

  it("a cross-origin DELETE cannot sign a person out, and the refusal is audited as the session's principal", async () => {
    const cookie = await cookieFor();
    expect((await withCookie(cookie, "/console/session", { method: "DELETE", origin: "https://evil.test" })).status).toBe(403);
    expect((await withCookie(cookie, "/api/storage-pool")).status).toBe(200);
    await runDurableObjectAlarm(env.AUDIT_QUEUE.get(env.AUDIT_QUEUE.idFromName("token:root")));
    await expect
      .poll(
        async () =>
          (await (await api("/api/audit?action=access.refused&principal=token%3Aroot")).json<any>()).entries.find(
            (e: any) => e.target === "DELETE /console/session",
          ),
        { timeout: 5_000, interval: 25 },
      )
      .toMatchObject({ result: "refused", details: { error: "forbidden_origin" } });
  });

  it("an expired session is refused", async () => {
    const cookie = await cookieFor();
    await env.DB.prepare("UPDATE console_sessions SET expires_at = '2000-01-01T00:00:00.000Z' WHERE id = ?1")
      .bind(cookie.slice("console_session=".length).split(".")[0])
      .run();
    expect((await withCookie(cookie, "/api/storage-pool")).status).toBe(401);
  });
});

describe("the pages and their gate", () => {
  it("every console answer carries the CSP (scripts from 'self' only) and X-Frame-Options: DENY", async () => {
    for (const path of ["/console", "/console/assets/sign-in.js", "/console/assets/console.js", "/console/nothing"]) {
      const res = await SELF.fetch(`${ORIGIN}${path}`);
      const csp = res.headers.get("content-security-policy")!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
    }
  });

  it("without a session: the sign-in page and its script are public; the application script and unknown paths are 401", async () => {
    const page = await SELF.fetch(`${ORIGIN}/console`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('id="sign-in"');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect((await SELF.fetch(`${ORIGIN}/console/assets/sign-in.js`)).status).toBe(200);
    expect((await SELF.fetch(`${ORIGIN}/console/assets/console.js`)).status).toBe(401);
    expect((await SELF.fetch(`${ORIGIN}/console/anything`)).status).toBe(401);
  });

  it("with a session: /console is the application and its script is served", async () => {
    const cookie = await cookieFor();
    const page = await withCookie(cookie, "/console", { method: "GET" });
    expect(await page.text()).toContain('src="/console/assets/console.js"');
    const script = await withCookie(cookie, "/console/assets/console.js", { method: "GET" });
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
  });

  it("answers 503 not_configured when CONSOLE_SESSION_SECRET is unset, and the cookie then opens nothing", async () => {
    const cookie = await cookieFor();
    const unset = { ...env, CONSOLE_SESSION_SECRET: undefined } as never;
    const page = await worker.fetch(new Request(`${ORIGIN}/console`), unset, createExecutionContext());
    expect(page.status).toBe(503);
    expect((await page.json<any>()).error).toBe("not_configured");
    const read = await worker.fetch(
      new Request(`${ORIGIN}/api/storage-pool`, { headers: { cookie, "cf-connecting-ip": freshAddress() } }),
      unset,
      createExecutionContext(),
    );
    expect(read.status).toBe(401);
  });
});
