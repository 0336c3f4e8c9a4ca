-- OAuth for hosted MCP servers (contract section 21). Every secret (tokens,
-- code verifiers, client secrets) is in a `sealed` column: AES-GCM under
-- MCP_TOKEN_KEY with the owning name as additional data (src/mcp-oauth/token-crypto.ts).
--
-- A pending connect: single-use, 10 minutes, bound to the principal that
-- asked. Keyed by the SHA-256 of the state, never the state itself.
CREATE TABLE mcp_oauth_states (
  state_digest TEXT PRIMARY KEY,
  server TEXT NOT NULL,
  principal TEXT NOT NULL,
  sealed TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
-- One token set per server for the whole deployment: the connecting admin's grant.
-- lapsed = 1: the server refused it (401/403) or its refresh failed; connect again.
CREATE TABLE mcp_oauth_tokens (
  server TEXT PRIMARY KEY,
  issuer TEXT NOT NULL,
  sealed TEXT NOT NULL,
  expires_at TEXT,
  lapsed INTEGER NOT NULL DEFAULT 0,
  connected_by TEXT NOT NULL,
  connected_at TEXT NOT NULL
);
-- Client credentials from dynamic registration, kept per issuer.
CREATE TABLE mcp_oauth_clients (
  issuer TEXT PRIMARY KEY,
  sealed TEXT NOT NULL,
  registered_at TEXT NOT NULL
);
