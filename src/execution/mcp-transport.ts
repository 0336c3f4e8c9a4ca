/**
 * The engine's MCP client: lists a server's tools and dispatches one tool call, over MCP
 * Streamable HTTP with the official v2 SDK, from inside workerd (the Run Durable Object).
 *
 * Responsibilities:
 *  - One short-lived SDK client per operation (connect, list or call, close), so no state has to
 *    survive a Durable Object eviction and no session outlives its use.
 *  - Speak MCP 2026-07-28 (stateless) where the server does and the earlier revisions
 *    (initialize and sessions) where it does not (contract section 21): the era is the SDK's
 *    `server/discover` probe, cached per server (mcp-era-cache.ts), learned during the connect,
 *    so before any checkpoint and never from a tools/call.
 *  - Enforce the transport caps of the contract (section 7): the connect (probe, handshake) is
 *    bounded by `connectTimeoutMs`, the tools/call by `callTimeoutMs` (nothing such as progress
 *    notifications extends it), and every response body by `maxResponseBytes`.
 *  - Never retry a tools/call: not here, and not inside the SDK (SSE resumption off, the
 *    standalone GET stream never opened, no input_required auto-fulfilment, and no `callTool`,
 *    whose header-mismatch path sends the call again). An `input_required` answer is handed
 *    back as it came; only the caller sends the follow-up, with the person's answers and the
 *    server's `requestState` (contract section 21), on the same session.
 *  - Turn every ending of a call into an `McpCallAnswer`, deciding `sent` from what actually
 *    reached the transport's `send`: the engine marks an outcome `outcome_unknown` from it, so a
 *    call that provably never left must say so, and one that may have left must never claim
 *    otherwise. Keep the server config's headers (credentials) out of every message.
 *
 * Not responsible for: shaping and redacting results (mcp-result.ts), approvals, budgets,
 * write-ahead checkpoints or durable outcomes (the Run Durable Object decides those from the
 * answer returned here), nor for reading host config.
 */
import {
  Client,
  InsufficientScopeError,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type CallToolResult,
  type JSONRPCMessage,
  type PriorDiscovery,
  type RequestOptions,
  type StreamableHTTPReconnectionOptions,
  type Tool,
} from "@modelcontextprotocol/client";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/client/validators/cf-worker";
import { cachedEra, forgetEra, rememberEra } from "./mcp-era-cache";
import { paramHeaders, rememberParamHeaders } from "./mcp-param-headers";
import { truncateUtf8 } from "./mcp-result";
import { redactText } from "./redaction";

// ---------------------------------------------------------------------------------------------
// Public interface

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
  /** Bound on the initialize handshake (connect), in milliseconds. */
  connectTimeoutMs: number;
  /** Bound on one tools/call (and on a whole tools/list, all pages), in milliseconds. */
  callTimeoutMs: number;
  /** Bound on each HTTP response body from the server, in bytes. */
  maxResponseBytes: number;
}

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

export type McpFailureCode = "transport_timeout" | "transport_error" | "response_too_large";

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
  | {
      kind: "failed";
      code: McpFailureCode;
      message: string;
      /**
       * Whether the tools/call request was handed to the transport, i.e. whether it may have
       * reached the server. false only when it certainly did not.
       */
      sent: boolean;
      /** The HTTP status the server refused the request with (401/403: its token was refused). */
      httpStatus?: number;
    };

export class McpTransportError extends Error {
  override readonly name = "McpTransportError";
  constructor(
    readonly code: McpFailureCode,
    message: string,
    /** The HTTP status the server refused with, when it did (401/403: GET /api/health says authorization_required). */
    readonly httpStatus?: number,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------
// Constants

/** Bound on the DELETE that frees the server's session: cleanup must never hold up the run. */
const TERMINATE_SESSION_TIMEOUT_MS = 2_000;
/**
 * After the tools/call response stream ends or breaks, how long the SDK gets to deliver a result
 * it had already read before the call is declared failed. Delivery takes only microtasks (the
 * parse pipeline has no timers), so this is generous; it only shortens the wait for a dropped
 * stream, which would otherwise sit out the whole call timeout.
 */
const STREAM_END_SETTLE_MS = 250;
/** Guard against a server whose pagination cursor never ends. */
const MAX_TOOL_LIST_PAGES = 100;
/** Bound on error text (server-provided text can be arbitrarily long). */
const MESSAGE_MAX_BYTES = 512;

const CLIENT_INFO = { name: "approved-execution-engine", version: "0.1.0" };
/** The revisions spoken (contract section 21): the stateless one first, then the two with initialize and sessions. */
const SUPPORTED_PROTOCOL_VERSIONS = ["2026-07-28", "2025-11-25", "2025-06-18"] as const;

/**
 * No SSE resumption. The SDK only ever resumes with a GET carrying Last-Event-ID (it never
 * re-POSTs a request), and only when the server sent event ids; but a resumed stream could
 * still replay a response into a client that already gave up, and each attempt is another
 * connection after the caps expired. With maxRetries 0 a broken stream is simply broken.
 */
const NO_RECONNECTION: StreamableHTTPReconnectionOptions = {
  maxRetries: 0,
  initialReconnectionDelay: 0,
  maxReconnectionDelay: 0,
  reconnectionDelayGrowFactor: 1,
};

// ---------------------------------------------------------------------------------------------
// Entry points

/** A server's tools (all pages) and the protocol version spoken to list them. */
export interface McpToolListing {
  tools: McpToolInfo[];
  protocolVersion: string;
}

/** Lists a server's tools (all pages). Throws McpTransportError on failure. */
export async function listMcpTools(server: McpServerConfig, caps: TransportCaps): Promise<McpToolListing> {
  let session: McpSession | undefined;
  try {
    session = await connectSession(server, caps);
    // One bound for the whole listing: pagination must not multiply the caller's wait.
    const deadline = Date.now() + caps.callTimeoutMs;
    const tools: McpToolInfo[] = [];
    const seenCursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; ; page += 1) {
      if (page === MAX_TOOL_LIST_PAGES) {
        throw new McpTransportError("transport_error", `tools/list returned more than ${MAX_TOOL_LIST_PAGES} pages`);
      }
      const remainingMs = Math.max(1, deadline - Date.now());
      const result = await session.bounded(
        session.client.listTools(cursor === undefined ? undefined : { cursor }, requestOptions(remainingMs)),
        remainingMs,
        "tools/list",
      );
      tools.push(...result.tools.map(toToolInfo));
      cursor = result.nextCursor;
      if (cursor === undefined) {
        rememberParamHeaders(server.url, tools);
        return { tools, protocolVersion: session.protocolVersion };
      }
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

/**
 * A session opened for one tools/call (connect before checkpoint, contract section 7): the
 * connection and the initialize handshake are done, nothing has been called yet. The caller
 * writes its checkpoint, then calls `call` at most once, and closes the session on every path.
 */
interface McpCallSession {
  /** The revision the session speaks: `2026-07-28` (stateless), else the one `initialize` agreed. */
  readonly protocolVersion: string;
  /**
   * Calls one tool exactly once. Never throws; never retries. A second call is refused unsent,
   * except a follow-up after an `input_required` answer, which must carry `followUp`.
   * `meta`: the request's `params._meta`.
   */
  call(toolName: string, args: Record<string, unknown>, meta?: Record<string, string>, followUp?: McpFollowUp): Promise<McpCallAnswer>;
  /** Frees the server's session (bounded) and closes the client. Idempotent, never throws. */
  close(): Promise<void>;
}

/** What a follow-up tools/call carries after `input_required` (contract section 21): the answers, and the server's state verbatim. */
export interface McpFollowUp {
  inputResponses: Record<string, unknown>;
  requestState?: string;
}

/** The session, or why it could not be opened: then the server provably received no tools/call. */
export type McpOpenResult =
  | { kind: "open"; session: McpCallSession }
  | { kind: "failed"; code: McpFailureCode; message: string; httpStatus?: number };

/**
 * Learns the server's era (a cached one, else the `server/discover` probe) and, for the earlier
 * revisions, completes the initialize handshake, bounded by `connectTimeoutMs`. Never throws: a
 * server that cannot be reached, refuses the connection, answers the probe unusably or fails the
 * handshake (or a URL that does not parse) answers `failed`, with the session already closed.
 */
export async function openMcpSession(server: McpServerConfig, caps: TransportCaps): Promise<McpOpenResult> {
  let open: McpSession;
  try {
    open = await connectSession(server, caps);
  } catch (error) {
    forgetEra(server.url);
    const failure = toTransportError(error);
    return { kind: "failed", code: failure.code, message: failure.message, ...withStatus(failure) };
  }
  // "none": nothing called yet; "input_required": the last answer asked for input, so one follow-up may go; "done": no more.
  let stage: "none" | "input_required" | "done" = "none";
  return {
    kind: "open",
    session: {
      protocolVersion: open.protocolVersion,
      call: async (toolName, args, meta, followUp) => {
        if (stage === "done" || (stage === "none") !== (followUp === undefined))
          return { kind: "failed", code: "transport_error", message: "this session already made its one tools/call", sent: false };
        stage = "done";
        const outcome = await open.callTool(toolName, args, meta, followUp);
        if (outcome.kind === "input_required") stage = "input_required";
        // Never a re-send: only the next contact's connect probes the era again.
        if (outcome.kind === "failed") forgetEra(server.url);
        return outcome;
      },
      close: () => open.close(),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// One client session

/**
 * The SDK's Streamable HTTP transport, told at its typed `send` seam when the tools/call goes
 * out: the JSON-RPC message as the SDK built it, so nothing has to re-parse a request body.
 */
class ToolCallTracingTransport extends StreamableHTTPClientTransport {
  constructor(
    url: URL,
    /** The current tools/call's trace (a follow-up after input_required gets a fresh one). */
    private readonly trace: () => ToolCallTrace,
    options: ConstructorParameters<typeof StreamableHTTPClientTransport>[1],
  ) {
    super(url, options);
  }

  override send(message: JSONRPCMessage, options?: Parameters<StreamableHTTPClientTransport["send"]>[1]): Promise<void> {
    if (isJSONRPCRequest(message) && message.method === "tools/call") {
      const trace = this.trace();
      trace.id = message.id;
      trace.sent = true;
    }
    return super.send(message, options);
  }
}

/**
 * A connected session: with the era cached, the SDK adopts it (no probe; for a stateless server no
 * request at all); else it probes with `server/discover` and falls back to initialize. A cached
 * era that fails (a server that dropped its older revision) is forgotten and probed once more,
 * within the same connect bound: nothing of a tools/call has been sent yet. Throws on failure,
 * with every session it opened closed.
 */
async function connectSession(server: McpServerConfig, caps: TransportCaps): Promise<McpSession> {
  const deadline = Date.now() + caps.connectTimeoutMs;
  const prior = cachedEra(server.url);
  const first = new McpSession(server, caps);
  try {
    await first.connect(caps.connectTimeoutMs, prior);
    rememberEra(server.url, first.learnedEra());
    return first;
  } catch (error) {
    await first.close();
    if (prior === undefined) throw error;
    forgetEra(server.url);
  }
  const remainingMs = deadline - Date.now();
  if (remainingMs <= 0) throw new McpTransportError("transport_timeout", `connect timed out after ${caps.connectTimeoutMs} ms`);
  const second = new McpSession(server, caps);
  try {
    await second.connect(remainingMs, undefined);
    rememberEra(server.url, second.learnedEra());
    return second;
  } catch (error) {
    await second.close();
    throw error;
  }
}

/** What the fetch layer and the message hook learned about the tools/call request. */
interface ToolCallTrace {
  /** The tools/call was handed to the transport: from here on it may have reached the server. */
  sent: boolean;
  /** Its POST went to fetch (the next POST after `sent`): that response is the one watched. */
  fetched: boolean;
  /** Its JSON-RPC id, as the transport was given it, to recognise its answer. */
  id?: string | number;
  /** A response (result or error) for it arrived. */
  answered: boolean;
  /** The server answered it with a JSON-RPC error. */
  rpcError?: { code: number; message: string };
}

/**
 * One SDK Client over one Streamable HTTP transport whose fetch is instrumented: it records when
 * the tools/call leaves, caps every response body, answers the standalone GET stream with 405,
 * and turns a too-large or dropped tools/call response into a failure signal that `bounded`
 * races against the SDK's own promise.
 */
class McpSession {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  /** The trace of the tools/call in flight (or last sent); replaced for each follow-up. */
  toolCall: ToolCallTrace = { sent: false, fetched: false, answered: false };
  /** Whether any JSON-RPC error response arrived: then an error may be the server's, not the SDK's. */
  private rpcErrorSeen = false;
  /** Set by the first definitive failure the fetch layer sees; never rejects (so never unhandled). */
  private readonly failure: Promise<McpTransportError>;
  private signalFailure!: (error: McpTransportError) => void;
  private failed: McpTransportError | undefined;
  private closed = false;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    private readonly server: McpServerConfig,
    private readonly caps: TransportCaps,
  ) {
    this.failure = new Promise((resolve) => (this.signalFailure = resolve));
    this.transport = new ToolCallTracingTransport(new URL(server.url), () => this.toolCall, {
      requestInit: { headers: { ...server.headers } },
      fetch: (url, init) => this.fetch(url, init),
      reconnectionOptions: NO_RECONNECTION,
      ...(server.accessToken !== undefined ? { authProvider: { token: async () => server.accessToken } } : {}),
    });
    // The Protocol chains a handler that is set before connect(), so this sees every message
    // before the SDK resolves the matching request.
    this.transport.onmessage = (message) => this.observe(message);
    this.client = new Client(CLIENT_INFO, {
      // Form-mode elicitation only (contract section 21), answered by a person through the engine
      // (input_required); no URL mode, sampling or roots.
      capabilities: { elicitation: { form: {} } },
      // 2026-07-28 first (server/discover), falling back to initialize for the earlier revisions.
      versionNegotiation: { mode: "auto" },
      supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
      // The SDK must never answer an input_required by sending the tools/call again on its own.
      inputRequired: { autoFulfill: false },
      // The default (ajv) compiles schemas with `new Function`, which workerd forbids; listTools
      // compiles every tool's outputSchema.
      jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
    });
    // Aborted requests and broken streams are reported here as well as through the promise
    // that is waiting for them (the one that decides the outcome). Without a handler the SDK
    // drops them silently; with one that logs, every close after a timeout would be noise.
    this.client.onerror = () => {};
  }

  /** Connects within `timeoutMs`: adopting `prior` when given, else probing the era. */
  async connect(timeoutMs: number, prior: PriorDiscovery | undefined): Promise<void> {
    const options = { ...requestOptions(timeoutMs), ...(prior !== undefined ? { prior } : {}) };
    await this.bounded(this.client.connect(this.transport, options), timeoutMs, "connect");
  }

  /** The revision this connected session speaks. */
  get protocolVersion(): string {
    return this.client.getNegotiatedProtocolVersion() ?? "unknown";
  }

  /** What to cache of this connected session's era. */
  learnedEra(): PriorDiscovery {
    const discover = this.client.getDiscoverResult();
    return this.client.getProtocolEra() === "modern" && discover !== undefined ? { kind: "modern", discover } : { kind: "legacy" };
  }

  /**
   * The one tools/call of this session, as an outcome. Never throws. Sent with `request`, not the
   * SDK's `callTool`: on a header-mismatch answer that one lists the tools and sends the call a
   * second time, which the contract forbids (section 7); nor may its output-schema check turn a
   * tool's actual answer into an error after the call took effect.
   */
  async callTool(
    toolName: string,
    args: Record<string, unknown>,
    meta?: Record<string, string>,
    followUp?: McpFollowUp,
  ): Promise<McpCallAnswer> {
    const { callTimeoutMs } = this.caps;
    // Each send has its own trace: `sent`, `answered` and the id are about this request only.
    if (followUp !== undefined) this.toolCall = { sent: false, fetched: false, answered: false };
    try {
      let result: unknown;
      try {
        const params = {
          name: toolName,
          arguments: args,
          ...(meta !== undefined ? { _meta: meta } : {}),
          // The follow-up after input_required (contract section 21): the answers, and requestState byte for byte.
          ...(followUp !== undefined && Object.keys(followUp.inputResponses).length > 0 ? { inputResponses: followUp.inputResponses } : {}),
          ...(followUp?.requestState !== undefined ? { requestState: followUp.requestState } : {}),
        };
        // The revision's Mcp-Param-* headers (the SDK adds Mcp-Method and Mcp-Name itself); none for the earlier revisions.
        const headers = this.client.getProtocolEra() === "modern" ? paramHeaders(this.server.url, toolName, args) : {};
        // allowInputRequired: an input_required answer comes back as a value, never re-sent by the SDK.
        result = await this.bounded(
          this.client.request({ method: "tools/call", params }, { ...requestOptions(callTimeoutMs), allowInputRequired: true, headers }),
          callTimeoutMs,
          "tools/call",
        );
      } catch (error) {
        return this.callFailureOutcome(error);
      }
      const resultType = (result as { resultType?: unknown }).resultType;
      if (resultType === "input_required") {
        const { inputRequests, requestState } = result as { inputRequests?: unknown; requestState?: unknown };
        return {
          kind: "input_required",
          inputRequests: typeof inputRequests === "object" && inputRequests !== null ? (inputRequests as Record<string, unknown>) : {},
          ...(typeof requestState === "string" ? { requestState } : {}),
        };
      }
      if (resultType !== undefined && resultType !== "complete") {
        // The call reached the server and is not complete: what it did is unknown (outcome_unknown).
        const kind = typeof resultType === "string" ? truncateUtf8(resultType, 64) : typeof resultType;
        return {
          kind: "failed",
          code: "transport_error",
          message: `tools/call answered with resultType ${kind}, which this engine does not continue`,
          sent: true,
        };
      }
      return { kind: "result", result: result as CallToolResult };
    } catch (error) {
      // Defensive: nothing above should throw, but a caller relies on "never throws".
      return { kind: "failed", code: "transport_error", message: errorText(error), sent: this.toolCall.sent };
    }
  }

  /**
   * Waits for `operation`, at most `timeoutMs`, and no longer once the fetch layer signalled a
   * failure. The SDK applies its own request timeout too; this is the hard bound on total time,
   * whatever the SDK does (a send that never settles, a timer that got reset).
   */
  async bounded<T>(operation: Promise<T>, timeoutMs: number, what: string): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new McpTransportError("transport_timeout", `${what} timed out after ${timeoutMs} ms`)), timeoutMs);
    });
    const failure = this.failure.then((error): never => {
      throw error;
    });
    try {
      // Promise.race subscribes to every contender, so the losers' later rejections are handled.
      return await Promise.race([operation, deadline, failure]);
    } catch (error) {
      throw this.classify(error, what, timeoutMs);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  /**
   * What a failed operation amounts to. A failure the fetch layer saw (too large, stream broken)
   * explains whatever the SDK made of it, so it wins. The SDK's own request timeout is an
   * SdkError(RequestTimeout); it only counts as a timeout while no JSON-RPC error response arrived.
   */
  private classify(error: unknown, what: string, timeoutMs: number): McpTransportError {
    if (this.failed) return this.failed;
    if (error instanceof McpTransportError) return error;
    if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout && !this.rpcErrorSeen) {
      return new McpTransportError("transport_timeout", `${what} timed out after ${timeoutMs} ms`);
    }
    return new McpTransportError("transport_error", `${what} failed: ${errorText(error)}`, httpStatusOf(error));
  }

  /** The outcome of a tools/call that did not resolve with a result. */
  callFailureOutcome(error: unknown): McpCallAnswer {
    const { rpcError, sent } = this.toolCall;
    // The server answered: the call reached it and it said no (execution redacts the text).
    if (rpcError && !this.failed) return { kind: "rpc_error", code: rpcError.code, message: rpcError.message };
    const failure = toTransportError(error);
    return { kind: "failed", code: failure.code, message: failure.message, sent, ...withStatus(failure) };
  }

  /** Frees the server's session (bounded, errors ignored), then closes the client. Once: a second close does nothing. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (this.transport.sessionId !== undefined) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.transport.terminateSession().catch(() => {}),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, TERMINATE_SESSION_TIMEOUT_MS))),
      ]);
      if (timer !== undefined) clearTimeout(timer);
    }
    // Aborts whatever is still in flight (a timed-out call, an unfinished DELETE); the SDK
    // reports those aborts through onerror, which is quiet.
    await this.client.close().catch(() => {});
  }

  private fail(error: McpTransportError): void {
    if (this.failed) return;
    this.failed = error;
    this.signalFailure(error);
  }

  private observe(message: JSONRPCMessage): void {
    const isError = isJSONRPCErrorResponse(message);
    if (!isError && !isJSONRPCResultResponse(message)) return;
    if (isError) this.rpcErrorSeen = true;
    if (this.toolCall.id === undefined || message.id !== this.toolCall.id) return;
    this.toolCall.answered = true;
    if (isError) this.toolCall.rpcError = { code: message.error.code, message: message.error.message };
  }

  /** The transport's fetch. Headers pass through untouched and are never read or logged here. */
  private async fetch(url: string | URL, init?: RequestInit): Promise<Response> {
    const method = (init?.method ?? "GET").toUpperCase();
    if (method === "GET") {
      // The standalone GET stream carries only server-initiated messages, which a one-shot
      // client neither needs nor may act on (no sampling, elicitation or roots). The SDK treats
      // 405 as "server offers no stream", so none is opened: one connection fewer per call,
      // nothing to abort on close, nothing to reconnect.
      return new Response(null, { status: 405, statusText: "Method Not Allowed" });
    }
    // The POST carrying the tools/call is the first one after the transport's send saw it.
    const trace = this.toolCall;
    const isToolCall = method === "POST" && trace.sent && !trace.fetched;
    if (isToolCall) trace.fetched = true;
    const response = await fetch(url, init);
    return this.capBody(response, isToolCall ? trace : undefined);
  }

  /**
   * Passes the body through, counting bytes, and errors it past maxResponseBytes. For the
   * tools/call's SSE response it also notices the stream ending or breaking before the answer:
   * resumption is off, so that answer can never arrive, and waiting would only burn the timeout.
   */
  private capBody(response: Response, toolCall: ToolCallTrace | undefined): Response {
    const { maxResponseBytes } = this.caps;
    const body = response.body;
    if (body === null) return response;
    const tooLarge = () => new McpTransportError("response_too_large", `response body exceeds the ${maxResponseBytes}-byte cap`);
    const declared = Number(response.headers.get("content-length") ?? NaN);
    if (declared > maxResponseBytes) {
      const error = tooLarge();
      this.fail(error);
      void body.cancel(error).catch(() => {});
      throw error;
    }
    const watchEnd = toolCall !== undefined && (response.headers.get("content-type") ?? "").includes("text/event-stream");
    const ended = (why: string) => {
      // After close() began, the end is our own abort, not the server's doing.
      if (!watchEnd || this.closed) return;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (toolCall !== undefined && !toolCall.answered)
          this.fail(new McpTransportError("transport_error", `tools/call response stream ${why} before the result`));
      }, STREAM_END_SETTLE_MS);
      this.timers.add(timer);
    };

    const reader = body.getReader();
    let received = 0;
    const counted = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          ended("broke");
          controller.error(error);
          return;
        }
        if (chunk.done) {
          ended("ended");
          controller.close();
          return;
        }
        received += chunk.value.byteLength;
        if (received > maxResponseBytes) {
          const error = tooLarge();
          this.fail(error);
          controller.error(error);
          void reader.cancel(error).catch(() => {});
          return;
        }
        controller.enqueue(chunk.value);
      },
      cancel: (reason) => reader.cancel(reason).catch(() => {}),
    });
    return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

/**
 * SDK request options: the cap as both the idle and the total timeout, and progress
 * notifications never reset it (the SDK's default is already false; stated so it stays so).
 */
function requestOptions(timeoutMs: number): RequestOptions {
  return { timeout: timeoutMs, maxTotalTimeout: timeoutMs, resetTimeoutOnProgress: false };
}

function toToolInfo(tool: Tool): McpToolInfo {
  const info: McpToolInfo = { name: tool.name, inputSchema: tool.inputSchema as Record<string, unknown> };
  if (tool.description !== undefined) info.description = tool.description;
  const annotations = toolAnnotations(tool.annotations);
  if (annotations) info.annotations = annotations;
  return info;
}

/** The five annotation fields as the server gave them, each only when it has its declared type; undefined when none. */
function toolAnnotations(given: Tool["annotations"]): McpToolAnnotations | undefined {
  if (!given) return undefined;
  const out: McpToolAnnotations = {};
  if (typeof given.title === "string") out.title = given.title;
  for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const) {
    const value = given[hint];
    if (typeof value === "boolean") out[hint] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Anything thrown, as an McpTransportError (bounded() already classified what it saw). */
function toTransportError(error: unknown): McpTransportError {
  return error instanceof McpTransportError ? error : new McpTransportError("transport_error", errorText(error), httpStatusOf(error));
}

/** The HTTP status of a refusal, as the SDK's SdkHttpError carries it (its auth errors: 401, 403 insufficient_scope). */
function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof UnauthorizedError) return 401;
  if (error instanceof InsufficientScopeError) return 403;
  return error instanceof SdkHttpError && error.status >= 400 ? error.status : undefined;
}

function withStatus(error: McpTransportError): { httpStatus?: number } {
  return error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {};
}

/** Error text for a message: redacted and bounded; the request's URL and headers are never added to it. */
function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name === "Error" ? "" : `${error.name}: `}${error.message}` : String(error);
  // Cut generously first (bounds the work), redact, then cut to size: a credential split by the
  // first cut lies beyond the second.
  return truncateUtf8(redactText(truncateUtf8(text, 4 * MESSAGE_MAX_BYTES)), MESSAGE_MAX_BYTES);
}
