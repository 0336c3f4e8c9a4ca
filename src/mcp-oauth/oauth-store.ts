// D1 rows of MCP OAuth (contract section 21, migrations 0018 and 0022):
// pending connects (the `state`: single-use, 10 minutes, bound to the
// principal that asked), one token set per server for the deployment (with
// its generation and refresh lease: one refresh at a time across runs and
// isolates), and clients from dynamic registration per issuer. Every secret goes through seal/open
// (token-crypto.ts); a row that does not open under the current key reads
// as absent (the server needs connecting again), never as an error.
import type { AuthorizationServerMetadata, OAuthClientInformationMixed } from "@modelcontextprotocol/client";
import { sha256Hex } from "../auth/digest";
import { open, seal } from "./token-crypto";

/** How long a connect's `state` may be used. */
const STATE_TTL_MS = 10 * 60_000;

/** What the token requests of one grant need: where, as whom, for which resource. Not secret except the client's secret. */
export interface GrantContext {
  authorizationServerUrl: string;
  metadata: AuthorizationServerMetadata;
  client: OAuthClientInformationMixed;
  resource: string;
  redirectUri: string;
  scope?: string;
}

export interface PendingConnect {
  server: string;
  principal: string;
  codeVerifier: string;
  grant: GrantContext;
}

export interface TokenSet {
  accessToken: string;
  refreshToken?: string;
  /** When the access token expires, epoch ms; absent when the server did not say. */
  expiresAtMs?: number;
  grant: GrantContext;
}

export interface StoredTokens {
  issuer: string;
  tokens: TokenSet | null;
  lapsed: boolean;
  /** Bumped by every new token set; a refresh or a lapse applies only to the generation it read. */
  generation: number;
  connected_by: string;
  connected_at: string;
}

/** The listing's view of a server's grant: never a token. */
export interface GrantSummary {
  issuer: string;
  lapsed: boolean;
  expires_at: string | null;
  connected_by: string;
  connected_at: string;
}

export class OAuthStore {
  constructor(
    private readonly db: D1Database,
    private readonly key: string,
  ) {}

  /** Records a pending connect and answers its `state` (32 random bytes, base64url); expired ones are swept. */
  async putState(pending: PendingConnect, now = Date.now()): Promise<string> {
    const state = randomToken();
    const sealed = await seal(this.key, pending.server, { codeVerifier: pending.codeVerifier, grant: pending.grant });
    await this.db.batch([
      this.db.prepare(`DELETE FROM mcp_oauth_states WHERE expires_at < ?1`).bind(new Date(now).toISOString()),
      this.db
        .prepare(`INSERT INTO mcp_oauth_states (state_digest, server, principal, sealed, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)`)
        .bind(await sha256Hex(state), pending.server, pending.principal, sealed, new Date(now + STATE_TTL_MS).toISOString()),
    ]);
    return state;
  }

  /** The live pending connect of `state`, without using it up (a wrong principal must leave it usable). */
  async peekState(state: string, now = Date.now()): Promise<{ server: string; principal: string } | null> {
    const row = await this.db
      .prepare(`SELECT server, principal FROM mcp_oauth_states WHERE state_digest = ?1 AND expires_at > ?2`)
      .bind(await sha256Hex(state), new Date(now).toISOString())
      .first<{ server: string; principal: string }>();
    return row ?? null;
  }

  /** Uses `state` up (one statement, so two callbacks cannot both win); null when it is unknown, used or expired. */
  async takeState(state: string, now = Date.now()): Promise<PendingConnect | null> {
    const row = await this.db
      .prepare(`DELETE FROM mcp_oauth_states WHERE state_digest = ?1 AND expires_at > ?2 RETURNING server, principal, sealed`)
      .bind(await sha256Hex(state), new Date(now).toISOString())
      .first<{ server: string; principal: string; sealed: string }>();
    if (!row) return null;
    const opened = (await open(this.key, row.server, row.sealed)) as { codeVerifier: string; grant: GrantContext } | null;
    if (opened === null) return null;
    return { server: row.server, principal: row.principal, ...opened };
  }

  async saveTokens(server: string, issuer: string, tokens: TokenSet, connectedBy: string, now = Date.now()): Promise<void> {
    const sealed = await seal(this.key, server, tokens);
    const expiresAt = tokens.expiresAtMs === undefined ? null : new Date(tokens.expiresAtMs).toISOString();
    await this.db
      .prepare(
        `INSERT INTO mcp_oauth_tokens (server, issuer, sealed, expires_at, lapsed, connected_by, connected_at) VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6)
         ON CONFLICT (server) DO UPDATE SET issuer = ?2, sealed = ?3, expires_at = ?4, lapsed = 0, connected_by = ?5, connected_at = ?6,
           generation = generation + 1, refresh_lease_until = NULL`,
      )
      .bind(server, issuer, sealed, expiresAt, connectedBy, new Date(now).toISOString())
      .run();
  }

  /**
   * Takes the refresh lease of `server`'s token set of `generation` until `untilMs`: one conditional
   * UPDATE, so of runs racing for it exactly one gets true. False when the lease is held and live,
   * the grant lapsed, or the set is no longer that generation (another run refreshed it: read again).
   */
  async takeRefreshLease(server: string, generation: number, untilMs: number, now = Date.now()): Promise<boolean> {
    const { meta } = await this.db
      .prepare(
        `UPDATE mcp_oauth_tokens SET refresh_lease_until = ?3
          WHERE server = ?1 AND generation = ?2 AND lapsed = 0 AND (refresh_lease_until IS NULL OR refresh_lease_until <= ?4)`,
      )
      .bind(server, generation, new Date(untilMs).toISOString(), new Date(now).toISOString())
      .run();
    return meta.changes === 1;
  }

  /** Gives the lease back without a new set (the refresh did not complete); nothing when the generation moved on. */
  async releaseRefreshLease(server: string, generation: number): Promise<void> {
    await this.db
      .prepare(`UPDATE mcp_oauth_tokens SET refresh_lease_until = NULL WHERE server = ?1 AND generation = ?2`)
      .bind(server, generation)
      .run();
  }

  /**
   * A refreshed token set replaces generation `generation` (the next generation, lease cleared); who
   * connected and when stay. False when the row moved on meanwhile (a connect): that set is kept.
   */
  async replaceTokens(server: string, tokens: TokenSet, generation: number): Promise<boolean> {
    const sealed = await seal(this.key, server, tokens);
    const expiresAt = tokens.expiresAtMs === undefined ? null : new Date(tokens.expiresAtMs).toISOString();
    const { meta } = await this.db
      .prepare(
        `UPDATE mcp_oauth_tokens SET sealed = ?2, expires_at = ?3, lapsed = 0, generation = generation + 1, refresh_lease_until = NULL
          WHERE server = ?1 AND generation = ?4`,
      )
      .bind(server, sealed, expiresAt, generation)
      .run();
    return meta.changes === 1;
  }

  async readTokens(server: string): Promise<StoredTokens | null> {
    const row = await this.db
      .prepare(`SELECT issuer, sealed, lapsed, generation, connected_by, connected_at FROM mcp_oauth_tokens WHERE server = ?1`)
      .bind(server)
      .first<{ issuer: string; sealed: string; lapsed: number; generation: number; connected_by: string; connected_at: string }>();
    if (!row) return null;
    const tokens = (await open(this.key, server, row.sealed)) as TokenSet | null;
    return {
      issuer: row.issuer,
      tokens,
      lapsed: row.lapsed === 1,
      generation: row.generation,
      connected_by: row.connected_by,
      connected_at: row.connected_at,
    };
  }

  /**
   * A token of generation `generation` was refused (the refresh token by the authorization server, or
   * the access token by the MCP server): the grant lapses only if the row still holds that generation.
   * False when another run replaced the set meanwhile (use that one).
   */
  async lapseGeneration(server: string, generation: number): Promise<boolean> {
    const { meta } = await this.db
      .prepare(`UPDATE mcp_oauth_tokens SET lapsed = 1, refresh_lease_until = NULL WHERE server = ?1 AND generation = ?2`)
      .bind(server, generation)
      .run();
    return meta.changes === 1;
  }

  /** A client registered with `issuer` (dynamic registration), or null. */
  async readClient(issuer: string): Promise<OAuthClientInformationMixed | null> {
    const row = await this.db.prepare(`SELECT sealed FROM mcp_oauth_clients WHERE issuer = ?1`).bind(issuer).first<{ sealed: string }>();
    return row ? ((await open(this.key, issuer, row.sealed)) as OAuthClientInformationMixed | null) : null;
  }

  async saveClient(issuer: string, client: OAuthClientInformationMixed, now = Date.now()): Promise<void> {
    await this.db
      .prepare(
        `INSERT INTO mcp_oauth_clients (issuer, sealed, registered_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (issuer) DO UPDATE SET sealed = ?2, registered_at = ?3`,
      )
      .bind(issuer, await seal(this.key, issuer, client), new Date(now).toISOString())
      .run();
  }
}

/** Every server's grant as the listing shows it (no key needed: nothing sealed is read). */
export async function readGrantSummaries(db: D1Database): Promise<Map<string, GrantSummary>> {
  const { results } = await db
    .prepare(`SELECT server, issuer, lapsed, expires_at, connected_by, connected_at FROM mcp_oauth_tokens`)
    .all<{ server: string; issuer: string; lapsed: number; expires_at: string | null; connected_by: string; connected_at: string }>();
  return new Map(results.map(({ server, lapsed, ...rest }) => [server, { ...rest, lapsed: lapsed === 1 }]));
}

function randomToken(): string {
  let binary = "";
  for (const byte of crypto.getRandomValues(new Uint8Array(32))) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
