// MCP OAuth at rest in real D1 (contract section 21; src/mcp-oauth/,
// migration 0018): AES-GCM under MCP_TOKEN_KEY with the owner as additional
// data, the connect's state (single-use, 10 minutes, a peek leaves it
// usable), the token row (never a plaintext secret in a column), and which
// tokens count as usable without any network (missing, lapsed, expiring with
// no refresh token), and the refresh serialised across runs by the row's
// lease (migration 0022) with an in-process rotating refresh standing in for
// the authorization server (the e2e suite has the real one over HTTP).
import { OAuthError, OAuthErrorCode } from "@modelcontextprotocol/client";
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type HostConfig, parseConfig } from "../../src/config/config";
import { oauthAuthorization } from "../../src/mcp-oauth/server-access";
import { usableToken } from "../../src/mcp-oauth/usable-token";
import { type GrantContext, OAuthStore, readGrantSummaries } from "../../src/mcp-oauth/oauth-store";
import { isTokenKey, open, seal } from "../../src/mcp-oauth/token-crypto";

const keyOf = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
const KEY = keyOf();
const MINUTE_MS = 60_000;
const uniqueServer = () => `s-${crypto.randomUUID().slice(0, 8)}`;

const GRANT: GrantContext = {
  authorizationServerUrl: "https://as.example",
  metadata: {
    issuer: "https://as.example",
    authorization_endpoint: "https://as.example/authorize",
    token_endpoint: "https://as.example/token",
    response_types_supported: ["code"],
  },
  client: { client_id: "cid", client_secret: "client-secret-value-0123" },
  resource: "https://mcp.example/mcp",
  redirectUri: "https://engine.example/oauth/callback",
};

/** Every text value of every row of `table`, for "no secret in a column" checks. */
async function columnsOf(table: string): Promise<string> {
  const { results } = await env.DB.prepare(`SELECT * FROM ${table}`).all();
  return JSON.stringify(results);
}

describe("token encryption", () => {
  it("opens only with the same key and owner, and a tampered envelope does not open", async () => {
    const sealed = await seal(KEY, "hosted", { access: "tok-123" });
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain("tok-123");
    expect(await open(KEY, "hosted", sealed)).toEqual({ access: "tok-123" });
    expect(await open(KEY, "other", sealed)).toBeNull();
    expect(await open(keyOf(), "hosted", sealed)).toBeNull();
    const [v, iv, data] = sealed.split(".");
    const flipped = `${data!.slice(0, -2)}${data!.endsWith("A") ? "B" : "A"}${data!.slice(-1)}`;
    expect(await open(KEY, "hosted", `${v}.${iv}.${flipped}`)).toBeNull();
    expect(await open(KEY, "hosted", "not-an-envelope")).toBeNull();
    // A fresh IV each time: the same value never seals the same way twice.
    expect(await seal(KEY, "hosted", { access: "tok-123" })).not.toBe(sealed);
  });

  it("takes base64 of exactly 32 bytes as the key", () => {
    expect(isTokenKey(KEY)).toBe(true);
    expect(isTokenKey(btoa("x".repeat(31)))).toBe(false);
    expect(isTokenKey("not base64!")).toBe(false);
  });
});

describe("the connect's state", () => {
  it("is single-use and bound to its principal; a peek leaves it usable; D1 keeps neither the state nor the verifier", async () => {
    const store = new OAuthStore(env.DB, KEY);
    const server = uniqueServer();
    const state = await store.putState({ server, principal: "token:root", codeVerifier: "verifier-secret-0123456789", grant: GRANT });
    expect(state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await store.peekState(state)).toEqual({ server, principal: "token:root" });
    expect(await store.peekState(state)).toEqual({ server, principal: "token:root" });
    const rows = await columnsOf("mcp_oauth_states");
    for (const secret of [state, "verifier-secret-0123456789", "client-secret-value-0123"]) expect(rows).not.toContain(secret);

    expect(await store.takeState(state)).toEqual({
      server,
      principal: "token:root",
      codeVerifier: "verifier-secret-0123456789",
      grant: GRANT,
    });
    expect(await store.takeState(state)).toBeNull();
    expect(await store.peekState(state)).toBeNull();
    expect(await store.takeState("never-made")).toBeNull();
  });

  it("lives 10 minutes", async () => {
    const store = new OAuthStore(env.DB, KEY);
    const t0 = Date.now();
    const state = await store.putState({ server: uniqueServer(), principal: "token:root", codeVerifier: "v", grant: GRANT }, t0);
    expect(await store.peekState(state, t0 + 10 * MINUTE_MS - 1_000)).not.toBeNull();
    expect(await store.peekState(state, t0 + 10 * MINUTE_MS + 1_000)).toBeNull();
    expect(await store.takeState(state, t0 + 10 * MINUTE_MS + 1_000)).toBeNull();
  });

  it("does not open under another key (a rotated MCP_TOKEN_KEY means connecting again)", async () => {
    const state = await new OAuthStore(env.DB, KEY).putState({
      server: uniqueServer(),
      principal: "token:root",
      codeVerifier: "v",
      grant: GRANT,
    });
    expect(await new OAuthStore(env.DB, keyOf()).takeState(state)).toBeNull();
  });
});

describe("the token set", () => {
  it("is kept encrypted per server; the listing's summary has no secret; a lapsed grant is unusable", async () => {
    const store = new OAuthStore(env.DB, KEY);
    const server = uniqueServer();
    const tokens = {
      accessToken: "access-secret-0123456789",
      refreshToken: "refresh-secret-0123456789",
      expiresAtMs: Date.now() + 3_600_000,
      grant: GRANT,
    };
    await store.saveTokens(server, GRANT.metadata.issuer, tokens, "token:root");
    const rows = await columnsOf("mcp_oauth_tokens");
    for (const secret of [tokens.accessToken, tokens.refreshToken, "client-secret-value-0123"]) expect(rows).not.toContain(secret);
    expect(await store.readTokens(server)).toMatchObject({
      issuer: "https://as.example",
      tokens,
      lapsed: false,
      connected_by: "token:root",
    });
    expect((await readGrantSummaries(env.DB)).get(server)).toMatchObject({
      issuer: "https://as.example",
      lapsed: false,
      connected_by: "token:root",
    });
    expect(await usableToken(store, server)).toEqual({ kind: "token", accessToken: tokens.accessToken });

    // A 401 to a token another run has since replaced keeps the grant; a 401 to the stored token lapses it.
    const parsed = parseConfig({ API_TOKEN: "t".repeat(32), MCP_TOKEN_KEY: KEY });
    if (parsed.state !== "ready") throw new Error(parsed.message);
    const authorization = oauthAuthorization(env.DB, parsed.config);
    const settings = { url: "https://mcp.example/mcp", oauth: {} } as HostConfig["MCP_SERVERS"][string];
    await authorization.refused(server, settings, "an-access-token-replaced-since");
    expect(await usableToken(store, server)).toEqual({ kind: "token", accessToken: tokens.accessToken });
    await authorization.refused(server, settings, tokens.accessToken);
    expect(await usableToken(store, server)).toMatchObject({ kind: "authorization_required" });
    expect((await readGrantSummaries(env.DB)).get(server)).toMatchObject({ lapsed: true });
  });

  it("is authorization_required when missing, or expiring within 60 s with no refresh token", async () => {
    const store = new OAuthStore(env.DB, KEY);
    expect(await usableToken(store, uniqueServer())).toMatchObject({
      kind: "authorization_required",
      message: expect.stringContaining("mcp connect"),
    });
    const server = uniqueServer();
    await store.saveTokens(
      server,
      "https://as.example",
      { accessToken: "a", expiresAtMs: Date.now() + 30_000, grant: GRANT },
      "token:root",
    );
    expect(await usableToken(store, server)).toMatchObject({ kind: "authorization_required" });
  });
});

describe("the refresh, one at a time across runs (migration 0022)", () => {
  /** A short lease and poll (production: 10 s, 100 ms); only `quick` below is ever waited out. */
  const TIMING = { leaseMs: 2_000, waitMs: 5_000, pollMs: 20 };
  const expiring = (refreshToken = "rt-0") => ({
    accessToken: "at-0",
    refreshToken,
    expiresAtMs: Date.now() + 30_000,
    grant: GRANT,
  });

  /**
   * An authorization server's refresh in-process: it rotates (each refresh token is taken once, a
   * reused one is refused with invalid_grant, as the SDK reports it), answers after `delayMs`, and
   * counts every refresh request.
   */
  function rotatingRefresh(delayMs: number) {
    const live = new Set(["rt-0"]);
    let issued = 0;
    const requests: string[] = [];
    const refresh = async (_grant: GrantContext, refreshToken: string) => {
      requests.push(refreshToken);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (!live.delete(refreshToken)) throw new OAuthError(OAuthErrorCode.InvalidGrant, "refresh token already used");
      issued += 1;
      const next = issued === 1 ? "rt-1-secret-0123456789" : `rt-${issued}`;
      live.add(next);
      return { access_token: `at-${issued}`, token_type: "Bearer", expires_in: 3600, refresh_token: next };
    };
    return { refresh, requests };
  }

  it("takes the lease with one conditional UPDATE: one winner, none while live or for an old generation, again once it ran out", async () => {
    const store = new OAuthStore(env.DB, KEY);
    const server = uniqueServer();
    await store.saveTokens(server, GRANT.metadata.issuer, expiring(), "token:root");
    const { generation } = (await store.readTokens(server))!;
    const t0 = Date.now();
    const raced = await Promise.all([1, 2, 3].map(() => store.takeRefreshLease(server, generation, t0 + 5_000, t0)));
    expect(raced.filter(Boolean)).toHaveLength(1);
    expect(await store.takeRefreshLease(server, generation, t0 + 5_000, t0 + 4_999)).toBe(false);
    // A crashed holder's lease runs out on its own.
    expect(await store.takeRefreshLease(server, generation, t0 + 10_000, t0 + 5_000)).toBe(true);

    expect(await store.replaceTokens(server, { ...expiring("rt-1"), accessToken: "at-1" }, generation)).toBe(true);
    const after = (await store.readTokens(server))!;
    expect(after.generation).toBe(generation + 1);
    // The write cleared the lease; the old generation can neither be leased nor written nor lapsed any more.
    expect(await store.takeRefreshLease(server, generation, t0 + 20_000, t0 + 5_000)).toBe(false);
    expect(await store.replaceTokens(server, expiring("rt-stale"), generation)).toBe(false);
    expect(await store.lapseGeneration(server, generation)).toBe(false);
    expect(await store.readTokens(server)).toMatchObject({ lapsed: false, tokens: { accessToken: "at-1" } });
    expect(await store.takeRefreshLease(server, after.generation, t0 + 20_000, t0 + 5_000)).toBe(true);
  });

  it("two runs needing a refresh at once: one refresh request, both use the token it stored, the grant stays", async () => {
    const store = new OAuthStore(env.DB, KEY);
    const server = uniqueServer();
    await store.saveTokens(server, GRANT.metadata.issuer, expiring(), "token:root");
    const { refresh, requests } = rotatingRefresh(200);
    const verdicts = await Promise.all([
      usableToken(store, server, refresh, TIMING),
      usableToken(store, server, refresh, TIMING),
      usableToken(new OAuthStore(env.DB, KEY), server, refresh, TIMING),
    ]);
    expect(requests).toEqual(["rt-0"]);
    expect(verdicts).toEqual([1, 2, 3].map(() => ({ kind: "token", accessToken: "at-1" })));
    expect(await store.readTokens(server)).toMatchObject({
      lapsed: false,
      tokens: { accessToken: "at-1", refreshToken: "rt-1-secret-0123456789" },
    });
    expect(await columnsOf("mcp_oauth_tokens")).not.toContain("rt-1-secret-0123456789");
  });

  it("a refused refresh lapses the grant only if the row still holds the refused token; else the new set is used", async () => {
    const store = new OAuthStore(env.DB, KEY);
    const server = uniqueServer();
    await store.saveTokens(server, GRANT.metadata.issuer, expiring(), "token:root");
    // While this refresh is out, another run (its lease run out) stores a new set; then this one is refused.
    const refusedAfterReplace = async () => {
      const { generation } = (await store.readTokens(server))!;
      await store.replaceTokens(server, { ...expiring("rt-9"), accessToken: "at-9", expiresAtMs: Date.now() + 3_600_000 }, generation);
      throw new OAuthError(OAuthErrorCode.InvalidGrant, "refresh token already used");
    };
    expect(await usableToken(store, server, refusedAfterReplace, TIMING)).toEqual({ kind: "token", accessToken: "at-9" });
    expect(await store.readTokens(server)).toMatchObject({ lapsed: false });

    // Nobody replaced it: refused means lapsed.
    const other = uniqueServer();
    await store.saveTokens(other, GRANT.metadata.issuer, expiring(), "token:root");
    const refused = async () => {
      throw new OAuthError(OAuthErrorCode.InvalidGrant, "revoked");
    };
    expect(await usableToken(store, other, refused, TIMING)).toMatchObject({
      kind: "authorization_required",
      message: expect.stringContaining("refused"),
    });
    expect(await store.readTokens(other)).toMatchObject({ lapsed: true });
  });

  it("a refresh that fails without a refusal keeps the grant and gives the lease back; the old token serves while it lives", async () => {
    const store = new OAuthStore(env.DB, KEY);
    const server = uniqueServer();
    await store.saveTokens(server, GRANT.metadata.issuer, expiring(), "token:root");
    const unreachable = async () => {
      throw new TypeError("fetch failed");
    };
    expect(await usableToken(store, server, unreachable, TIMING)).toEqual({ kind: "token", accessToken: "at-0" });
    const { lapsed, generation } = (await store.readTokens(server))!;
    expect(lapsed).toBe(false);
    expect(await store.takeRefreshLease(server, generation, Date.now() + 1_000)).toBe(true);
  });

  it("a run that finds the lease held waits, bounded: it takes over a lease that ran out, else uses the old token while it lives", async () => {
    const store = new OAuthStore(env.DB, KEY);
    const server = uniqueServer();
    await store.saveTokens(server, GRANT.metadata.issuer, expiring(), "token:root");
    const { generation } = (await store.readTokens(server))!;
    // A holder that crashed: its lease runs out in 300 ms, within the wait.
    expect(await store.takeRefreshLease(server, generation, Date.now() + 300)).toBe(true);
    const { refresh, requests } = rotatingRefresh(0);
    expect(await usableToken(store, server, refresh, TIMING)).toEqual({ kind: "token", accessToken: "at-1" });
    expect(requests).toEqual(["rt-0"]);

    // A lease held past the wait: the still-valid token is used; an expired one is authorization_required, not lapsed.
    const held = uniqueServer();
    await store.saveTokens(held, GRANT.metadata.issuer, expiring(), "token:root");
    const heldGeneration = (await store.readTokens(held))!.generation;
    expect(await store.takeRefreshLease(held, heldGeneration, Date.now() + 60_000)).toBe(true);
    const quick = { ...TIMING, waitMs: 100 };
    expect(await usableToken(store, held, refresh, quick)).toEqual({ kind: "token", accessToken: "at-0" });
    const gone = uniqueServer();
    await store.saveTokens(gone, GRANT.metadata.issuer, { ...expiring(), expiresAtMs: Date.now() - 1_000 }, "token:root");
    expect(await store.takeRefreshLease(gone, (await store.readTokens(gone))!.generation, Date.now() + 60_000)).toBe(true);
    expect(await usableToken(store, gone, refresh, quick)).toMatchObject({ kind: "authorization_required" });
    expect(await store.readTokens(gone)).toMatchObject({ lapsed: false });
    expect(requests).toEqual(["rt-0"]);
  });
});
