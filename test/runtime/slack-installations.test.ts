// Slack installations at rest in real D1 (contract section 26; migration 0031,
// src/slack/installation-store.ts): tokens sealed under SLACK_INSTALL_KEY with
// `slack:<installation id>:<bot|refresh>` as additional data (a key list: the
// first seals, all open), the single-use install state (a peek leaves it
// usable, one take wins), a workspace install winning over its organisation's
// org-wide one, an uninstall touching only its own row, and token rotation
// under the 60-second lease: two concurrent refreshes of one installation
// spend its refresh token once (against the Slack stand-in over HTTP).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config";
import { McpProbeCache } from "../../src/operate/health";
import { handleHealth } from "../../src/operate/health-route";
import { TOKEN } from "./helpers";
import { openToken, sealToken } from "../../src/slack/installation-crypto";
import { digestOf, InstallationStore, type NewInstallation } from "../../src/slack/installation-store";
import { refreshDue, refreshInstallation, usableInstallation } from "../../src/slack/installation-tokens";
import {
  authorizeUrl,
  codeChallengeOf,
  eventOrigin,
  installSetCookie,
  interactionOrigin,
  isAllowedInstallation,
} from "../../src/slack/install-flow";

const keyOf = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
const KEY = keyOf();
const uniqueTeam = (prefix = "T") => `${prefix}${crypto.randomUUID().replace(/-/g, "").slice(0, 10).toUpperCase()}`;
const standIn = env.SLACK_STAND_IN_URL;
const settings = { clientId: "123.456", clientSecret: "client-secret", apiBaseUrl: `${standIn}/api/` };

function installation(id: string, extra: Partial<NewInstallation> = {}): NewInstallation {
  return {
    installation_id: id,
    team_id: id,
    is_enterprise_install: false,
    bot_user_id: "UBOT1",
    scopes: ["chat:write"],
    installed_by: "access:admin@example.com",
    authorized_by: `slack:${id}:U1`,
    installed_at: new Date().toISOString(),
    bot_token: `xoxb-${id}`,
    ...extra,
  };
}

describe("the settings (contract section 26)", () => {
  const base = { API_TOKEN: "x".repeat(40), SLACK_SIGNING_SECRET: "s" };
  const install = {
    SLACK_CLIENT_ID: "1.2",
    SLACK_CLIENT_SECRET: "secret",
    SLACK_INSTALL_KEY: KEY,
    SLACK_ALLOWED_TEAMS: '["T0A"]',
    PUBLIC_URL: "https://aee.example",
  };
  const paths = (env: Record<string, unknown>) => {
    const r = parseConfig(env);
    return r.state === "bad_config" ? r.details.map((d) => d.path) : [];
  };

  it("accepts installation mode whole, with the key alone or as a JSON list", () => {
    expect(parseConfig({ ...base, ...install }).state).toBe("ready");
    expect(parseConfig({ ...base, ...install, SLACK_INSTALL_KEY: JSON.stringify([keyOf(), KEY]) }).state).toBe("ready");
  });

  it("names each missing entry of half an installation mode, and each single-workspace entry mixed in", () => {
    expect(paths({ ...base, SLACK_CLIENT_ID: "1.2" })).toEqual(
      expect.arrayContaining(["SLACK_CLIENT_SECRET", "SLACK_INSTALL_KEY", "SLACK_ALLOWED_TEAMS", "PUBLIC_URL"]),
    );
    expect(paths({ ...base, ...install, SLACK_BOT_TOKEN: "xoxb-1" })).toEqual(["SLACK_BOT_TOKEN"]);
    expect(paths({ ...base, ...install, SLACK_TEAM_ID: "T0A" })).toEqual(["SLACK_TEAM_ID"]);
    expect(paths({ ...base, ...install, SLACK_BOT_USER_ID: "U0A" })).toEqual(["SLACK_BOT_USER_ID"]);
    expect(paths({ ...base, ...install, SLACK_APPROVERS: '["U0A"]' })).toEqual(["SLACK_APPROVERS.0"]);
    expect(paths({ ...base, ...install, SLACK_APPROVERS: '["T0A:U0A"]' })).toEqual([]);
    expect(paths({ ...base, ...install, SLACK_INSTALL_KEY: "c2hvcnQ=" })).toEqual(["SLACK_INSTALL_KEY"]);
    expect(paths({ ...base, ...install, SLACK_INSTALL_KEY: JSON.stringify([KEY, "c2hvcnQ="]) })).toEqual(["SLACK_INSTALL_KEY"]);
    expect(paths({ ...base, ...install, SLACK_ALLOWED_TEAMS: '["nope"]' })).toEqual(["SLACK_ALLOWED_TEAMS.0"]);
  });

  it("keeps the single-workspace mode as it was", () => {
    expect(parseConfig({ ...base, SLACK_BOT_TOKEN: "xoxb-1", SLACK_TEAM_ID: "T0A", SLACK_APPROVERS: '["U0A"]' }).state).toBe("ready");
  });
});

describe("the install flow's pure parts", () => {
  it("sends the browser to <SLACK_OAUTH_BASE_URL>oauth/v2/authorize with the scopes, redirect URI, state and PKCE S256", async () => {
    const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    // RFC 7636 appendix B's example.
    expect(await codeChallengeOf(verifier)).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    const url = new URL(
      authorizeUrl({
        oauthBaseUrl: "https://slack.com/",
        clientId: "1.2",
        publicUrl: "https://aee.example",
        state: "st",
        codeChallenge: "ch",
      }),
    );
    expect(url.origin + url.pathname).toBe("https://slack.com/oauth/v2/authorize");
    expect(url.searchParams.get("redirect_uri")).toBe("https://aee.example/slack/oauth_redirect");
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("code_challenge")).toBe("ch");
    expect(url.searchParams.get("state")).toBe("st");
    expect(url.searchParams.get("scope")?.split(",")).toContain("chat:write");
  });

  it("sets the state cookie HttpOnly, Secure, SameSite=Lax, on the redirect's path, for 10 minutes", () => {
    expect(installSetCookie("v")).toBe("slack_install=v; HttpOnly; Secure; SameSite=Lax; Path=/slack/oauth_redirect; Max-Age=600");
  });

  it("allows a workspace by its team or enterprise, an org-wide install only by its enterprise", () => {
    expect(isAllowedInstallation({ team_id: "T1", is_enterprise_install: false }, ["T1"])).toBe(true);
    expect(isAllowedInstallation({ team_id: "T2", is_enterprise_install: false }, ["T1"])).toBe(false);
    expect(isAllowedInstallation({ team_id: "T2", enterprise_id: "E1", is_enterprise_install: false }, ["E1"])).toBe(true);
    expect(isAllowedInstallation({ enterprise_id: "E1", is_enterprise_install: true }, ["T1"])).toBe(false);
    expect(isAllowedInstallation({ enterprise_id: "E1", is_enterprise_install: true }, ["E1"])).toBe(true);
  });

  it("finds an event's installation in authorizations[0] (the enterprise when org-wide), a click's in team / enterprise", () => {
    expect(eventOrigin({ team_id: "T1", authorizations: [{ team_id: "T1", enterprise_id: null, is_enterprise_install: false }] })).toEqual({
      team: "T1",
      enterprise: undefined,
    });
    expect(eventOrigin({ team_id: "T1", authorizations: [{ team_id: null, enterprise_id: "E1", is_enterprise_install: true }] })).toEqual({
      team: undefined,
      enterprise: "E1",
    });
    expect(interactionOrigin({ team: { id: "T2", enterprise_id: "E1" }, enterprise: { id: "E1" }, is_enterprise_install: true })).toEqual({
      team: undefined,
      enterprise: "E1",
    });
    expect(interactionOrigin({ team: { id: "T2" } })).toEqual({ team: "T2", enterprise: undefined });
  });

  it("refreshes 2 hours before expiry, never without one", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(refreshDue(null, now)).toBe(false);
    expect(refreshDue(new Date(now + 2 * 3_600_000 + 1_000).toISOString(), now)).toBe(false);
    expect(refreshDue(new Date(now + 2 * 3_600_000 - 1_000).toISOString(), now)).toBe(true);
  });
});

describe("tokens at rest", () => {
  it("opens only for the same installation and kind, under any key of the list", async () => {
    const other = keyOf();
    const sealed = await sealToken([KEY], "T1", "bot", "xoxb-secret");
    expect(sealed).not.toContain("xoxb");
    expect(await openToken([KEY], "T1", "bot", sealed)).toBe("xoxb-secret");
    expect(await openToken([KEY], "T2", "bot", sealed)).toBeNull();
    expect(await openToken([KEY], "T1", "refresh", sealed)).toBeNull();
    expect(await openToken([other, KEY], "T1", "bot", sealed)).toBe("xoxb-secret");
    expect(await openToken([other], "T1", "bot", sealed)).toBeNull();
  });

  it("stores no plaintext token in any column", async () => {
    const store = new InstallationStore(env.DB, [KEY]);
    const id = uniqueTeam();
    await store.install(installation(id, { refresh_token: "xoxe-1-plain" }), Date.now());
    const row = await env.DB.prepare(`SELECT * FROM slack_installations WHERE installation_id = ?`).bind(id).first();
    expect(JSON.stringify(row)).not.toMatch(/xoxb-|xoxe-/);
    expect((await store.active(id))?.bot_token).toBe(`xoxb-${id}`);
  });
});

describe("the install state", () => {
  it("is peeked without being used, taken once, and dead after 10 minutes", async () => {
    const store = new InstallationStore(env.DB, [KEY]);
    const now = Date.now();
    const digest = await digestOf(crypto.randomUUID());
    await store.putState(digest, "access:a@example.com", "sealed", now);
    expect(await store.peekState(digest, now)).toEqual({ principal: "access:a@example.com", code_verifier: "sealed" });
    expect(await store.peekState(digest, now)).not.toBeNull();
    const takes = await Promise.all([store.takeState(digest, now), store.takeState(digest, now)]);
    expect(takes.filter(Boolean)).toHaveLength(1);
    expect(await store.peekState(digest, now)).toBeNull();
    const late = await digestOf(crypto.randomUUID());
    await store.putState(late, "access:a@example.com", "sealed", now);
    expect(await store.peekState(late, now + 10 * 60_000 + 1)).toBeNull();
    expect(await store.takeState(late, now + 10 * 60_000 + 1)).toBe(false);
  });
});

describe("which installation serves a request", () => {
  it("is the workspace's own install over its organisation's org-wide one; an uninstall touches only its row", async () => {
    const store = new InstallationStore(env.DB, [KEY]);
    const enterprise = uniqueTeam("E");
    const own = uniqueTeam();
    const other = uniqueTeam();
    await store.install(
      installation(enterprise, { team_id: undefined, enterprise_id: enterprise, is_enterprise_install: true, bot_token: "xoxb-org" }),
      Date.now(),
    );
    await store.install(installation(own, { enterprise_id: enterprise }), Date.now());
    expect((await store.forRequest(own, enterprise))?.installation_id).toBe(own);
    expect((await store.forRequest(other, enterprise))?.installation_id).toBe(enterprise);
    expect(await store.forRequest(uniqueTeam(), undefined)).toBeNull();
    expect(await store.uninstall(own, Date.now())).toBe(true);
    expect((await store.forRequest(own, enterprise))?.installation_id).toBe(enterprise);
    expect((await store.get(own))?.status).toBe("uninstalled");
    expect((await store.get(enterprise))?.status).toBe("active");
    const row = await env.DB.prepare(`SELECT bot_token, refresh_token FROM slack_installations WHERE installation_id = ?`)
      .bind(own)
      .first();
    expect(row).toEqual({ bot_token: null, refresh_token: null });
  });
});

describe("token rotation under the lease", () => {
  async function seededInstallation(): Promise<{ store: InstallationStore; id: string; refresh: string }> {
    const store = new InstallationStore(env.DB, [KEY]);
    const id = uniqueTeam();
    const refresh = `xoxe-1-seed-${id}`;
    await fetch(`${standIn}/_control`, { method: "POST", body: JSON.stringify({ seed_refresh: { refresh_token: refresh, team_id: id } }) });
    await store.install(
      installation(id, { refresh_token: refresh, token_expires_at: new Date(Date.now() + 30 * 60_000).toISOString() }),
      Date.now(),
    );
    return { store, id, refresh };
  }
  const attemptsWith = async (refresh: string) =>
    ((await (await fetch(`${standIn}/_refresh_attempts`)).json()) as { refresh_token: string; answered: string }[]).filter(
      (a) => a.refresh_token === refresh,
    );

  it("spends the refresh token once when two refreshes race, and stores the rotated tokens", async () => {
    const { store, id, refresh } = await seededInstallation();
    const results = await Promise.all([refreshInstallation(store, settings, id), refreshInstallation(store, settings, id)]);
    expect(results.sort()).toEqual(["leased_elsewhere", "refreshed"]);
    expect(await attemptsWith(refresh)).toEqual([{ refresh_token: refresh, answered: "ok" }]);
    const served = await store.active(id);
    expect(served?.bot_token).toMatch(/^xoxb-stand-in-/);
    expect(refreshDue(served?.token_expires_at ?? null, Date.now())).toBe(false);
    const lease = await env.DB.prepare(`SELECT refresh_lease_until FROM slack_installations WHERE installation_id = ?`).bind(id).first();
    expect(lease).toEqual({ refresh_lease_until: null });
    // A use after the refresh needs none.
    expect((await usableInstallation(store, settings, id))?.bot_token).toBe(served?.bot_token);
  });

  it("leaves the lease to its holder for 60 seconds, then lets another take it", async () => {
    const { store, id } = await seededInstallation();
    const generation = (await store.refreshTokenOf(id))!.generation;
    const now = Date.now();
    expect(await store.takeRefreshLease(id, generation, now, now + 60_000)).toBe(true);
    expect(await store.takeRefreshLease(id, generation, now + 59_000, now + 119_000)).toBe(false);
    expect(await store.takeRefreshLease(id, generation, now + 60_001, now + 120_001)).toBe(true);
  });

  it("makes an installation refresh_failed when Slack refuses its refresh token, and audits it", async () => {
    const { store, id, refresh } = await seededInstallation();
    // The stand-in honours a refresh token once: spend it elsewhere first.
    await fetch(`${standIn}/api/oauth.v2.access`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refresh, client_id: "1", client_secret: "2" }),
    });
    expect(await refreshInstallation(store, settings, id)).toBe("refresh_failed");
    expect((await store.get(id))?.status).toBe("refresh_failed");
    expect(await store.active(id)).toBeNull();
    const audit = await env.DB.prepare(`SELECT action FROM audit_log WHERE target = ?`).bind(`slack installation ${id}`).all();
    expect(audit.results).toEqual([{ action: "slack.refresh_failed" }]);
  });
});

describe("GET /api/health with installations", () => {
  it("says slack ok, and degraded while an installation is refresh_failed", async () => {
    const vars = {
      SLACK_SIGNING_SECRET: "s",
      SLACK_CLIENT_ID: "1.2",
      SLACK_CLIENT_SECRET: "secret",
      SLACK_INSTALL_KEY: KEY,
      SLACK_ALLOWED_TEAMS: '["T0A"]',
      PUBLIC_URL: "https://aee.example",
    };
    const health = async () => {
      const request = new Request("https://engine.test/api/health", { headers: { authorization: `Bearer ${TOKEN}` } });
      const res = await handleHealth(request, { ...env, ...vars } as typeof env, { waitUntil: () => undefined }, new McpProbeCache());
      return ((await res.json()) as { slack: string }).slack;
    };
    await env.DB.prepare(`UPDATE slack_installations SET status = 'uninstalled' WHERE status = 'refresh_failed'`).run();
    const store = new InstallationStore(env.DB, [KEY]);
    const id = uniqueTeam();
    await store.install(installation(id, { refresh_token: "xoxe-1-h" }), Date.now());
    expect(await health()).toBe("ok");
    expect(await store.markRefreshFailed(id, (await store.refreshTokenOf(id))!.generation, Date.now())).toBe(true);
    expect(await health()).toBe("degraded");
  });
});
