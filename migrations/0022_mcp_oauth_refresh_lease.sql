-- One refresh at a time per MCP OAuth server, across runs and isolates
-- (contract section 21; src/mcp-oauth/oauth-store.ts). An authorization
-- server that rotates refresh tokens takes a refresh token once, so two runs
-- refreshing together would see the second refused.
--
-- generation: bumped by every new token set (a connect or a refresh). A
-- refresh is written, and a refused refresh lapses the grant, only while the
-- row still holds the generation that was read; otherwise another run
-- replaced the set and its token is used.
-- refresh_lease_until: ISO time until which one run holds the refresh (taken
-- by one conditional UPDATE, cleared when the new set is written); NULL or
-- past: free. A lease left by a crashed holder simply runs out.
ALTER TABLE mcp_oauth_tokens ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mcp_oauth_tokens ADD COLUMN refresh_lease_until TEXT;

-- Expired connect states are deleted by retention (src/operate/retention.ts)
-- and by the next connect, through this index.
CREATE INDEX mcp_oauth_states_expiry ON mcp_oauth_states (expires_at);
