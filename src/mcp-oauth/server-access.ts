// How a call or a tool listing reaches an MCP server's authorization
// (contract section 21): a server with `oauth` gets its access token (from
// D1, refreshed when it expires within 60 s, one refresh at a time across
// runs: usable-token.ts) before anything is sent, or
// `authorization_required` with nothing sent; a server that refuses a token
// (401/403) lapses the grant, so later calls stop before sending until an
// admin connects again, unless another run has stored a new token since
// (that one stays). Servers without `oauth` pass through unchanged.
import type { HostConfig } from "../config/config";
import type { McpServerConfig } from "../execution/mcp-transport";
import { OAuthStore } from "./oauth-store";
import { usableToken } from "./usable-token";

type ServerSettings = HostConfig["MCP_SERVERS"][string];

type ServerAccess = { kind: "ready"; server: McpServerConfig } | { kind: "authorization_required"; message: string };

export interface McpAuthorization {
  /** The server's config with its credential, or why it has none. Never throws. */
  access(name: string, settings: ServerSettings): Promise<ServerAccess>;
  /**
   * The server answered 401/403 to a request carrying `accessToken`: the grant lapses (never refreshed
   * after a failed call), unless the stored token is no longer the one refused.
   */
  refused(name: string, settings: ServerSettings, accessToken: string | undefined): Promise<void>;
}

/** For hosts without OAuth and for tests: every server as configured. */
export const HEADERS_ONLY: McpAuthorization = {
  access: async (_name, settings) => ({ kind: "ready", server: settings }),
  refused: async () => {},
};

/** Whether an HTTP status is the server refusing the request's credential. */
export const isAuthRefusal = (status: number | undefined) => status === 401 || status === 403;

export function oauthAuthorization(db: D1Database, config: HostConfig): McpAuthorization {
  const store = config.MCP_TOKEN_KEY === undefined ? null : new OAuthStore(db, config.MCP_TOKEN_KEY);
  return {
    async access(name, settings) {
      if (settings.oauth === undefined) return { kind: "ready", server: settings };
      if (store === null) return { kind: "authorization_required", message: `${name} needs MCP_TOKEN_KEY for OAuth.` };
      const verdict = await usableToken(store, name);
      if (verdict.kind === "authorization_required") return verdict;
      return { kind: "ready", server: { ...settings, accessToken: verdict.accessToken } };
    },
    async refused(name, settings, accessToken) {
      if (settings.oauth === undefined || store === null) return;
      try {
        // A refresh by another run may have replaced the token since (a server may revoke the old one when it rotates).
        const stored = await store.readTokens(name);
        if (stored === null || (stored.tokens !== null && stored.tokens.accessToken !== accessToken)) return;
        await store.lapseGeneration(name, stored.generation);
      } catch {
        // Unreadable: the next call's access() answers authorization_required from the same store, or finds it well.
      }
    },
  };
}
