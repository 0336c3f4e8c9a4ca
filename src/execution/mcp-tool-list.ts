/**
 * A server's tool listing (contract sections 7 and 21): every page of `tools/list` on one
 * session, within one call timeout, as the catalog and GET /api/health read it. Each tool keeps
 * the five annotation fields the contract names, of their declared types: claims, not facts
 * (tool-policy.ts decides what they are worth). The listing also feeds the `Mcp-Param-*`
 * headers of later calls to the same server (mcp-param-headers.ts).
 *
 * Not responsible for: connecting, caps or failure classification (mcp-transport.ts,
 * mcp-errors.ts), nor caching the catalog (tool-catalog.ts).
 */
import type { Tool } from "@modelcontextprotocol/client";
import { forgetEra } from "./mcp-era-cache";
import { McpTransportError, toTransportError } from "./mcp-errors";
import { rememberParamHeaders } from "./mcp-param-headers";
import { connectMcp, type McpServerConfig, type TransportCaps } from "./mcp-transport";

export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  /** The server's `annotations`, the fields it gave of the five the contract names (section 21). Claims, not facts. */
  annotations?: McpToolAnnotations;
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
  let session: Awaited<ReturnType<typeof connectMcp>> | undefined;
  try {
    session = await connectMcp(server, caps);
    const deadline = Date.now() + caps.callTimeoutMs;
    const tools: McpToolInfo[] = [];
    const seenCursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 1; ; page += 1) {
      const result = await session.listTools(cursor, Math.max(1, deadline - Date.now()));
      tools.push(...result.tools.map(toToolInfo));
      cursor = result.nextCursor;
      if (cursor === undefined) {
        rememberParamHeaders(server.url, tools);
        return { tools, protocolVersion: session.protocolVersion };
      }
      if (page === MAX_TOOL_LIST_PAGES)
        throw new McpTransportError("transport_error", `tools/list returned more than ${MAX_TOOL_LIST_PAGES} pages`);
      if (seenCursors.has(cursor)) throw new McpTransportError("transport_error", "tools/list repeated a pagination cursor");
      seenCursors.add(cursor);
    }
  } catch (error) {
    // The next contact probes the era again: a server that stopped answering may have changed it.
    forgetEra(server.url);
    throw toTransportError(error);
  } finally {
    await session?.close();
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

function toToolInfo({ name, description, inputSchema, annotations }: Tool): McpToolInfo {
  const given = Object.entries(annotations ?? {}).filter(([field, value]) => ANNOTATION_TYPES[field] === typeof value);
  return {
    name,
    inputSchema: inputSchema as Record<string, unknown>,
    ...(description !== undefined ? { description } : {}),
    ...(given.length > 0 ? { annotations: Object.fromEntries(given) as McpToolAnnotations } : {}),
  };
}
