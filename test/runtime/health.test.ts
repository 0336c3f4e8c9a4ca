// GET /api/health (contract section 22) over SELF.fetch and, for other host
// configurations, the route's handler with a changed env (the same real D1,
// pool and demo MCP server processes): every component ok, the credential
// required, an unreachable MCP server and one that wants authorization
// (the demo's /mcp-protected), and a bad configuration answered (503,
// config "bad") instead of refused.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { McpProbeCache } from "../../src/operate/health";
import { handleHealth } from "../../src/operate/health-route";
import { handleConsoleRequest } from "../../src/console/console-routes";
import { api, freshAddress, namedToken, TOKEN } from "./helpers";

const request = (token = TOKEN) => new Request("https://engine.test/api/health", { headers: { authorization: `Bearer ${token}` } });
/** The health route's waitUntil (last_used_at writes of named tokens): awaited nowhere, like the Worker's. */
const ctx = { waitUntil: (_p: Promise<unknown>) => undefined };
const protectedUrl = () => env.DEMO_MCP_URL.replace(/\/mcp$/, "/mcp-protected");

async function healthWith(vars: Record<string, unknown>): Promise<{ status: number; body: any }> {
  // A fresh env object is a fresh configuration (loadConfig caches per object), and a fresh cache probes afresh.
  const res = await handleHealth(request(), { ...env, ...vars } as typeof env, ctx, new McpProbeCache());
  return { status: res.status, body: await res.json() };
}

describe("GET /api/health", () => {
  it("answers 200 with every dependency's state", async () => {
    const res = await api("/api/health");
    expect(res.status).toBe(200);
    // The runtime tests sign audit checkpoints (AUDIT_SIGNING_KEY in vitest.config.ts): audit is ok, not unsigned.
    expect(await res.json()).toEqual({
      status: "ok",
      d1: "ok",
      storage_pool: "ok",
      config: "ok",
      slack: "off",
      audit: "ok",
      webhooks: "off",
      mcp: { demo: "ok" },
      halts_active: 0,
      // Contract section 24: the active policy version (0: the settings) and whether it still validates.
      policy: { version: 0, hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), state: "ok" },
    });
  });

  it("counts the active halts in halts_active, which only informs (contract sections 22 and 23)", async () => {
    const engaged = await api("/api/halts", {
      method: "POST",
      body: JSON.stringify({ scope: "tool:mcp__demo__create_dashboard", reason: "health test" }),
    });
    expect(engaged.status, await engaged.clone().text()).toBe(201);
    const { halt_id } = (await engaged.json()) as { halt_id: string };
    const res = await api("/api/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", halts_active: 1 });
    expect((await api(`/api/halts/${halt_id}`, { method: "DELETE" })).status).toBe(200);
    expect(await (await api("/api/health")).json()).toMatchObject({ halts_active: 0 });
  });

  it("needs a credential", async () => {
    const res = await api("/api/health", { headers: { authorization: "Bearer not-the-token" } });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "unauthorized" });
  });

  it("is 503 degraded with an unreachable MCP server, naming it", async () => {
    const { status, body } = await healthWith({
      MCP_SERVERS: JSON.stringify({ demo: { url: env.DEMO_MCP_URL }, gone: { url: "http://127.0.0.1:9/mcp" } }),
      MCP_CONNECT_TIMEOUT_MS: "1000",
    });
    expect(status).toBe(503);
    expect(body).toMatchObject({ status: "degraded", d1: "ok", config: "ok", mcp: { demo: "ok", gone: "unreachable" } });
  });

  it("says authorization_required for a server that refuses without its credential, ok with it", async () => {
    const refused = await healthWith({ MCP_SERVERS: JSON.stringify({ locked: { url: protectedUrl() } }) });
    expect(refused.status).toBe(503);
    expect(refused.body.mcp).toEqual({ locked: "authorization_required" });
    const admitted = await healthWith({
      MCP_SERVERS: JSON.stringify({ locked: { url: protectedUrl(), headers: { authorization: "Bearer demo-mcp-token" } } }),
    });
    expect(admitted.status).toBe(200);
    expect(admitted.body.mcp).toEqual({ locked: "ok" });
  });

  it("answers with a bad configuration (exempt from bad_config): 503, config bad, D1 still probed", async () => {
    const { status, body } = await healthWith({ MAX_TOOL_CALLS: "not-a-number" });
    expect(status).toBe(503);
    expect(body).toMatchObject({ status: "degraded", config: "bad", d1: "ok", mcp: {} });
    // Other routes refuse with bad_config on the same configuration: health is the exception.
    const wrongToken = await handleHealth(request("wrong"), { ...env, MAX_TOOL_CALLS: "x" } as typeof env, ctx, new McpProbeCache()).catch(
      (err: { status?: number }) => err,
    );
    expect((wrongToken as { status?: number }).status).toBe(401);
  });

  it("with a bad configuration, a valid named viewer token gets the answer, not 401 then 429 (issue 29)", async () => {
    const viewer = await namedToken(["viewer"]);
    const bad = { ...env, MAX_TOOL_CALLS: "not-a-number" } as typeof env;
    const address = freshAddress();
    const asViewer = () =>
      new Request("https://engine.test/api/health", { headers: { authorization: `Bearer ${viewer.token}`, "cf-connecting-ip": address } });
    for (let i = 0; i < 12; i++) {
      const res = await handleHealth(asViewer(), bad, ctx, new McpProbeCache());
      expect(res.status, `request ${i + 1}`).toBe(503);
      expect(await res.json()).toMatchObject({ status: "degraded", config: "bad" });
    }
  });

  it("with a bad configuration, GET /console names the bad settings only to a valid credential (issue 29)", async () => {
    const bad = { ...env, MAX_TOOL_CALLS: "not-a-number" } as typeof env;
    const anonymous = await handleConsoleRequest(new Request("https://engine.test/console"), bad);
    expect(anonymous.status).toBe(503);
    const shown = await anonymous.json<Record<string, unknown>>();
    expect(shown.error).toBe("bad_config");
    expect(shown).not.toHaveProperty("details");
    expect(JSON.stringify(shown)).not.toContain("MAX_TOOL_CALLS");
    const trusted = await handleConsoleRequest(
      new Request("https://engine.test/console", { headers: { authorization: `Bearer ${TOKEN}` } }),
      bad,
    );
    expect(await trusted.json()).toMatchObject({ error: "bad_config", details: [expect.objectContaining({ path: "MAX_TOOL_CALLS" })] });
  });
});
