// Local stand-ins for the real model providers: plain node:http servers on
// 127.0.0.1 (a free port) that speak each provider's wire format, answer from
// a queue of scripted responses, and record every request for assertions.
//
//  - Anthropic: `POST /v1/messages` relative to the base URL (the Messages API).
//  - OpenAI-compatible: `POST /chat/completions` relative to the base URL (which,
//    like OpenAI's own `https://api.openai.com/v1`, already holds any `/v1`).
//
// Like the real APIs, the stand-ins refuse (400 invalid_request_error) a
// conversation that breaks the tool-call rules: every tool_use / tool_calls
// must be answered by a tool result right after it, and no result may answer
// a call that was not just made. So a test that sends a broken conversation
// fails instead of passing against a lenient fake. With `apiKey` set they also
// answer 401 to a request without that key, as the real ones do; tests use
// dummy keys only.
//
// Used by the provider tests (test/providers) and meant for end-to-end tests
// that point the Worker (wrangler dev) at them through MODEL_BASE_URL.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** One scripted answer. A body that is not a string is sent as JSON. */
interface ScriptedResponse {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Wait this long before answering (to test timeouts and aborts). */
  delayMs?: number;
  /** Cut the connection instead of answering (a network error for the client). */
  disconnect?: boolean;
}

/** A scripted response, or one made from the request it answers. */
type Scripted = ScriptedResponse | ((request: RecordedRequest) => ScriptedResponse);

interface RecordedRequest {
  method: string;
  /** Path and query, relative to the server root (so it includes the base URL's path). */
  path: string;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** The parsed JSON body, or undefined when it was not JSON. */
  body: any;
  rawBody: string;
}

export interface ModelStandIn {
  /** What to pass as the provider's base URL (MODEL_BASE_URL). */
  baseUrl: string;
  /** Every request received, in order, including refused ones. */
  requests: RecordedRequest[];
  /**
   * Adds scripted responses, answered in order, one per request on the model
   * route. A function is called with the request it answers (to echo ids, or
   * to answer by what the conversation holds).
   */
  enqueue(...responses: Scripted[]): void;
  /** Scripted responses not yet used. */
  pending(): number;
  close(): Promise<void>;
}

export interface StandInOptions {
  /**
   * When set, requests must carry exactly this key or get a 401: Anthropic's
   * `x-api-key` or `Authorization: Bearer`, OpenAI's `Authorization: Bearer`.
   */
  apiKey?: string;
  /** Check the conversation against the API's tool-call rules (default true). */
  validate?: boolean;
}

type Refusal = { status: number; body: unknown };

interface Dialect {
  route: string;
  checkAuth(req: RecordedRequest, apiKey: string): Refusal | undefined;
  validate(body: any): string | undefined;
  invalid(message: string): Refusal;
  /** The answer when the test scripted none: a loud 500, so the test fails visibly. */
  unscripted(): Refusal;
}

async function startStandIn(basePath: string, dialect: Dialect, options: StandInOptions): Promise<ModelStandIn> {
  const queue: Scripted[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const validate = options.validate ?? true;
  const route = basePath + dialect.route;

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: `stand-in failed: ${String(error)}` } });
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = rawBody === "" ? undefined : JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
    }
    const recorded: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers, body, rawBody };
    requests.push(recorded);

    const path = (req.url ?? "").split("?")[0];
    if (req.method !== "POST" || path !== route) {
      return sendJson(res, 404, { error: { message: `no route ${req.method} ${path} (the stand-in serves POST ${route})` } });
    }
    if (options.apiKey !== undefined) {
      const refusal = dialect.checkAuth(recorded, options.apiKey);
      if (refusal) return sendJson(res, refusal.status, refusal.body);
    }
    if (body === undefined || typeof body !== "object" || body === null) {
      const refusal = dialect.invalid("the request body is not a JSON object");
      return sendJson(res, refusal.status, refusal.body);
    }
    if (validate) {
      const problem = dialect.validate(body);
      if (problem !== undefined) {
        const refusal = dialect.invalid(problem);
        return sendJson(res, refusal.status, refusal.body);
      }
    }
    const scripted = queue.shift();
    const next = typeof scripted === "function" ? scripted(recorded) : scripted;
    if (!next) {
      const refusal = dialect.unscripted();
      return sendJson(res, refusal.status, refusal.body);
    }
    if (next.delayMs) await new Promise((r) => setTimeout(r, next.delayMs));
    if (next.disconnect) {
      req.socket.destroy();
      return;
    }
    const status = next.status ?? 200;
    if (typeof next.body === "string") {
      res.writeHead(status, { "content-type": "application/json", ...next.headers });
      res.end(next.body);
    } else {
      sendJson(res, status, next.body ?? {}, next.headers);
    }
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}${basePath}`,
    requests,
    enqueue: (...responses) => void queue.push(...responses),
    pending: () => queue.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

// ---------------------------------------------------------------- Anthropic

const anthropicError = (status: number, type: string, message: string): Refusal => ({
  status,
  body: { type: "error", error: { type, message } },
});

const anthropicDialect: Dialect = {
  route: "/v1/messages",
  checkAuth(req, apiKey) {
    // The API takes the key as `x-api-key` or as a bearer token (what the current SDK sends).
    if (req.headers["x-api-key"] === apiKey || req.headers.authorization === `Bearer ${apiKey}`) return undefined;
    return anthropicError(401, "authentication_error", "invalid x-api-key");
  },
  validate: validateAnthropicRequest,
  invalid: (message) => anthropicError(400, "invalid_request_error", message),
  unscripted: () => anthropicError(500, "api_error", "the stand-in has no scripted response left"),
};

/** The Messages API's rules that a tool-using conversation can break; undefined when the request is valid. */
export function validateAnthropicRequest(body: any): string | undefined {
  if (typeof body.model !== "string" || body.model === "") return "model: field required";
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return "max_tokens: must be a positive integer";
  if (body.system !== undefined && typeof body.system !== "string" && !Array.isArray(body.system))
    return "system: must be a string or a list of blocks";
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return "tools: must be a list";
    for (const [i, tool] of body.tools.entries()) {
      if (typeof tool?.name !== "string" || !/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name)) return `tools.${i}.name: invalid`;
      if (typeof tool.input_schema !== "object" || tool.input_schema === null) return `tools.${i}.input_schema: field required`;
    }
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return "messages: at least one message is required";
  if (messages[0]?.role !== "user") return 'messages: the first message must use the "user" role';
  let openToolUses: string[] = [];
  for (const [i, message] of messages.entries()) {
    if (message?.role !== "user" && message?.role !== "assistant") return `messages.${i}.role: must be "user" or "assistant"`;
    const blocks: any[] = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    if (!Array.isArray(blocks) || blocks.length === 0) return `messages.${i}.content: must be a non-empty string or list`;
    const results = blocks.filter((b) => b?.type === "tool_result").map((b) => b.tool_use_id as string);
    if (openToolUses.length > 0) {
      const missing = openToolUses.filter((id) => !results.includes(id));
      if (message.role !== "user" || missing.length > 0) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${openToolUses.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
      if (!blocks.slice(0, results.length).every((b) => b?.type === "tool_result")) {
        return `messages.${i}: \`tool_result\` blocks must come first in the user message`;
      }
    }
    const unexpected = results.filter((id) => !openToolUses.includes(id));
    if (unexpected.length > 0) {
      return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(", ")}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    }
    for (const block of blocks) {
      if (block?.type === "text" && (typeof block.text !== "string" || block.text === ""))
        return `messages.${i}: text content blocks must be non-empty`;
      if (block?.type === "tool_use") {
        if (message.role !== "assistant") return `messages.${i}: tool_use blocks are only allowed in assistant messages`;
        if (
          typeof block.id !== "string" ||
          typeof block.name !== "string" ||
          typeof block.input !== "object" ||
          block.input === null ||
          Array.isArray(block.input)
        ) {
          return `messages.${i}: tool_use blocks need id, name and an object input`;
        }
      }
      if (block?.type === "tool_result" && message.role !== "user")
        return `messages.${i}: tool_result blocks are only allowed in user messages`;
    }
    openToolUses = message.role === "assistant" ? blocks.filter((b) => b?.type === "tool_use").map((b) => b.id as string) : [];
  }
  if (openToolUses.length > 0 && messages.length > 0) {
    return `messages: the final assistant message has \`tool_use\` blocks without \`tool_result\` blocks after them`;
  }
  return undefined;
}

export function startAnthropicStandIn(options: StandInOptions = {}): Promise<ModelStandIn> {
  // The base URL is the server root, like https://api.anthropic.com.
  return startStandIn("", anthropicDialect, options);
}

let anthropicIds = 0;

/** A Messages API response body. */
export function anthropicMessage(turn: {
  text?: string;
  toolUses?: { id?: string; name: string; input: Record<string, unknown> }[];
  stopReason?: "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "pause_turn" | "refusal";
  model?: string;
}): Record<string, unknown> {
  const content: unknown[] = [];
  if (turn.text !== undefined) content.push({ type: "text", text: turn.text });
  for (const use of turn.toolUses ?? []) {
    content.push({ type: "tool_use", id: use.id ?? `toolu_standin_${++anthropicIds}`, name: use.name, input: use.input });
  }
  return {
    id: `msg_standin_${++anthropicIds}`,
    type: "message",
    role: "assistant",
    model: turn.model ?? "claude-stand-in",
    content,
    stop_reason: turn.stopReason ?? ((turn.toolUses?.length ?? 0) > 0 ? "tool_use" : "end_turn"),
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 10 },
  };
}

// ---------------------------------------------------------------- OpenAI-compatible

const openAiError = (status: number, type: string, message: string, code: string | null = null): Refusal => ({
  status,
  body: { error: { message, type, param: null, code } },
});

const openAiDialect: Dialect = {
  route: "/chat/completions",
  checkAuth(req, apiKey) {
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      return openAiError(401, "invalid_request_error", "Incorrect API key provided.", "invalid_api_key");
    }
    return undefined;
  },
  validate: validateOpenAiRequest,
  invalid: (message) => openAiError(400, "invalid_request_error", message),
  unscripted: () => openAiError(500, "server_error", "the stand-in has no scripted response left"),
};

/** The chat-completions rules that a tool-using conversation can break; undefined when the request is valid. */
export function validateOpenAiRequest(body: any): string | undefined {
  if (typeof body.model !== "string" || body.model === "") return "you must provide a model parameter";
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return "tools: must be a list";
    for (const [i, tool] of body.tools.entries()) {
      if (tool?.type !== "function" || typeof tool.function?.name !== "string" || !/^[a-zA-Z0-9_-]{1,64}$/.test(tool.function.name)) {
        return `tools[${i}]: must be {type:"function", function:{name,...}} with a valid name`;
      }
    }
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return "messages: must be a non-empty list";
  let open: string[] = [];
  for (const [i, message] of messages.entries()) {
    const role = message?.role;
    if (!["system", "developer", "user", "assistant", "tool"].includes(role)) return `messages[${i}].role: invalid`;
    if (role === "tool") {
      if (!open.includes(message.tool_call_id)) {
        return `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[${i}])`;
      }
      if (typeof message.content !== "string") return `messages[${i}].content: must be a string`;
      open = open.filter((id) => id !== message.tool_call_id);
      continue;
    }
    if (open.length > 0) {
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${open.join(", ")}`;
    }
    if (role === "assistant" && message.tool_calls !== undefined) {
      if (!Array.isArray(message.tool_calls) || message.tool_calls.length === 0)
        return `messages[${i}].tool_calls: must be a non-empty list`;
      for (const call of message.tool_calls) {
        if (
          call?.type !== "function" ||
          typeof call.id !== "string" ||
          typeof call.function?.name !== "string" ||
          typeof call.function?.arguments !== "string"
        ) {
          return `messages[${i}].tool_calls: each call needs id, type "function", function.name and function.arguments (a JSON string)`;
        }
      }
      open = message.tool_calls.map((c: any) => c.id as string);
    } else if (typeof message.content !== "string") {
      return `messages[${i}].content: must be a string`;
    }
  }
  if (open.length > 0) {
    return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${open.join(", ")}`;
  }
  return undefined;
}

export function startOpenAiStandIn(options: StandInOptions = {}): Promise<ModelStandIn> {
  // The base URL includes /v1, like https://api.openai.com/v1.
  return startStandIn("/v1", openAiDialect, options);
}

let openAiIds = 0;

/** A chat-completions response body. `arguments` may be a raw string (to script malformed JSON). */
export function openAiCompletion(turn: {
  text?: string | null;
  toolCalls?: { id?: string; name: string; arguments: Record<string, unknown> | string }[];
  finishReason?: "stop" | "tool_calls" | "length" | "content_filter" | "function_call";
  model?: string;
}): Record<string, unknown> {
  const toolCalls = (turn.toolCalls ?? []).map((call) => ({
    id: call.id ?? `call_standin_${++openAiIds}`,
    type: "function",
    function: { name: call.name, arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments) },
  }));
  return {
    id: `chatcmpl-standin-${++openAiIds}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: turn.model ?? "gpt-stand-in",
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: turn.text ?? null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: turn.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
  };
}
