-- Each configured MCP server as last seen (contract section 21, GET /api/mcp/servers):
-- the protocol version the last successful contact spoke, how many tools its last
-- listing had, whether the last contact succeeded and when it was. A failed contact
-- keeps what an earlier one learned and sets connected = 0. No row: never contacted.
-- Never a URL or header value: the listing takes those from the host config.
CREATE TABLE mcp_server_contacts (
  server TEXT PRIMARY KEY,
  protocol_version TEXT,
  tools INTEGER,
  connected INTEGER NOT NULL,
  last_contact_at TEXT NOT NULL
);
