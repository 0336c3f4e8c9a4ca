// How the host config classifies a tool: built-in or MCP, mutating or
// read-only, and which approval level it needs (contract sections 1 and 10).
// Host config first; then the MCP server's own annotations; unknown means
// mutating.
import type { HostConfig } from "../config/config";
import { HUMAN_ASK_TOOL, type ApprovalLevel } from "./tool-calls";

export interface ToolAnnotations {
  description?: string;
  readOnlyHint?: boolean;
}

export interface ToolClass {
  kind: "mcp" | "human_ask";
  mutating: boolean;
  level: ApprovalLevel | null;
  description: string;
}

const MCP_TOOL_NAME = /^mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__(.+)$/;

/** Splits `mcp__<server>__<tool>`; undefined for anything else. */
export function parseMcpToolName(name: string): { server: string; tool: string } | undefined {
  const match = MCP_TOOL_NAME.exec(name);
  return match ? { server: match[1]!, tool: match[2]! } : undefined;
}

export function isKnownToolNameShape(name: string): boolean {
  return name === HUMAN_ASK_TOOL || parseMcpToolName(name) !== undefined;
}

export function classifyTool(name: string, annotations: ToolAnnotations | undefined, config: Pick<HostConfig, "TOOL_POLICY">): ToolClass {
  if (name === HUMAN_ASK_TOOL) {
    return { kind: "human_ask", mutating: false, level: null, description: "Ask a person a question and wait for the answer." };
  }
  const policy = config.TOOL_POLICY[name];
  const readOnly = policy?.read_only ?? annotations?.readOnlyHint === true;
  const level = policy?.level !== undefined ? policy.level : readOnly ? null : "approve";
  return { kind: "mcp", mutating: !readOnly, level, description: annotations?.description?.trim() || `Call ${name}.` };
}
