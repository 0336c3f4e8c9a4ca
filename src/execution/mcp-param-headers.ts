/**
 * The `Mcp-Param-{Name}` headers of a 2026-07-28 `tools/call` (contract section 21; the
 * revision's "custom headers from tool parameters", SEP-2243): a tool's `inputSchema` may mark
 * primitive properties with `x-mcp-header: "<Name>"`, and the client mirrors each such argument
 * of the call into `Mcp-Param-<Name>`, plain when it is a safe ASCII field value, else as
 * `=?base64?<base64 of its UTF-8>?=`; a null or absent argument sends no header.
 *
 * Written by hand because the SDK keeps its codec internal: it applies it only inside
 * `Client.callTool`, which this engine does not use (on a header mismatch that one lists the
 * tools and sends the call a second time, contract section 7). The rules mirror the SDK's.
 *
 * The declarations come from the tools/list the engine already does for its catalog, kept per
 * isolate by server URL and tool name (as mcp-era-cache.ts keeps eras), so a stateless call
 * still costs exactly one request. A call from an isolate with no listing of its server (one
 * started after the run's approval was asked, say) lists the tools first, on the call's session
 * and before its checkpoint (mcp-tool-list.ts `listBeforeCall`).
 */

/** Bound on the tools remembered per isolate (a host configures a handful of servers). */
const MAX_TOOLS = 1_024;
const HEADER_PREFIX = "Mcp-Param-";
/** RFC 9110 token: what a header name may be. */
const RFC9110_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PERMITTED_TYPES = new Set(["string", "integer", "boolean"]);
const BASE64_PREFIX = "=?base64?";
const BASE64_SUFFIX = "?=";

interface Declaration {
  /** The property path through `properties` to the argument. */
  path: string[];
  headerName: string;
}

const declarations = new Map<string, Declaration[]>();
/** The servers (by URL) whose tools this isolate has listed: a handful, as the host configures them. */
const listedServers = new Set<string>();

const keyOf = (serverUrl: string, tool: string) => `${serverUrl}\n${tool}`;

/** Remembers which arguments of each listed tool ride as headers; a tool with an invalid declaration gets none. */
export function rememberParamHeaders(serverUrl: string, tools: readonly { name: string; inputSchema: unknown }[]): void {
  listedServers.add(serverUrl);
  for (const tool of tools) {
    const found = scan(tool.inputSchema);
    const key = keyOf(serverUrl, tool.name);
    declarations.delete(key);
    if (found === undefined || found.length === 0) continue;
    if (declarations.size >= MAX_TOOLS) declarations.delete(declarations.keys().next().value as string);
    declarations.set(key, found);
  }
}

/** Whether this isolate has listed the server's tools, so `paramHeaders` knows its declarations. */
export const hasParamListing = (serverUrl: string): boolean => listedServers.has(serverUrl);

/** The `Mcp-Param-*` headers of one call, `{}` when the tool declares none (or was not listed here). */
export function paramHeaders(serverUrl: string, tool: string, args: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { path, headerName } of declarations.get(keyOf(serverUrl, tool)) ?? []) {
    let value: unknown = args;
    for (const key of path) value = value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
    const text = primitiveText(value);
    if (text !== undefined) out[`${HEADER_PREFIX}${headerName}`] = encodeValue(text);
  }
  return out;
}

/** Declarations reachable through `properties` only; undefined when one is malformed (then none is sent). */
function scan(schema: unknown, path: string[] = [], seen = new Set<string>()): Declaration[] | undefined {
  if (schema === null || typeof schema !== "object") return [];
  const node = schema as Record<string, unknown>;
  const found: Declaration[] = [];
  if ("x-mcp-header" in node && path.length > 0) {
    const name = node["x-mcp-header"];
    if (typeof name !== "string" || !RFC9110_TOKEN.test(name)) return undefined;
    if (typeof node.type !== "string" || !PERMITTED_TYPES.has(node.type) || seen.has(name.toLowerCase())) return undefined;
    seen.add(name.toLowerCase());
    found.push({ path, headerName: name });
  }
  const properties = node.properties;
  if (properties === null || typeof properties !== "object") return found;
  for (const [key, child] of Object.entries(properties)) {
    const below = scan(child, [...path, key], seen);
    if (below === undefined) return undefined;
    found.push(...below);
  }
  return found;
}

function primitiveText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number" && Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value)))
    return String(value);
  return undefined;
}

/** Plain when a safe ASCII field value (no edge whitespace, not sentinel-shaped, not empty), else the base64 sentinel. */
function encodeValue(text: string): string {
  const plain =
    text.length > 0 &&
    text === text.trim() &&
    !(text.startsWith(BASE64_PREFIX) && text.endsWith(BASE64_SUFFIX)) &&
    [...text].every((c) => c === "\t" || (c >= " " && c <= "~"));
  if (plain) return text;
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return `${BASE64_PREFIX}${btoa(binary)}${BASE64_SUFFIX}`;
}
