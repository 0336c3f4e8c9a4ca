// The engine's HTTP client (contract sections 2-9 and 15): one method per route with
// typed results, every non-2xx answer thrown as one ApiError, and the run's
// event stream as a resuming async iterator (event-stream.ts). Platform
// neutral: `fetch` is injectable (a Worker's service binding, `SELF.fetch` in
// runtime tests), nothing else is needed beyond TextDecoder and AbortSignal.
import { ApiError, errorFromResponse } from "./errors.js";
import { type OpenSocket, streamEvents, type EventStreamOptions } from "./event-stream.js";
import type { WebSocketLike } from "./socket-stream.js";
import { queryString, walkPages, type WalkOptions } from "./pages.js";
import type { AuditPublicJwk } from "./audit-chain.js";
import type {
  AuditPage,
  AuditCheckpointPage,
  AuditQuery,
  TokenCreated,
  TokenCreateRequest,
  TokenListItem,
  TokenRevoked,
  McpServerListItem,
  McpServersListing,
  ApprovalAnswer,
  ApprovalDecision,
  CancelAnswer,
  DeliveryReceipt,
  EngineEvent,
  InputAnswer,
  InputAnswerResult,
  ApprovalsPage,
  ApprovalsQuery,
  InputsPage,
  InputsQuery,
  ListingName,
  Listings,
  MutationOutcome,
  MutationsPage,
  MutationsQuery,
  OpenApiDocument,
  RunsPage,
  RunsQuery,
  ReconcileRequest,
  RunMutations,
  RunSummary,
  StoragePoolStats,
  TriggerReceipt,
  TriggerRequest,
  Halt,
  HaltReleaseAnswer,
  HaltRequest,
  HaltsPage,
  PolicyChange,
  PolicyPutRequest,
  PolicyStatus,
  PolicyVersion,
  PolicyShadowPage,
  PolicyVersionsPage,
  PolicyReplayPage,
  PolicyReplayRequest,
} from "./types.js";

/** The part of `fetch` the client calls; the global one, a Fetcher's or a test's all fit. */
export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface EngineClientOptions {
  /** Origin (and optional path prefix) of the engine, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** The API's bearer token (`API_TOKEN`). */
  token: string;
  fetch?: FetchLike;
  /**
   * How the event stream may use a WebSocket (contract section 27): `auto`
   * (the default) upgrades through `fetch` with the Authorization header in a
   * Worker; `header` uses a global WebSocket that takes headers (Node's:
   * `new WebSocket(url, { headers })`); `cookie` opens a browser WebSocket that
   * the session cookie authenticates (the console); `off` keeps to SSE.
   * Where none applies (a browser with a token, say), SSE.
   */
  webSocket?: "auto" | "header" | "cookie" | "off";
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface TriggerOptions extends RequestOptions {
  /** Sent as the Idempotency-Key header (the delivery identity). */
  idempotencyKey?: string;
}

/** The trigger's streamed form: the receipt's identity and the run's events from sequence 1. */
export interface TriggeredStream {
  runId: string;
  /** True when the delivery identity was seen before (the stream is the first run's, replayed). */
  duplicate: boolean;
  events: AsyncGenerator<EngineEvent, void, undefined>;
}

export class EngineClient {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #fetch: FetchLike;
  readonly #socketMode: "fetch" | "node" | "cookie" | undefined;

  constructor(options: EngineClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    // Bound so a platform fetch is never called with the client as `this`.
    const injected = options.fetch;
    this.#fetch = injected ? (input, init) => injected(input, init) : (input, init) => fetch(input, init);
    this.#socketMode = socketModeOf(options.webSocket ?? "auto");
  }

  // ---- section 3 ------------------------------------------------------------

  /** POST /api/trigger: 202 `accepted`, or 200 `duplicate` for a repeated delivery identity. */
  trigger(body: TriggerRequest, options: TriggerOptions = {}): Promise<TriggerReceipt> {
    return this.#json<TriggerReceipt>("POST", "/api/trigger", body, options, idempotencyHeader(options.idempotencyKey));
  }

  /**
   * POST /api/trigger with `Accept: text/event-stream`: the run's events from
   * sequence 1, resumed through the events route if the connection drops.
   */
  async triggerStream(body: TriggerRequest, options: TriggerOptions & Omit<EventStreamOptions, "after"> = {}): Promise<TriggeredStream> {
    const response = await this.raw("/api/trigger", {
      method: "POST",
      body: JSON.stringify(body),
      headers: { accept: "text/event-stream", "content-type": "application/json", ...idempotencyHeader(options.idempotencyKey) },
      signal: options.signal,
    });
    if (response.status !== 200) throw await errorFromResponse(response, "POST /api/trigger");
    const runId = response.headers.get("x-run-id");
    if (!runId) {
      await response.body?.cancel();
      throw new Error("The trigger's stream carries no X-Run-Id header; is this server an approved-execution engine?");
    }
    return {
      runId,
      duplicate: response.headers.get("x-delivery-status") === "duplicate",
      events: streamEvents(runId, this.#openEvents(runId), options, response, this.#openSocket(runId)),
    };
  }

  /** GET /api/runs/{run_id}. */
  summary(runId: string, options: RequestOptions = {}): Promise<RunSummary> {
    return this.#json("GET", `/api/runs/${enc(runId)}`, undefined, options);
  }

  /** GET /api/deliveries/{delivery_id}: the caller's own identities, or Slack's event ids with `source: "slack"` (an adapter's). */
  delivery(deliveryId: string, options: RequestOptions & { source?: "slack" } = {}): Promise<DeliveryReceipt> {
    const { source, ...rest } = options;
    return this.#json("GET", `/api/deliveries/${enc(deliveryId)}${source === "slack" ? "?source=slack" : ""}`, undefined, rest);
  }

  // ---- section 5 ------------------------------------------------------------

  /**
   * GET /api/runs/{run_id}/events as an async iterator of parsed events. It
   * resumes from the last sequence it yielded when the connection drops, never
   * yields a sequence twice, ends after the terminal event (or on 204), and
   * throws ReplayGapError on 410 replay_gap and ApiError on other refusals.
   */
  events(runId: string, options: EventStreamOptions = {}): AsyncGenerator<EngineEvent, void, undefined> {
    return streamEvents(runId, this.#openEvents(runId), options, undefined, this.#openSocket(runId));
  }

  // ---- section 6 ------------------------------------------------------------

  /** POST /api/runs/{run_id}/approvals/{approval_id}: 200, else ApiError (400 confirmation_mismatch, 409, 410 expired, 404). */
  decideApproval(runId: string, approvalId: string, decision: ApprovalDecision, options: RequestOptions = {}): Promise<ApprovalAnswer> {
    return this.#json("POST", `/api/runs/${enc(runId)}/approvals/${enc(approvalId)}`, decision, options);
  }

  /** POST /api/runs/{run_id}/inputs/{id}: the answer to a `human__ask` (at its tool_call_id) or to an MCP question (at its input_id, contract section 21). */
  answerInput(runId: string, toolCallId: string, answer: InputAnswer, options: RequestOptions = {}): Promise<InputAnswerResult> {
    return this.#json("POST", `/api/runs/${enc(runId)}/inputs/${enc(toolCallId)}`, answer, options);
  }

  /** POST /api/runs/{run_id}/cancel: `cancelling` (202), or the terminal status when the run had ended (200). */
  cancel(runId: string, options: RequestOptions = {}): Promise<CancelAnswer> {
    return this.#json("POST", `/api/runs/${enc(runId)}/cancel`, undefined, options);
  }

  // ---- sections 8 and 9 -------------------------------------------------------

  /** GET /api/runs/{run_id}/mutations. */
  runMutations(runId: string, options: RequestOptions = {}): Promise<RunMutations> {
    return this.#json("GET", `/api/runs/${enc(runId)}/mutations`, undefined, options);
  }

  /** GET /api/mutations/{mutation_id}. */
  mutation(mutationId: string, options: RequestOptions = {}): Promise<MutationOutcome> {
    return this.#json("GET", `/api/mutations/${enc(mutationId)}`, undefined, options);
  }

  /** POST /api/mutations/{mutation_id}/reconcile: the updated row, else ApiError (409 not_reconcilable). */
  reconcile(mutationId: string, body: ReconcileRequest, options: RequestOptions = {}): Promise<MutationOutcome> {
    return this.#json("POST", `/api/mutations/${enc(mutationId)}/reconcile`, body, options);
  }

  /** GET /api/storage-pool. */
  storagePool(options: RequestOptions = {}): Promise<StoragePoolStats> {
    return this.#json("GET", "/api/storage-pool", undefined, options);
  }

  /** GET /api/metrics: the Prometheus text exposition (contract section 22), as text. */
  async metrics(options: RequestOptions = {}): Promise<string> {
    const response = await this.raw("/api/metrics", { signal: options.signal });
    if (!response.ok) throw await errorFromResponse(response, "GET /api/metrics");
    return response.text();
  }

  // ---- section 18: named tokens and the audit log (admin) -----------------------

  /** POST /api/tokens: the new token, its value shown only in this answer; ApiError 409 name_taken for a used name. */
  createToken(body: TokenCreateRequest, options: RequestOptions = {}): Promise<TokenCreated> {
    return this.#json("POST", "/api/tokens", body, options);
  }

  /** GET /api/mcp/servers: each configured MCP server as last seen (contract section 21). */
  async listMcpServers(options: RequestOptions = {}): Promise<McpServerListItem[]> {
    return (await this.#json<McpServersListing>("GET", "/api/mcp/servers", undefined, options)).servers;
  }

  /**
   * POST /api/mcp/servers/{server}/connect (admin, contract section 21): the authorization URL to open in a browser
   * signed in as the same principal (console or Cloudflare Access). ApiError 404 unknown server, 409 not_oauth.
   */
  async connectMcpServer(server: string, options: RequestOptions = {}): Promise<string> {
    const answer = await this.#json<{ authorization_url: string }>("POST", `/api/mcp/servers/${enc(server)}/connect`, undefined, options);
    return answer.authorization_url;
  }

  /** GET /api/tokens: every named token, never a value. */
  async listTokens(options: RequestOptions = {}): Promise<TokenListItem[]> {
    return (await this.#json<{ tokens: TokenListItem[] }>("GET", "/api/tokens", undefined, options)).tokens;
  }

  /** DELETE /api/tokens/{name}: revokes it and ends its console sessions. */
  revokeToken(name: string, options: RequestOptions = {}): Promise<TokenRevoked> {
    return this.#json("DELETE", `/api/tokens/${enc(name)}`, undefined, options);
  }

  /** POST /api/halts: engage a halt (contract section 23, approver or admin). */
  engageHalt(body: HaltRequest, options: RequestOptions = {}): Promise<Halt> {
    return this.#json("POST", "/api/halts", body, options);
  }

  /** GET /api/halts: one page of halts, newest first. */
  listHalts(
    query: { status?: "active" | "released"; limit?: number; cursor?: string } = {},
    options: RequestOptions = {},
  ): Promise<HaltsPage> {
    return this.#json("GET", `/api/halts${queryString(query)}`, undefined, options);
  }

  /** GET /api/policy: the active policy version whole (contract section 24, viewer). */
  getPolicy(options: RequestOptions = {}): Promise<PolicyVersion> {
    return this.#json("GET", "/api/policy", undefined, options);
  }

  /** PUT /api/policy: a new version; active at once when it only tightens, else proposed (admin). */
  putPolicy(body: PolicyPutRequest, options: RequestOptions = {}): Promise<PolicyChange> {
    return this.#json("PUT", "/api/policy", body, options);
  }

  /** GET /api/policy/versions: one page of versions, newest first (version 0, the settings, last). */
  listPolicyVersions(
    query: { status?: PolicyStatus; limit?: number; cursor?: string } = {},
    options: RequestOptions = {},
  ): Promise<PolicyVersionsPage> {
    return this.#json("GET", `/api/policy/versions${queryString(query)}`, undefined, options);
  }

  /** GET /api/policy/shadow: where the shadow version's verdict differed from the active one's, newest first (viewer). */
  listPolicyShadowDifferences(
    query: { version?: number; limit?: number; cursor?: string } = {},
    options: RequestOptions = {},
  ): Promise<PolicyShadowPage> {
    return this.#json("GET", `/api/policy/shadow${queryString(query)}`, undefined, options);
  }

  /** GET /api/policy/versions/{v}: one version with what it loosens. */
  getPolicyVersion(version: number, options: RequestOptions = {}): Promise<PolicyVersion> {
    return this.#json("GET", `/api/policy/versions/${version}`, undefined, options);
  }

  /** POST /api/policy/versions/{v}/approve: activate a proposed or shadow version (admin; another person when it loosens). */
  approvePolicyVersion(version: number, options: RequestOptions = {}): Promise<PolicyChange> {
    return this.#json("POST", `/api/policy/versions/${version}/approve`, undefined, options);
  }

  /** DELETE /api/policy/versions/{v}: withdraw a proposed or shadow version (admin). */
  withdrawPolicyVersion(version: number, options: RequestOptions = {}): Promise<PolicyChange> {
    return this.#json("DELETE", `/api/policy/versions/${version}`, undefined, options);
  }

  /** DELETE /api/halts/{halt_id}: a release vote (admin). */
  releaseHalt(haltId: string, options: RequestOptions = {}): Promise<HaltReleaseAnswer> {
    return this.#json("DELETE", `/api/halts/${enc(haltId)}`, undefined, options);
  }

  /** POST /api/policy/replay: one page of a window of recorded calls judged by a candidate policy (contract section 24, admin). */
  replayPolicy(body: PolicyReplayRequest, options: RequestOptions = {}): Promise<PolicyReplayPage> {
    return this.#json("POST", "/api/policy/replay", body, options);
  }

  /** GET /api/audit: one page of the audit log, newest first. */
  audit(query: AuditQuery = {}, options: RequestOptions = {}): Promise<AuditPage> {
    return this.#json("GET", `/api/audit${queryString({ ...query })}`, undefined, options);
  }

  /** GET /api/audit/checkpoints: signed checkpoints of the audit chain, newest first (contract section 25). */
  auditCheckpoints(query: { limit?: number; cursor?: string } = {}, options: RequestOptions = {}): Promise<AuditCheckpointPage> {
    return this.#json("GET", `/api/audit/checkpoints${queryString({ ...query })}`, undefined, options);
  }

  /** GET /api/audit/public-key: every key that signed a kept checkpoint (for `approved-exec audit verify --public-key`). */
  auditPublicKeys(options: RequestOptions = {}): Promise<{ keys: AuditPublicJwk[] }> {
    return this.#json("GET", "/api/audit/public-key", undefined, options);
  }

  // ---- section 15: listings across runs and the machine-readable contract -------

  /** GET /api/runs: one page, newest first. */
  listRuns(query: RunsQuery = {}, options: RequestOptions = {}): Promise<RunsPage> {
    return this.#json("GET", `/api/runs${queryString(query)}`, undefined, options);
  }

  /** GET /api/approvals: one page (`status: "pending"` for what waits for a person). */
  listApprovals(query: ApprovalsQuery = {}, options: RequestOptions = {}): Promise<ApprovalsPage> {
    return this.#json("GET", `/api/approvals${queryString(query)}`, undefined, options);
  }

  /** GET /api/inputs: one page of `human__ask` questions. */
  listInputs(query: InputsQuery = {}, options: RequestOptions = {}): Promise<InputsPage> {
    return this.#json("GET", `/api/inputs${queryString(query)}`, undefined, options);
  }

  /** GET /api/mutations: one page of durable outcomes (`state: "outcome_unknown"` for rows to reconcile). */
  listMutations(query: MutationsQuery = {}, options: RequestOptions = {}): Promise<MutationsPage> {
    return this.#json("GET", `/api/mutations${queryString(query)}`, undefined, options);
  }

  /** Every page of a listing, following `next_cursor` until it is null. */
  pages<L extends ListingName>(
    listing: L,
    query: Listings[L]["query"] = {},
    options: RequestOptions & WalkOptions = {},
  ): AsyncGenerator<Listings[L]["page"], void, undefined> {
    const fetchPage = (q: Listings[L]["query"]) =>
      this.#json<Listings[L]["page"]>("GET", `/api/${listing}${queryString(q)}`, undefined, options);
    return walkPages(fetchPage, query, options);
  }

  /** Every item of a listing across its pages, in the listing's order. */
  async *items<L extends ListingName>(
    listing: L,
    query: Listings[L]["query"] = {},
    options: RequestOptions & WalkOptions = {},
  ): AsyncGenerator<Listings[L]["item"], void, undefined> {
    for await (const page of this.pages(listing, query, options)) {
      yield* (page as Record<L, Listings[L]["item"][]>)[listing];
    }
  }

  /** GET /api/openapi.json: the route table as OpenAPI 3.1. */
  openapi(options: RequestOptions = {}): Promise<OpenApiDocument> {
    return this.#json("GET", "/api/openapi.json", undefined, options);
  }

  /** GET /healthz (no token needed; sent anyway). */
  healthz(options: RequestOptions = {}): Promise<{ status: "ok" }> {
    return this.#json("GET", "/healthz", undefined, options);
  }

  // ---- plumbing ---------------------------------------------------------------

  /** An authorised request to any path, answered as is: for routes and error cases this client does not model. */
  raw(
    path: string,
    init: { method?: string; body?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token}`, ...init.headers };
    if (init.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
      headers["content-type"] = "application/json";
    }
    return this.#fetch(`${this.baseUrl}${path}`, { method: init.method ?? "GET", headers, body: init.body, signal: init.signal });
  }

  /** The events route as a WebSocket, where this runtime can open one that authenticates (contract section 27). */
  #openSocket(runId: string): OpenSocket | undefined {
    const mode = this.#socketMode;
    if (mode === undefined) return undefined;
    const path = `/api/runs/${enc(runId)}/events`;
    return async (after, signal) => {
      const url = `${this.baseUrl}${path}?after=${after}`;
      const authorization = `Bearer ${this.#token}`;
      if (mode === "fetch") {
        const response = await this.#fetch(url, { headers: { upgrade: "websocket", authorization }, signal });
        const socket = (response as Response & { webSocket?: (WebSocketLike & { accept(): void }) | null }).webSocket;
        if (!socket) return { refused: response };
        socket.accept();
        return { socket };
      }
      const wsUrl = url.replace(/^http/, "ws");
      const Socket = (globalThis as unknown as { WebSocket: new (url: string, init?: unknown) => WebSocketLike }).WebSocket;
      // Node's WebSocket takes headers; a browser's sends the session cookie by itself.
      return { socket: mode === "node" ? new Socket(wsUrl, { headers: { authorization } }) : new Socket(wsUrl) };
    };
  }

  #openEvents(runId: string) {
    return (after: number, signal: AbortSignal) =>
      this.raw(`/api/runs/${enc(runId)}/events?after=${after}`, { headers: { accept: "text/event-stream" }, signal });
  }

  async #json<T>(method: string, path: string, body: unknown, options: RequestOptions, headers: Record<string, string> = {}): Promise<T> {
    const response = await this.raw(path, {
      method,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers,
      signal: options.signal,
    });
    if (!response.ok) throw await errorFromResponse(response, `${method} ${path}`);
    const text = await response.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ApiError(
        response.status,
        { error: "invalid_response", message: `expected JSON, got: ${text.slice(0, 200)}` },
        undefined,
        `${method} ${path}`,
      );
    }
  }
}

const enc = encodeURIComponent;

function idempotencyHeader(key: string | undefined): Record<string, string> {
  return key === undefined ? {} : { "idempotency-key": key };
}

/** Which WebSocket the stream can use here, if any. */
function socketModeOf(option: "auto" | "header" | "cookie" | "off"): "fetch" | "node" | "cookie" | undefined {
  const runtime = globalThis as { WebSocket?: unknown; navigator?: { userAgent?: string } };
  const hasWebSocket = typeof runtime.WebSocket === "function";
  switch (option) {
    case "off":
      return undefined;
    case "cookie":
      return hasWebSocket ? "cookie" : undefined;
    case "header":
      return hasWebSocket ? "node" : undefined;
    case "auto":
      return runtime.navigator?.userAgent === "Cloudflare-Workers" ? "fetch" : undefined;
  }
}
