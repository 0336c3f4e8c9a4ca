/**
 * A tool's identity (contract section 23): `tool_digest`, `sha256:` and the lower-case hex SHA-256
 * of the RFC 8785 (JSON Canonicalization Scheme) form of
 * `{"server_url","name","title"?,"description"?,"inputSchema","outputSchema"?,"annotations"?}`
 * as the server listed the tool (the MCP_SERVERS url as configured, the MCP tool name; absent
 * members omitted). An approval is bound to it: a mutation whose tool is gone, or listed with
 * another digest when it is about to be sent, ends not_executed(tool_changed).
 *
 * Not responsible for: listing (mcp-tool-list.ts), nor deciding when a listing is fresh enough
 * (mcp-send.ts, with MCP_TOOL_LIST_MAX_AGE_MS).
 */
import { canonicalJson } from "../client/audit-chain";

/** The members of a listed tool its digest covers, as the server gave them. */
export interface ToolIdentity {
  name: string;
  title?: unknown;
  description?: unknown;
  inputSchema: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

/** The digested members of a tool as listed (`tools/list`), whatever else it carries (icons, _meta, ...). */
export function identityOf(tool: ToolIdentity): ToolIdentity {
  const { name, title, description, inputSchema, outputSchema, annotations } = tool;
  return {
    name,
    ...(title !== undefined ? { title } : {}),
    ...(description !== undefined ? { description } : {}),
    inputSchema,
    ...(outputSchema !== undefined ? { outputSchema } : {}),
    ...(annotations !== undefined ? { annotations } : {}),
  };
}

/** The RFC 8785 text a tool's digest is taken over (absent members omitted; canonicalize drops undefined). */
export function toolIdentityText(serverUrl: string, identity: ToolIdentity): string {
  return canonicalJson({ server_url: serverUrl, ...identityOf(identity) });
}

/** `sha256:<64 lower-case hex>` of the tool's RFC 8785 form. */
export async function toolDigest(serverUrl: string, identity: ToolIdentity): Promise<string> {
  const bytes = new TextEncoder().encode(toolIdentityText(serverUrl, identity));
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `sha256:${[...hash].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
