// GET /api/mcp/servers (contract section 21, viewer): each server of
// MCP_SERVERS as last seen, from the host config (name, URL without query or
// user info and redacted, whether headers are sent, trust_annotations) and the contacts
// the Run Durable Objects recorded in D1 (src/execution/mcp-contacts.ts).
// Header values never appear.
import type { HostConfig } from "../../config/config";
import { readMcpContacts } from "../../execution/mcp-contacts";
import { redactText } from "../../execution/redaction";
import { readGrantSummaries } from "../../mcp-oauth/oauth-store";
import type { mcpServersListingSchema } from "../../wire/listing-schemas";
import type { z } from "zod";
import { jsonResponse } from "../../base/api-error";

type McpServersListing = z.output<typeof mcpServersListingSchema>;

export async function handleListMcpServers(db: D1Database, config: HostConfig): Promise<Response> {
  const [contacts, grants] = await Promise.all([readMcpContacts(db), readGrantSummaries(db)]);
  const listing: McpServersListing = {
    servers: Object.entries(config.MCP_SERVERS).map(([server, settings]) => {
      const contact = contacts.get(server);
      const grant = settings.oauth !== undefined ? grants.get(server) : undefined;
      // For OAuth, connected also needs a usable grant (contract section 21): none, or a lapsed one, is false.
      const usable = settings.oauth === undefined || (grant !== undefined && !grant.lapsed);
      return {
        server,
        url: shownUrl(settings.url),
        protocol_version: contact?.protocol_version ?? null,
        auth: settings.oauth !== undefined ? "oauth" : Object.keys(settings.headers ?? {}).length > 0 ? "headers" : "none",
        trust_annotations: settings.trust_annotations,
        connected: usable ? (contact?.connected ?? null) : false,
        tools: contact?.tools ?? null,
        last_contact_at: contact?.last_contact_at ?? null,
        ...(grant !== undefined ? { issuer: grant.issuer, connected_by: grant.connected_by, connected_at: grant.connected_at } : {}),
      };
    }),
  };
  return jsonResponse(200, listing);
}

/** Origin and path only (a query or user info may carry a credential), redacted as every text is: a path may hold a token. */
function shownUrl(url: string): string {
  const parsed = new URL(url);
  return redactText(`${parsed.origin}${parsed.pathname}`);
}
