// Sends one admitted call to its MCP server (contract section 7): the server
// from the host config, the exact arguments that were approved (their digest
// is checked again), and the transport's outcome, `sent` included, as the
// call state machine reads it. Connect before checkpoint: `openMcpCall`
// opens the session (connection and initialize handshake) and hands back a
// `send` for the one tools/call, so the dispatch pipeline can write its
// checkpoint in between; a call whose session could not be opened provably
// reached nothing. The same `send` makes the follow-ups after an
// input_required answer (contract section 21). A 2026-07-28 server not yet
// listed in this isolate is listed on that session first, before the
// checkpoint, so the call carries its `Mcp-Param-*` headers.
// Tool identity (contract section 23): a mutation's session lists its server
// too, while it opens, unless this isolate's latest complete listing was
// taken after the approval and is at most MCP_TOOL_LIST_MAX_AGE_MS old (0:
// every call lists for itself); `identify` gives the pipeline the tool's
// digest in a listing that is still that fresh, listing again if it no longer
// is.
import type { HostConfig } from "../config/config";
import { argumentsDigest } from "./arguments-digest";
import type { McpContactSink } from "./mcp-contacts";
import type { CallSession } from "./dispatch-pipeline";
import { shapeAnswer } from "./mcp-result";
import { listBeforeCall, listingSince, listOnSession, type TimedListing } from "./mcp-tool-list";
import { toolDigest } from "./tool-identity";
import { openMcpSession, type TransportCaps } from "./mcp-transport";
import { HEADERS_ONLY, isAuthRefusal, type McpAuthorization } from "../mcp-oauth/server-access";
import type { Dispatched } from "./tool-calls";
import { parseMcpToolName } from "./tool-policy";

export function transportCaps(config: HostConfig): TransportCaps {
  return {
    connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
    callTimeoutMs: config.MCP_CALL_TIMEOUT_MS,
    maxResponseBytes: config.MCP_MAX_RESPONSE_BYTES,
  };
}

/**
 * Opens the call's MCP session; `unreachable` (nothing sent) when there is no server, the arguments changed, or connect/initialize failed. Never throws.
 * `traceparent` (tracing on, contract section 22): sent as the W3C header on every request of the session and in the tools/call's `params._meta`.
 * `contacts`: told how the connect and the call went (GET /api/mcp/servers).
 * `authorization` (contract section 21): an OAuth server's token, got (and refreshed) before the checkpoint; missing,
 * lapsed or refused (401/403, then never re-sent) is `authorization_required` with nothing run.
 */
export async function openMcpCall(
  config: HostConfig,
  call: Dispatched,
  traceparent?: string,
  contacts: McpContactSink = () => {},
  authorization: McpAuthorization = HEADERS_ONLY,
): Promise<CallSession> {
  const target = parseMcpToolName(call.tool_name);
  const server = target ? config.MCP_SERVERS[target.server] : undefined;
  if (!target || !server) return { kind: "unreachable", message: `No MCP server is configured for ${call.tool_name}.` };
  // The approval was for these exact arguments; refuse anything else.
  if ((await argumentsDigest(call.arguments)) !== call.arguments_digest) {
    return { kind: "unreachable", message: "The arguments changed after approval; the call was not sent." };
  }
  const access = await authorization.access(target.server, server);
  if (access.kind === "authorization_required") {
    contacts(target.server, { kind: "failed" });
    return { kind: "unreachable", message: access.message, reason: "authorization_required" };
  }
  const authorized = access.server;
  const traced = traceparent === undefined ? authorized : { ...authorized, headers: { ...authorized.headers, traceparent } };
  const caps = transportCaps(config);
  const maxAgeMs = config.MCP_TOOL_LIST_MAX_AGE_MS;
  /** The listing this call took on its own session, if it took one. */
  let own: TimedListing | undefined;
  const opened = await openMcpSession(traced, caps, async (session) => {
    // A mutation lists its server now (while its intent is written), unless a fresh enough listing exists (section 23).
    if (call.mutation_id !== null && listingSince(traced.url, call.approved_at, maxAgeMs) === undefined)
      own = await listOnSession(session, traced.url, caps.callTimeoutMs);
    // A 2026-07-28 call from an isolate with no listing of its server lists first, so it carries its Mcp-Param-* headers.
    await listBeforeCall(session, traced.url, caps.callTimeoutMs);
  });
  if (opened.kind === "failed") {
    contacts(target.server, { kind: "failed" });
    if (server.oauth !== undefined && isAuthRefusal(opened.httpStatus)) {
      await authorization.refused(target.server, server, authorized.accessToken);
      return { kind: "unreachable", message: opened.message, reason: "authorization_required" };
    }
    return { kind: "unreachable", message: opened.message };
  }
  const { session } = opened;
  contacts(target.server, { kind: "connected", protocol_version: session.protocolVersion });
  const fresh = (listing: TimedListing | undefined): listing is TimedListing =>
    listing !== undefined && (maxAgeMs === 0 || Date.now() - listing.startedAt <= maxAgeMs);
  return {
    kind: "open",
    identify: async () => {
      try {
        let listing = listingSince(traced.url, call.approved_at, maxAgeMs) ?? (fresh(own) ? own : undefined);
        listing ??= own = await listOnSession(session, traced.url, caps.callTimeoutMs);
        const tool = listing.tools.find((t) => t.name === target.tool);
        // Over the url as configured (contract section 23), whatever headers or token the session carries.
        return { kind: "listed", digest: tool === undefined ? null : await toolDigest(server.url, tool.identity) };
      } catch (error) {
        return { kind: "failed", message: (error as Error).message };
      }
    },
    // A follow-up after input_required (contract section 21) carries the same arguments, the answers and the requestState.
    send: async (followUp) => {
      const answer = await session.call(target.tool, call.arguments, traceparent === undefined ? undefined : { traceparent }, followUp);
      if (answer.kind === "input_required") return answer;
      const outcome = shapeAnswer(answer, caps.maxResponseBytes);
      if (outcome.kind === "failed") {
        contacts(target.server, { kind: "failed" });
        if (server.oauth !== undefined && answer.kind === "failed" && isAuthRefusal(answer.httpStatus)) {
          // The revision forbids a server to process a request with a token it refuses: nothing ran, nothing is re-sent.
          await authorization.refused(target.server, server, authorized.accessToken);
          return { kind: "failed", code: outcome.code, message: outcome.message, sent: false, unsent: "authorization_required" };
        }
        return { kind: "failed", code: outcome.code, message: outcome.message, sent: outcome.sent };
      }
      return {
        kind: "result",
        is_error: outcome.isError,
        content_bytes: outcome.contentBytes,
        summary: outcome.summary,
        model_text: outcome.modelText,
        sent: true,
      };
    },
    close: () => session.close(),
  };
}
