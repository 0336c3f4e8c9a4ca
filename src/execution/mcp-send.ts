// Sends one admitted call to its MCP server (contract section 7): the server
// from the host config, the exact arguments that were approved (their digest
// is checked again), and the transport's outcome, `sent` included, as the
// call state machine reads it.
import type { HostConfig } from "../config/config";
import { argumentsDigest } from "./arguments-digest";
import { callMcpTool, type TransportCaps } from "./mcp-transport";
import type { DispatchOutcome, Dispatched } from "./tool-calls";
import { parseMcpToolName } from "./tool-policy";

export function transportCaps(config: HostConfig): TransportCaps {
  return {
    connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
    callTimeoutMs: config.MCP_CALL_TIMEOUT_MS,
    maxResponseBytes: config.MCP_MAX_RESPONSE_BYTES,
  };
}

export async function sendToMcp(config: HostConfig, call: Dispatched): Promise<DispatchOutcome> {
  const target = parseMcpToolName(call.tool_name);
  const server = target ? config.MCP_SERVERS[target.server] : undefined;
  if (!target || !server) {
    return { kind: "failed", code: "transport_error", message: `No MCP server is configured for ${call.tool_name}.`, sent: false };
  }
  // The approval was for these exact arguments; refuse anything else.
  if ((await argumentsDigest(call.arguments)) !== call.arguments_digest) {
    return {
      kind: "failed",
      code: "transport_error",
      message: "The arguments changed after approval; the call was not sent.",
      sent: false,
    };
  }
  const outcome = await callMcpTool(server, target.tool, call.arguments, transportCaps(config));
  if (outcome.kind === "failed") return { kind: "failed", code: outcome.code, message: outcome.message, sent: outcome.sent };
  return {
    kind: "result",
    is_error: outcome.isError,
    content_bytes: outcome.contentBytes,
    summary: outcome.summary,
    model_text: outcome.modelText,
    sent: true,
  };
}
