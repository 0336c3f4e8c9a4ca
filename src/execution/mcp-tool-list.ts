/**
 * A server's tool listing (contract sections 7 and 21): every page of `tools/list` on one
 * session, within one call timeout, as the catalog and GET /api/health read it. Each tool keeps
 * the five annotation fields the contract names, of their declared types: claims, not facts
 * (tool-policy.ts decides what they are worth). The listing also feeds the `Mcp-Param-*`
 * headers of later calls to the same server (mcp-param-headers.ts); a 2026-07-28 call from an
 * isolate that has no listing of its server lists first, on its own session (`listBeforeCall`).
 *
 * Every complete listing is also kept, with when it started, as this isolate's latest listing of
 * its server (contract section 23): a mutation's tool identity is checked against a listing taken
 * after its approval and at most MCP_TOOL_LIST_MAX_AGE_MS old (`listingSince`), else its own.
 *
 * Not responsible for: connecting, caps or failure classification (mcp-transport.ts,
 * mcp-errors.ts), nor caching the catalog (tool-catalog.ts), nor the digest (tool-identity.ts).
 */
import type { Tool } from "@modelcontextprotocol/client";
import { forgetEra } from "./mcp-era-cache";
import { McpTransportError, toTransportError } from "./mcp-errors";
import { hasParamListing, rememberParamHeaders } from "./mcp-param-headers";
import { connectMcp, type McpListingSession, type McpServerConfig, type TransportCaps } from "./mcp-transport";
import { identityOf, type ToolIdentity } from "./tool-identity";

export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  /** The server's `annotations`, the fields it gave of the five the contract names (section 21). Claims, not facts. */
  annotations?: McpToolAnnotations;
  /** The members its `tool_digest` covers, as the server listed them (contract section 23). */
  identity: ToolIdentity;
}

export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A server's tools (all pages) and the protocol version spoken to list them. */
export interface McpToolListing {
  tools: McpToolInfo[];
  protocolVersion: string;
}

/** Guard against a server whose pagination cursor never ends. */
const MAX_TOOL_LIST_PAGES = 100;

/** Lists a server's tools (all pages, one call timeout for them all). Throws McpTransportError on failure. */
export async function listMcpTools(server: McpServerConfig, caps: TransportCaps): Promise<McpToolListing> {
  let session: McpListingSession | undefined;
  try {
    session = await connectMcp(server, caps);
    return { tools: await listPages(session, server.url, caps.callTimeoutMs), protocolVersion: session.protocolVersion };
  } catch (error) {
    // The next contact probes the era again: a server that stopped answering may have changed it.
    forgetEra(server.url);
    throw toTransportError(error);
  } finally {
    await session?.close();
  }
}

/**
 * Before a 2026-07-28 tools/call from an isolate that has not listed its server: the listing, on
 * the call's own session and before its checkpoint, so the call carries its `Mcp-Param-*`
 * headers. Nothing for the earlier revisions (no such headers) or a server already listed.
 * Throws McpTransportError: then nothing of the call has been sent.
 */
export async function listBeforeCall(session: McpListingSession, serverUrl: string, timeoutMs: number): Promise<void> {
  if (!session.stateless || hasParamListing(serverUrl)) return;
  await listPages(session, serverUrl, timeoutMs);
}

/** A complete listing of a server and when it was started (epoch ms). */
export interface TimedListing {
  startedAt: number;
  tools: McpToolInfo[];
}

/** This isolate's latest complete listing of each server, by url. */
const latestListings = new Map<string, TimedListing>();

/**
 * The latest complete listing of `serverUrl` started after `notBefore` (strictly: a listing of the
 * same millisecond may have begun before it) and at most `maxAgeMs` before `now` (contract section
 * 23); none with `maxAgeMs` 0, where every call lists for itself.
 */
export function listingSince(serverUrl: string, notBefore: number, maxAgeMs: number, now = Date.now()): TimedListing | undefined {
  const latest = latestListings.get(serverUrl);
  if (maxAgeMs <= 0 || latest === undefined) return undefined;
  return latest.startedAt > notBefore && now - latest.startedAt <= maxAgeMs ? latest : undefined;
}

/** Every page of tools/list on `session` (one call timeout for them all), kept as the server's latest listing. */
export async function listOnSession(session: McpListingSession, serverUrl: string, timeoutMs: number): Promise<TimedListing> {
  const startedAt = Date.now();
  const tools = await listPages(session, serverUrl, timeoutMs);
  return { startedAt, tools };
}

/** Every page of tools/list on `session` within `timeoutMs`, remembered for the `Mcp-Param-*` headers and as the latest listing. */
async function listPages(session: McpListingSession, serverUrl: string, timeoutMs: number): Promise<McpToolInfo[]> {
  const startedAt = Date.now();
  const deadline = startedAt + timeoutMs;
  const tools: McpToolInfo[] = [];
  const seenCursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 1; ; page += 1) {
    const result = await session.listTools(cursor, Math.max(1, deadline - Date.now()));
    tools.push(...result.tools.map(toToolInfo));
    cursor = result.nextCursor;
    if (cursor === undefined) {
      rememberParamHeaders(serverUrl, tools);
      const latest = latestListings.get(serverUrl);
      if (latest === undefined || latest.startedAt <= startedAt) latestListings.set(serverUrl, { startedAt, tools });
      return tools;
    }
    if (page === MAX_TOOL_LIST_PAGES)
      throw new McpTransportError("transport_error", `tools/list returned more than ${MAX_TOOL_LIST_PAGES} pages`);
    if (seenCursors.has(cursor)) throw new McpTransportError("transport_error", "tools/list repeated a pagination cursor");
    seenCursors.add(cursor);
  }
}

/** The declared type of each of the five annotation fields the contract names (section 21): a field of another type is dropped. */
const ANNOTATION_TYPES: Record<string, string> = {
  title: "string",
  readOnlyHint: "boolean",
  destructiveHint: "boolean",
  idempotentHint: "boolean",
  openWorldHint: "boolean",
};

function toToolInfo(tool: Tool): McpToolInfo {
  const { name, description, inputSchema, annotations } = tool;
  const given = Object.entries(annotations ?? {}).filter(([field, value]) => ANNOTATION_TYPES[field] === typeof value);
  return {
    name,
    identity: identityOf(tool),
    inputSchema: inputSchema as Record<string, unknown>,
    ...(description !== undefined ? { description } : {}),
    ...(given.length > 0 ? { annotations: Object.fromEntries(given) as McpToolAnnotations } : {}),
  };
}
