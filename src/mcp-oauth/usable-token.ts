// The access token a call or a listing sends to an OAuth MCP server (contract
// section 21), refreshed first when it expires within REFRESH_AHEAD_MS, and
// one refresh at a time per server across runs and isolates. Authorization
// servers rotate refresh tokens (OAuth 2.1, for public clients), so of two
// refreshes with one refresh token the second is refused; D1 is the only
// state runs share, so the refresh is serialised by a lease on the token row
// (oauth-store.ts takeRefreshLease: one conditional UPDATE). The holder
// refreshes and writes the next generation; the others poll the row until it
// moves on and use what the holder stored. A refused refresh lapses the grant
// only if the row still holds the refused refresh token (the generation read).
// Everything here happens before the call's checkpoint.
import { OAuthError, OAuthErrorCode, type OAuthTokens, refreshAuthorization } from "@modelcontextprotocol/client";
import { sleep } from "../schedule/deadline";
import { tokenSet } from "./oauth-flow";
import type { GrantContext, OAuthStore, TokenSet } from "./oauth-store";

/** A token that expires sooner than this is refreshed before the call (contract section 21). */
const REFRESH_AHEAD_MS = 60_000;
/** One refresh request's bound: a holder that hears nothing by then gives the lease back. */
const REFRESH_REQUEST_TIMEOUT_MS = 5_000;

export interface RefreshTiming {
  /** How long a taken lease holds: one bounded request and D1's writes, with margin. A crashed holder's lease runs out after it. */
  leaseMs: number;
  /** How long a run waits for another run's refresh: past one bounded request, well inside MCP_CONNECT_TIMEOUT_MS's 30 s default. */
  waitMs: number;
  /** How often a waiting run reads the row again. */
  pollMs: number;
}

const REFRESH_TIMING: RefreshTiming = { leaseMs: 10_000, waitMs: 7_000, pollMs: 100 };

/** The token request of a refresh; the SDK's in production, a stand-in in the lease's unit tests. */
export type RefreshRequest = (grant: GrantContext, refreshToken: string) => Promise<OAuthTokens>;

const sdkRefresh: RefreshRequest = (grant, refreshToken) =>
  refreshAuthorization(grant.authorizationServerUrl, {
    metadata: grant.metadata,
    clientInformation: grant.client,
    refreshToken,
    resource: new URL(grant.resource),
    fetchFn: (url, init) => fetch(url, { ...init, signal: AbortSignal.timeout(REFRESH_REQUEST_TIMEOUT_MS) }),
  });

/** Answers that say "try later", not "this refresh token is no good": the grant stays. */
const TRANSIENT_CODES = new Set<string>([
  OAuthErrorCode.ServerError,
  OAuthErrorCode.TemporarilyUnavailable,
  OAuthErrorCode.TooManyRequests,
]);
const isRefusal = (error: unknown) => error instanceof OAuthError && !TRANSIENT_CODES.has(error.code);

export type TokenVerdict = { kind: "token"; accessToken: string } | { kind: "authorization_required"; message: string };

/**
 * The access token to send to `server`, refreshed first (by this run or another) when it expires
 * within REFRESH_AHEAD_MS. Missing, lapsed, expired without a refresh token, a refused refresh, or a
 * refresh that neither this run nor the lease holder completed while the old token is expired:
 * authorization_required (only a refused refresh lapses the grant). Never throws.
 */
export async function usableToken(
  store: OAuthStore,
  server: string,
  refresh: RefreshRequest = sdkRefresh,
  timing: RefreshTiming = REFRESH_TIMING,
): Promise<TokenVerdict> {
  const required = (why: string): TokenVerdict => ({
    kind: "authorization_required",
    message: `${server} needs authorization (${why}); an admin runs \`approved-exec mcp connect ${server}\`.`,
  });
  const use = (tokens: TokenSet): TokenVerdict => ({ kind: "token", accessToken: tokens.accessToken });
  const live = (tokens: TokenSet) => tokens.expiresAtMs === undefined || tokens.expiresAtMs > Date.now();
  try {
    const waitUntil = Date.now() + timing.waitMs;
    for (;;) {
      const stored = await store.readTokens(server);
      if (stored === null || stored.tokens === null) return required("not connected");
      if (stored.lapsed) return required("the server refused its token");
      const { tokens, generation } = stored;
      const now = Date.now();
      if (tokens.expiresAtMs === undefined || tokens.expiresAtMs - now > REFRESH_AHEAD_MS) return use(tokens);
      if (tokens.refreshToken === undefined) return required("its token expired");
      if (await store.takeRefreshLease(server, generation, now + timing.leaseMs, now)) {
        let refreshed: OAuthTokens;
        try {
          refreshed = await refresh(tokens.grant, tokens.refreshToken);
        } catch (error) {
          if (!isRefusal(error)) {
            await store.releaseRefreshLease(server, generation);
            return live(tokens) ? use(tokens) : required("its refresh did not complete; try again");
          }
          if (await store.lapseGeneration(server, generation)) return required("its refresh was refused");
          continue; // another run replaced the token set meanwhile: read it and use it
        }
        // A server that does not rotate answers no refresh token: the one it took stays valid (RFC 6749 section 6).
        const next = tokenSet({ refresh_token: tokens.refreshToken, ...refreshed }, tokens.grant, now);
        // False only when a connect replaced the set meanwhile; this token is live either way.
        await store.replaceTokens(server, next, generation);
        return use(next);
      }
      if (Date.now() >= waitUntil) return live(tokens) ? use(tokens) : required("another run's refresh of its token did not finish");
      await sleep(timing.pollMs);
    }
  } catch {
    return required("its token could not be read");
  }
}
