// MCP OAuth at rest in real D1 (contract section 21; src/mcp-oauth/,
// migration 0018): AES-GCM under MCP_TOKEN_KEY with the owner as additional
// data, the connect's state (single-use, 10 minutes, a peek leaves it
// usable), the token row (never a plaintext secret in a column), and which
// tokens count as usable without any network (missing, lapsed, expiring with
// no refresh token).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { usableToken } from "../../src/mcp-oauth/oauth-flow";
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

    await store.markLapsed(server);
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
