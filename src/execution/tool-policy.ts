// How the host config classifies a tool: built-in or MCP, mutating or
// read-only, and which approval level it needs (contract sections 1, 10 and
// 21). Host config first; then the MCP server's annotations, which are the
// server's claims: its readOnlyHint counts only for a server the host marks
// `trust_annotations`, and an explicit destructiveHint only ever asks for
// more care. Unknown means mutating.
import type { HostConfig } from "../config/config";
import type { McpToolAnnotations, McpToolInfo } from "./mcp-tool-list";
import { HUMAN_ASK_TOOL, type ApprovalLevel } from "./tool-calls";

export interface ToolClass {
  kind: "mcp" | "human_ask";
  mutating: boolean;
  level: ApprovalLevel | null;
  description: string;
  /** The server's annotations as it gave them, for the person deciding (absent when it gave none). */
  annotations?: McpToolAnnotations;
}

/** One tool's TOOL_POLICY entry. */
type ToolPolicy = HostConfig["TOOL_POLICY"][string];

const MCP_TOOL_NAME = /^mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__(.+)$/;

/** Splits `mcp__<server>__<tool>`; undefined for anything else. */
export function parseMcpToolName(name: string): { server: string; tool: string } | undefined {
  const match = MCP_TOOL_NAME.exec(name);
  return match ? { server: match[1]!, tool: match[2]! } : undefined;
}

export function isKnownToolNameShape(name: string): boolean {
  return name === HUMAN_ASK_TOOL || parseMcpToolName(name) !== undefined;
}

/**
 * The rule of sections 1 and 10 for one MCP tool. Mutating unless the host's
 * `read_only` says otherwise, or (with no `read_only` from the host) the
 * server claims `readOnlyHint: true` and the host trusts its annotations.
 * Level: the host's, else `confirm` for an explicit `destructiveHint: true`
 * (trusted or not), else `approve` for a mutating tool and none for a
 * read-only one.
 */
export function toolRule(
  policy: ToolPolicy | undefined,
  annotations: McpToolAnnotations | undefined,
  trustAnnotations: boolean,
): { mutating: boolean; level: ApprovalLevel | null } {
  const readOnly = policy?.read_only ?? (trustAnnotations && annotations?.readOnlyHint === true);
  if (policy?.level !== undefined) return { mutating: !readOnly, level: policy.level };
  if (annotations?.destructiveHint === true) return { mutating: !readOnly, level: "confirm" };
  return { mutating: !readOnly, level: readOnly ? null : "approve" };
}

export function classifyTool(
  name: string,
  listing: Pick<McpToolInfo, "description" | "annotations"> | undefined,
  config: Pick<HostConfig, "TOOL_POLICY" | "MCP_SERVERS">,
): ToolClass {
  if (name === HUMAN_ASK_TOOL) {
    return { kind: "human_ask", mutating: false, level: null, description: "Ask a person a question and wait for the answer." };
  }
  const server = parseMcpToolName(name)?.server;
  const trusted = server !== undefined && config.MCP_SERVERS[server]?.trust_annotations === true;
  const annotations = listing?.annotations;
  const tool: ToolClass = {
    kind: "mcp",
    ...toolRule(config.TOOL_POLICY[name], annotations, trusted),
    description: listing?.description?.trim() || `Call ${name}.`,
  };
  if (annotations) tool.annotations = annotations;
  return tool;
}
