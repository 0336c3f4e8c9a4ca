// Each configured MCP server as last seen (contract section 21): the
// Run Durable Object records every contact (a tool listing, a call's
// connect, a call's failure) in D1, and GET /api/mcp/servers reads them
// beside the host config. Recording never fails a run: a D1 error only
// leaves the listing one contact behind. An isolate writes a contact only
// when it says something new (another revision, tool count or success) or
// its last write is CONTACT_REFRESH_MS old, so a burst of calls does not
// become a burst of D1 writes competing with the checkpoints.
export type McpContact =
  /** The server answered: the revision spoken, and the tool count when the contact listed them. */
  | { kind: "connected"; protocol_version: string; tools?: number }
  /** The contact failed (unreachable, refused, timed out). What an earlier contact learned stays. */
  | { kind: "failed" };

export interface McpContactRow {
  server: string;
  protocol_version: string | null;
  tools: number | null;
  connected: boolean;
  last_contact_at: string;
}

/** How stale `last_contact_at` may get while nothing else about a server changes. */
const CONTACT_REFRESH_MS = 60_000;
/** Bound on the servers one isolate remembers writing (a host configures a handful). */
const MAX_REMEMBERED = 256;
const lastWritten = new Map<string, { what: string; tools: number | undefined; atMs: number }>();

/** Where the Run Durable Object reports contacts; fire and forget. */
export type McpContactSink = (server: string, contact: McpContact) => void;

/** Upserts one contact; never throws. */
export async function recordMcpContact(db: D1Database, server: string, contact: McpContact, at = new Date()): Promise<void> {
  const now = at.toISOString();
  const what = contact.kind === "failed" ? "failed" : `connected ${contact.protocol_version}`;
  const tools = contact.kind === "connected" ? contact.tools : undefined;
  const last = lastWritten.get(server);
  const newTools = tools !== undefined && tools !== last?.tools;
  if (last && last.what === what && !newTools && at.getTime() - last.atMs < CONTACT_REFRESH_MS) return;
  if (lastWritten.size >= MAX_REMEMBERED && !lastWritten.has(server)) lastWritten.clear();
  lastWritten.set(server, { what, tools: tools ?? last?.tools, atMs: at.getTime() });
  try {
    if (contact.kind === "failed") {
      await db
        .prepare(
          `INSERT INTO mcp_server_contacts (server, protocol_version, tools, connected, last_contact_at) VALUES (?1, NULL, NULL, 0, ?2)
           ON CONFLICT (server) DO UPDATE SET connected = 0, last_contact_at = ?2`,
        )
        .bind(server, now)
        .run();
      return;
    }
    await db
      .prepare(
        `INSERT INTO mcp_server_contacts (server, protocol_version, tools, connected, last_contact_at) VALUES (?1, ?2, ?3, 1, ?4)
         ON CONFLICT (server) DO UPDATE SET protocol_version = ?2, tools = COALESCE(?3, tools), connected = 1, last_contact_at = ?4`,
      )
      .bind(server, contact.protocol_version, contact.tools ?? null, now)
      .run();
  } catch {
    // The listing lags one contact; the run goes on.
  }
}

/** Every recorded contact, by server name. */
export async function readMcpContacts(db: D1Database): Promise<Map<string, McpContactRow>> {
  const { results } = await db
    .prepare(`SELECT server, protocol_version, tools, connected, last_contact_at FROM mcp_server_contacts`)
    .all<{ server: string; protocol_version: string | null; tools: number | null; connected: number; last_contact_at: string }>();
  return new Map(results.map((row) => [row.server, { ...row, connected: row.connected === 1 }]));
}
