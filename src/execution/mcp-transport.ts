/**
 * The engine's MCP client session: connects to a server and sends one tool call, over MCP
 * Streamable HTTP with the official v2 SDK, from inside workerd (the Run Durable Object).
 *
 * Each guarantee sits on one of the SDK's own seams:
 *  - One short-lived SDK client per operation (connect, list or call, close): no state survives
 *    a Durable Object eviction and no session outlives its use.
 *  - The era (contract section 21): the SDK's `server/discover` probe with fallback to
 *    initialize, adopted from mcp-era-cache.ts when known, all during the connect, so before any
 *    checkpoint and never from a tools/call.
 *  - The caps (section 7): the SDK's request timeouts bound each request (progress never extends
 *    them); the connect as a whole, which the SDK bounds only step by step, gets a deadline here;
 *    the fetch middleware (mcp-response-cap.ts) bounds every body.
 *  - Never a second send: SSE resumption off, the GET stream never opened, no input_required
 *    auto-fulfilment, no 401 retry (a bare token provider), and `request`, not `callTool` (whose
 *    header-mismatch path sends the call again). An `input_required` answer is returned as it
 *    came; only the caller sends the follow-up (answers and `requestState`), on the same session
 *    or, for a round kept in the run's storage, on a new one.
 *  - `sent` from the typed `Transport.send` seam: true once the tools/call was handed to it. A
 *    definitive failure seen below the SDK (a body over the cap, the call's stream ending before
 *    its answer, the connect deadline) settles whatever waits and explains what the SDK made of it.
 *  - The server config's headers (credentials) never in a message (mcp-errors.ts bounds the text).
 *
 * Not responsible for: the tool listing (mcp-tool-list.ts), shaping and redacting results
 * (mcp-result.ts), approvals, budgets, checkpoints or durable outcomes (the Run Durable Object).
 */
import {
  Client,
  isInputRequiredResult,
  isJSONRPCRequest,
  isJSONRPCResponse,
  ProtocolError,
  StreamableHTTPClientTransport,
  type CallToolRequestParams,
  type CallToolResult,
  type JSONRPCMessage,
  type PriorDiscovery,
  type RequestId,
  type RequestOptions,
  type TransportSendOptions,
} from "@modelcontextprotocol/client";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/client/validators/cf-worker";
import { cachedEra, forgetEra, rememberEra } from "./mcp-era-cache";
import { classifySdkError, type McpFailureCode, McpTransportError, toTransportError, withStatus } from "./mcp-errors";
import { paramHeaders } from "./mcp-param-headers";
import { responseCap } from "./mcp-response-cap";

export interface McpServerConfig {
  url: string;
  /** Sent on every request to the server (typically its auth). Never logged, never in a message. */
  headers?: Record<string, string>;
  /**
   * An OAuth access token (contract section 21), given to the SDK as a bare `authProvider` with no
   * `onUnauthorized`: a 401 or 403 is thrown, never answered by a refresh and a second send.
   */
  accessToken?: string;
}

export interface TransportCaps {
  /** Bound on the connect (era probe and, for the earlier revisions, the handshake), in milliseconds. */
  connectTimeoutMs: number;
  /** Bound on one tools/call (and on a whole tools/list, all pages), in milliseconds. */
  callTimeoutMs: number;
  /** Bound on each HTTP response body from the server, in bytes. */
  maxResponseBytes: number;
}

/** A tools/call's answer as the server gave it; execution shapes it (mcp-result.ts). */
export type McpCallAnswer =
  | { kind: "result"; result: CallToolResult }
  /**
   * The server needs input before it completes (2026-07-28 multi round-trip, contract section
   * 21): the call reached it and is not complete. `inputRequests` as the server sent them (not
   * validated: execution decides which it can ask), `requestState` verbatim.
   */
  | { kind: "input_required"; inputRequests: Record<string, unknown>; requestState?: string }
  /** The server answered the call with a JSON-RPC error: it reached the server, which said no. */
  | { kind: "rpc_error"; code: number; message: string }
  /** `sent`: whether the tools/call was handed to the transport, i.e. may have reached the server (false only when it certainly did not). */
  | { kind: "failed"; code: McpFailureCode; message: string; sent: boolean; httpStatus?: number };

/** What a follow-up tools/call carries after `input_required` (contract section 21): the answers, and the server's state verbatim. */
export interface McpFollowUp {
  inputResponses: Record<string, unknown>;
  requestState?: string;
}

/** What a tool listing uses of a connected session. */
export type McpListingSession = Pick<McpSession, "protocolVersion" | "stateless" | "listTools" | "close">;

/** The session, or why it could not be opened: then the server provably received no tools/call. */
export type McpOpenResult =
  | { kind: "open"; session: McpListingSession & Pick<McpSession, "call"> }
  | { kind: "failed"; code: McpFailureCode; message: string; httpStatus?: number };

/** Bound on the DELETE that frees the server's session: cleanup must never hold up the run. */
const TERMINATE_SESSION_TIMEOUT_MS = 2_000;
const CLIENT_INFO = { name: "approved-execution-engine", version: "0.1.0" };
/** The revisions spoken (contract section 21): the stateless one first, then the two with initialize and sessions. */
const SUPPORTED_PROTOCOL_VERSIONS = ["2026-07-28", "2025-11-25", "2025-06-18"];

/**
 * Opens a session for one tools/call (connect before checkpoint, contract section 7): the era is
 * known and, for the earlier revisions, the handshake done; nothing has been called yet. The
 * caller writes its checkpoint, then calls `call`, and closes the session on every path.
 * `prepare` runs on the connected session first (the call's tool listing, when its headers need
 * one). Never throws: a server that cannot be reached, refuses, answers unusably or fails the
 * handshake or `prepare` (or a URL that does not parse) answers `failed`, the session closed.
 */
export async function openMcpSession(
  server: McpServerConfig,
  caps: TransportCaps,
  prepare: (session: McpListingSession) => Promise<void> = async () => {},
): Promise<McpOpenResult> {
  let session: McpSession | undefined;
  try {
    session = await connectMcp(server, caps);
    await prepare(session);
    return { kind: "open", session };
  } catch (error) {
    await session?.close();
    forgetEra(server.url);
    const failure = toTransportError(error);
    return { kind: "failed", code: failure.code, message: failure.message, ...withStatus(failure) };
  }
}

/**
 * A connected session within `connectTimeoutMs`: with the era cached, the SDK adopts it (for a
 * stateless server, no request at all); else it probes. A cached era that fails is forgotten and
 * probed once more within the same bound: nothing of a tools/call has been sent yet. Throws with
 * every session it opened closed.
 */
export async function connectMcp(server: McpServerConfig, caps: TransportCaps): Promise<McpSession> {
  const deadline = Date.now() + caps.connectTimeoutMs;
  for (let prior = cachedEra(server.url); ; prior = undefined) {
    const session = new McpSession(server, caps);
    try {
      await session.connect(Math.max(1, deadline - Date.now()), prior);
      rememberEra(server.url, session.learnedEra());
      return session;
    } catch (error) {
      await session.close();
      if (prior === undefined) throw error;
      forgetEra(server.url);
    }
  }
}

/** What the transport saw of one tools/call send: handed over (so it may have reached the server), its id, and whether its response arrived. */
interface ToolCallTrace {
  sent: boolean;
  id?: RequestId;
  answered: boolean;
}

/**
 * The SDK's Streamable HTTP transport, told at its typed `send` seam when the tools/call goes out
 * (the message as the SDK built it: nothing re-parses a body), and told by the SDK's own
 * `onRequestStreamEnd` when that call's SSE response ends: resumption is off, so an answer not
 * delivered by then never comes (the SDK delivers messages before it reports the end).
 */
class ToolCallTransport extends StreamableHTTPClientTransport {
  toolCall: ToolCallTrace = { sent: false, answered: false };
  onToolCallCut: () => void = () => {};

  override send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (!isJSONRPCRequest(message) || message.method !== "tools/call") return super.send(message, options);
    const trace = Object.assign(this.toolCall, { sent: true, id: message.id });
    return super.send(message, { ...options, onRequestStreamEnd: () => void (trace.answered || this.onToolCallCut()) });
  }
}

/** One SDK Client over one transport whose fetch is capped; the first definitive failure below the SDK settles what waits. */
class McpSession {
  private readonly client: Client;
  private readonly transport: ToolCallTransport;
  /** "none": nothing called yet; "input_required": the last answer asked for input, so only a follow-up may go; "done": no more. */
  private stage: "none" | "input_required" | "done" = "none";
  private failed: McpTransportError | undefined;
  private signalFailure!: (error: McpTransportError) => void;
  /** Rejects with the first definitive failure; raced against the SDK's promises (handled, so never unhandled). */
  private readonly failure = new Promise<never>((_, reject) => (this.signalFailure = reject));
  private closed = false;

  constructor(
    private readonly server: McpServerConfig,
    private readonly caps: TransportCaps,
  ) {
    this.failure.catch(() => {});
    const { maxResponseBytes } = caps;
    const capped = responseCap(maxResponseBytes, () =>
      this.fail(new McpTransportError("response_too_large", `response body exceeds the ${maxResponseBytes}-byte cap`)),
    );
    this.transport = new ToolCallTransport(new URL(server.url), {
      requestInit: { headers: { ...server.headers } },
      fetch: capped((url, init) => fetch(url, init)),
      // No SSE resumption: a resumed stream could replay a response into a client that gave up, after the caps expired.
      reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 0, maxReconnectionDelay: 0, reconnectionDelayGrowFactor: 1 },
      ...(server.accessToken !== undefined ? { authProvider: { token: async () => server.accessToken } } : {}),
    });
    // After close() began the SDK reports no end (our own abort), so any end seen here is the server's or the network's.
    this.transport.onToolCallCut = () =>
      void this.fail(new McpTransportError("transport_error", "tools/call response stream ended before the result"));
    // Set before connect, so the Protocol chains it: it sees each message before the SDK resolves the request.
    this.transport.onmessage = (message) => {
      const trace = this.transport.toolCall;
      if (isJSONRPCResponse(message) && trace.id !== undefined && message.id === trace.id) trace.answered = true;
    };
    this.client = new Client(CLIENT_INFO, {
      // Form-mode elicitation only (contract section 21), answered by a person through the engine; no URL mode, sampling or roots.
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: "auto" },
      supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
      inputRequired: { autoFulfill: false },
      // The default (ajv) compiles schemas with `new Function`, which workerd forbids; listTools compiles every outputSchema.
      jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
    });
    // Aborts and broken streams also reach the promise that decides the outcome; logging them here would only be noise.
    this.client.onerror = () => {};
  }

  /** Connects within `timeoutMs`: adopting `prior` when given, else probing the era. */
  async connect(timeoutMs: number, prior: PriorDiscovery | undefined): Promise<void> {
    const bound = `connect timed out after ${this.caps.connectTimeoutMs} ms`;
    // The SDK bounds the probe and the initialize request each, not the connect (nor the initialized notification).
    const timer = setTimeout(() => this.fail(new McpTransportError("transport_timeout", bound)), timeoutMs);
    try {
      const options = { ...requestOptions(timeoutMs), ...(prior !== undefined ? { prior } : {}) };
      await this.settled(this.client.connect(this.transport, options), "connect", this.caps.connectTimeoutMs);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The revision the session speaks: `2026-07-28` (stateless), else the one `initialize` agreed. */
  get protocolVersion(): string {
    return this.client.getNegotiatedProtocolVersion() ?? "unknown";
  }

  /** Whether the session speaks the 2026-07-28 revision (no initialize, no session; Mcp-Param-* headers). */
  get stateless(): boolean {
    return this.client.getProtocolEra() === "modern";
  }

  /** What to cache of this connected session's era. */
  learnedEra(): PriorDiscovery {
    const discover = this.client.getDiscoverResult();
    return this.stateless && discover !== undefined ? { kind: "modern", discover } : { kind: "legacy" };
  }

  /** One page of the server's tools, within `timeoutMs`. Throws McpTransportError. */
  listTools(cursor: string | undefined, timeoutMs: number) {
    const listed = this.client.listTools(cursor === undefined ? undefined : { cursor }, requestOptions(timeoutMs));
    return this.settled(listed, "tools/list", timeoutMs);
  }

  /**
   * Calls one tool exactly once; never throws, never retries. A second call is refused unsent,
   * except a follow-up after an `input_required` answer, which must carry `followUp`; a new
   * session's first call may be a follow-up too (a round kept in the run's storage, contract
   * section 21: the 2026-07-28 revision keeps no state between requests). `meta`:
   * the request's `params._meta`. Sent with `request`, not `callTool`, whose output-schema check
   * could also turn the tool's actual answer into an error.
   */
  async call(
    toolName: string,
    args: Record<string, unknown>,
    meta?: Record<string, string>,
    followUp?: McpFollowUp,
  ): Promise<McpCallAnswer> {
    if (this.stage === "done" || (this.stage === "input_required" && followUp === undefined))
      return { kind: "failed", code: "transport_error", message: "this session already made its one tools/call", sent: false };
    const answer = await this.send(toolName, args, {
      name: toolName,
      arguments: args,
      ...(meta !== undefined ? { _meta: meta } : {}),
      // The follow-up after input_required (contract section 21): the answers, and requestState byte for byte.
      ...(followUp !== undefined && Object.keys(followUp.inputResponses).length > 0 ? { inputResponses: followUp.inputResponses } : {}),
      ...(followUp?.requestState !== undefined ? { requestState: followUp.requestState } : {}),
    });
    this.stage = answer.kind === "input_required" ? "input_required" : "done";
    // Never a re-send: only the next contact's connect probes the era again.
    if (answer.kind === "failed") forgetEra(this.server.url);
    return answer;
  }

  private async send(toolName: string, args: Record<string, unknown>, params: CallToolRequestParams): Promise<McpCallAnswer> {
    // Each send has its own trace: `sent`, `answered` and the id are about this request only.
    const trace: ToolCallTrace = { sent: false, answered: false };
    this.transport.toolCall = trace;
    try {
      // The revision's Mcp-Param-* headers (the SDK adds Mcp-Method and Mcp-Name); none for the earlier revisions.
      const headers = this.stateless ? paramHeaders(this.server.url, toolName, args) : {};
      const options = { ...requestOptions(this.caps.callTimeoutMs), allowInputRequired: true as const, headers };
      const result = await Promise.race([this.client.request({ method: "tools/call", params }, options), this.failure]);
      if (!isInputRequiredResult(result)) return { kind: "result", result: result as CallToolResult };
      const { inputRequests = {}, requestState } = result;
      return { kind: "input_required", inputRequests, ...(requestState !== undefined ? { requestState } : {}) };
    } catch (error) {
      // The server answered with a JSON-RPC error (a request's only source of a ProtocolError): it reached the server, which said no.
      if (error instanceof ProtocolError && trace.answered && !this.failed)
        return { kind: "rpc_error", code: error.code, message: error.message };
      const failure = this.failed ?? classifySdkError(error, "tools/call", this.caps.callTimeoutMs);
      return { kind: "failed", code: failure.code, message: failure.message, sent: trace.sent, ...withStatus(failure) };
    }
  }

  /** Waits for the SDK's `operation`, or the first definitive failure: one seen below the SDK explains whatever the SDK made of it, so it wins. */
  private async settled<T>(operation: Promise<T>, what: string, timeoutMs: number): Promise<T> {
    try {
      return await Promise.race([operation, this.failure]);
    } catch (error) {
      throw this.failed ?? classifySdkError(error, what, timeoutMs);
    }
  }

  /** Frees the server's session (bounded, errors ignored), then closes the client. Once: a second close does nothing. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.transport.sessionId !== undefined) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, TERMINATE_SESSION_TIMEOUT_MS)));
      await Promise.race([this.transport.terminateSession().catch(() => {}), bound]);
      clearTimeout(timer);
    }
    // Aborts whatever is still in flight (a timed-out call, an unfinished DELETE), reported through the quiet onerror.
    await this.client.close().catch(() => {});
  }

  private fail(error: McpTransportError): McpTransportError {
    if (this.failed) return this.failed;
    this.failed = error;
    this.signalFailure(error);
    return error;
  }
}

/** SDK request options: the cap as both the idle and the total timeout, never reset by progress. */
function requestOptions(timeoutMs: number): RequestOptions {
  return { timeout: timeoutMs, maxTotalTimeout: timeoutMs, resetTimeoutOnProgress: false };
}
