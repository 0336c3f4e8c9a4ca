// A real MCP server of the 2026-07-28 revision only, for the end-to-end tests
// (contract section 21): the official v2 server package's per-request handler
// with `legacy: "reject"`, so it is stateless (no initialize, no
// Mcp-Session-Id) and refuses every request of the earlier revisions. Served
// over loopback HTTP from the test process. It keeps a log of every request
// that reached it (JSON-RPC method, the MCP headers, the request's `_meta`),
// which is how the tests see what the engine sent, and how many times; and it
// takes only requests carrying the API key it was given, so a test can see
// configured headers go out without them appearing anywhere else.
//
// Questions mid-call (contract section 21): `confirm_note` answers its first
// tools/call with input_required (one form elicitation and a requestState)
// and creates the note only when the follow-up accepts; `two_step_note`
// asks two rounds; `ask_forever` answers input_required with only a
// requestState every time (no question: the client sends it again at once);
// `ask_url` asks for a URL-mode elicitation the engine never declared (the
// SDK's server refuses to send what the client did not declare, so this one
// misbehaving answer is written by hand, below the SDK). The
// log keeps each tools/call's inputResponses and requestState as received.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { acceptedContent, createMcpHandler, inputRequired, McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";

export const STATELESS_API_KEY_HEADER = "x-api-key";

interface SeenRequest {
  /** The JSON-RPC method of the POST body, or the HTTP method for a body-less request. */
  method: string;
  /** The tool of a tools/call. */
  tool?: string;
  /** The request's `params._meta`. */
  meta?: Record<string, unknown>;
  /** A follow-up tools/call's answers and echoed state (contract section 21), as they arrived. */
  inputResponses?: Record<string, unknown>;
  requestState?: unknown;
  headers: {
    "mcp-protocol-version"?: string;
    "mcp-method"?: string;
    "mcp-name"?: string;
    "mcp-session-id"?: string;
    "mcp-param-text"?: string;
  };
  /** The HTTP status the server answered. */
  status: number;
}

export interface StatelessMcpServer {
  /** The MCP endpoint, http://127.0.0.1:<port>/mcp. */
  url: string;
  /** Every request that reached the endpoint, in order. */
  seen(): SeenRequest[];
  /** The notes created so far. */
  notes(): string[];
  /** The texts of the create_note calls that reached the server, counted on arrival (before any answer). */
  arrivals(): string[];
  /** The next create_note waits this long before it creates its note (a call in flight, for the crash test). */
  holdNextCreate(ms: number): void;
  /** The next confirm_note follow-up waits this long before it answers (a follow-up in flight, for the crash test). */
  holdNextFollowUp(ms: number): void;
  /** The texts of the confirm_note follow-ups that reached the server, counted on arrival (before any answer). */
  followUpArrivals(): string[];
  reset(): void;
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;

/** The form `confirm_note` asks: whether to create the note, an optional label, and at most one tag (a titled multi-select). */
export const CONFIRM_SCHEMA = {
  type: "object" as const,
  properties: {
    confirm: { type: "boolean" as const, description: "Create it?" },
    label: { type: "string" as const, maxLength: 20 },
    tags: {
      type: "array" as const,
      items: {
        anyOf: [
          { const: "urgent", title: "Urgent" },
          { const: "later", title: "Later" },
        ],
      },
      maxItems: 1,
    },
  },
  required: ["confirm"],
};
/** The requestState `confirm_note` mints: opaque to the client, echoed byte for byte (non-ASCII on purpose). */
export const confirmState = (text: string) => `confirm-v1:${text}:é✓`;

export async function startStatelessMcpServer(apiKey: string): Promise<StatelessMcpServer> {
  const seen: SeenRequest[] = [];
  const notes: string[] = [];
  const arrivals: string[] = [];
  let holdMs = 0;
  let followUpHoldMs = 0;
  const followUpArrivals: string[] = [];
  const factory = () => {
    const server = new McpServer({ name: "stateless-test-server", version: "1.0.0" });
    // `text` rides as the revision's Mcp-Param-Text header too (x-mcp-header); the SDK refuses a call whose header disagrees.
    const inputSchema = z.object({ text: z.string().meta({ "x-mcp-header": "Text" }) });
    server.registerTool("create_note", { description: "Create a note.", inputSchema }, async ({ text }) => {
      arrivals.push(text);
      const hold = holdMs;
      holdMs = 0;
      if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold));
      notes.push(text);
      return { content: [{ type: "text", text: `created note ${notes.length}: ${text}` }] };
    });
    const textInput = z.object({ text: z.string() });
    server.registerTool(
      "confirm_note",
      { description: "Create a note once a person confirms.", inputSchema: textInput },
      async ({ text }, ctx) => {
        const responses = ctx.mcpReq.inputResponses;
        if (responses === undefined) {
          return inputRequired({
            inputRequests: { confirm: inputRequired.elicit({ message: `Create the note "${text}"?`, requestedSchema: CONFIRM_SCHEMA }) },
            requestState: confirmState(text),
          });
        }
        followUpArrivals.push(text);
        const hold = followUpHoldMs;
        followUpHoldMs = 0;
        if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold));
        const answer = acceptedContent(responses, "confirm");
        if (answer?.confirm !== true) {
          const action = (responses.confirm as { action?: string } | undefined)?.action ?? "none";
          return { content: [{ type: "text", text: `not created (${action})` }] };
        }
        notes.push(text);
        return { content: [{ type: "text", text: `created note ${notes.length}: ${text}${answer.label ? ` [${answer.label}]` : ""}` }] };
      },
    );
    server.registerTool(
      "two_step_note",
      { description: "Ask twice, then create a note.", inputSchema: textInput },
      async ({ text }, ctx) => {
        const responses = ctx.mcpReq.inputResponses ?? {};
        const state = ctx.mcpReq.requestState<string>();
        const ask = (key: string, message: string, next: string) =>
          inputRequired({
            inputRequests: {
              [key]: inputRequired.elicit({
                message,
                requestedSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
              }),
            },
            requestState: next,
          });
        if (state === undefined) return ask("title", "Which title?", "step-1");
        const title = acceptedContent<{ value: string }>(responses, "title");
        if (state === "step-1")
          return title
            ? ask("tag", `Which tag for ${title.value}?`, `step-2:${title.value}`)
            : { content: [{ type: "text", text: "stopped" }] };
        const tag = acceptedContent<{ value: string }>(responses, "tag");
        const noteTitle = state.slice("step-2:".length);
        notes.push(`${text}:${noteTitle}:${tag?.value ?? "-"}`);
        return { content: [{ type: "text", text: `created ${text} titled ${noteTitle} tagged ${tag?.value ?? "-"}` }] };
      },
    );
    server.registerTool("ask_forever", { description: "Never completes.", inputSchema: textInput }, async (_args, ctx) => {
      const round = Number(ctx.mcpReq.requestState<string>() ?? "0") + 1;
      return inputRequired({ requestState: String(round) });
    });
    // Listed for discovery; its tools/call is answered in `serve`, by hand.
    server.registerTool("ask_url", { description: "Asks for a URL-mode elicitation.", inputSchema: textInput }, async () => ({
      content: [{ type: "text", text: "never reached" }],
    }));
    server.registerTool(
      "list_notes",
      { description: "List the notes.", inputSchema: z.object({}), annotations: { readOnlyHint: true } },
      async () => ({ content: [{ type: "text", text: JSON.stringify(notes) }] }),
    );
    return server;
  };
  const handler = createMcpHandler(factory, { legacy: "reject" });

  const http = createServer((req, res) => {
    void serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).byteLength;
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413).end();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    const body = Buffer.concat(chunks);
    const entry = describe(req, body);
    if (req.headers[STATELESS_API_KEY_HEADER] !== apiKey) {
      seen.push({ ...entry, status: 401 });
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unauthorized" }));
      return;
    }
    if (entry.method === "tools/call" && entry.tool === "ask_url") {
      // An undeclared request kind (URL-mode elicitation), as a server that ignores the client's capabilities would send it.
      const id = (JSON.parse(body.toString("utf8")) as { id: unknown }).id;
      const result = {
        resultType: "input_required",
        inputRequests: {
          login: { method: "elicitation/create", params: { mode: "url", message: "Sign in", url: "https://example.com/login" } },
        },
      };
      seen.push({ ...entry, status: 200 });
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id, result }));
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const response = await handler.fetch(
      new Request(`http://127.0.0.1${req.url ?? "/"}`, { method: req.method, headers, ...(hasBody ? { body } : {}) }),
    );
    seen.push({ ...entry, status: response.status });
    const outHeaders: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      outHeaders[name] = value;
    });
    res.writeHead(response.status, outHeaders);
    const reader = response.body?.getReader();
    for (let chunk = await reader?.read(); chunk && !chunk.done; chunk = await reader?.read()) res.write(chunk.value);
    res.end();
  }

  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen: () => [...seen],
    notes: () => [...notes],
    arrivals: () => [...arrivals],
    holdNextCreate: (ms) => {
      holdMs = ms;
    },
    holdNextFollowUp: (ms) => {
      followUpHoldMs = ms;
    },
    followUpArrivals: () => [...followUpArrivals],
    reset: () => {
      seen.length = 0;
      notes.length = 0;
      arrivals.length = 0;
      holdMs = 0;
      followUpHoldMs = 0;
      followUpArrivals.length = 0;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

function describe(req: IncomingMessage, body: Buffer): Omit<SeenRequest, "status"> {
  const header = (name: string) => (typeof req.headers[name] === "string" ? { [name]: req.headers[name] } : {});
  const headers = {
    ...header("mcp-protocol-version"),
    ...header("mcp-method"),
    ...header("mcp-name"),
    ...header("mcp-session-id"),
    ...header("mcp-param-text"),
  };
  let message:
    | { method?: unknown; params?: { name?: unknown; _meta?: unknown; inputResponses?: unknown; requestState?: unknown } }
    | undefined;
  try {
    message = body.byteLength > 0 ? JSON.parse(body.toString("utf8")) : undefined;
  } catch {
    message = undefined;
  }
  const method = typeof message?.method === "string" ? message.method : (req.method ?? "?");
  const tool = method === "tools/call" && typeof message?.params?.name === "string" ? message.params.name : undefined;
  const meta = message?.params?._meta;
  return {
    method,
    headers,
    ...(tool !== undefined ? { tool } : {}),
    ...(typeof meta === "object" && meta !== null ? { meta: meta as Record<string, unknown> } : {}),
    ...(typeof message?.params?.inputResponses === "object" && message.params.inputResponses !== null
      ? { inputResponses: message.params.inputResponses as Record<string, unknown> }
      : {}),
    ...(message?.params?.requestState !== undefined ? { requestState: message.params.requestState } : {}),
  };
}
