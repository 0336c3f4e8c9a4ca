/**
 * The engine's MCP client (src/execution/mcp-transport.ts, mcp-tool-list.ts), run inside workerd against the real demo MCP
 * server processes started by demo-mcp-global-setup.ts: one answering with SSE streams, one with
 * JSON bodies. Every scenario that depends on the response mode runs against both.
 *
 * What matters most here is what reached the server: the demo server counts each tools/call on
 * arrival (/control/calls), so "exactly once, never retried" is checked on the server's side,
 * after waiting long enough for any retry to have arrived.
 */
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { MODEL_TEXT_MAX_BYTES, type McpCallOutcome, SUMMARY_MAX_BYTES, shapeAnswer, truncateUtf8 } from "../../src/execution/mcp-result";
import { McpTransportError } from "../../src/execution/mcp-errors";
import { listMcpTools } from "../../src/execution/mcp-tool-list";
import { type McpCallAnswer, openMcpSession, type McpServerConfig, type TransportCaps } from "../../src/execution/mcp-transport";

const CAPS: TransportCaps = { connectTimeoutMs: 5_000, callTimeoutMs: 5_000, maxResponseBytes: 1024 * 1024 };
/** The call timeout of the timeout scenarios: short, so a delayed server outlasts it. */
const SHORT_CALL_TIMEOUT_MS = 300;
/** How long the delayed server holds the call: well past the short timeout. */
const FAULT_DELAY_MS = 1_500;
/** Time a retry, were there one, would have had to reach the server. */
const RETRY_WINDOW_MS = 700;
/** Nothing listens on port 1 (tcpmux) on a test machine: connecting is refused at once. */
const CLOSED_PORT_URL = "http://127.0.0.1:1/mcp";

/** One tool call on a fresh session, the way the dispatch pipeline uses the transport (src/execution/mcp-send.ts): open, call once, close. */
async function callMcpTool(
  server: McpServerConfig,
  toolName: string,
  args: Record<string, unknown>,
  caps: TransportCaps,
): Promise<McpCallOutcome> {
  const opened = await openMcpSession(server, caps);
  if (opened.kind === "failed") return { ...opened, sent: false };
  try {
    return shapeAnswer(completed(await opened.session.call(toolName, args)), caps.maxResponseBytes);
  } finally {
    await opened.session.close();
  }
}

const encoder = new TextEncoder();
const utf8Bytes = (text: string) => encoder.encode(text).byteLength;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface CallsSnapshot {
  total: number;
  by_tool: Record<string, number>;
  calls: { tool: string; arguments: unknown }[];
}
interface StateSnapshot {
  dashboards: { id: string; title: string }[];
}

/** The demo server's control API (beside /mcp on the same origin). */
function control(mcpUrl: string) {
  const at = (path: string) => new URL(path, mcpUrl).toString();
  const getJson = async <T>(path: string): Promise<T> => {
    const res = await fetch(at(path));
    expect(res.status, `GET ${path}`).toBe(200);
    return (await res.json()) as T;
  };
  const post = async (path: string, body?: unknown) => {
    const res = await fetch(at(path), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.status, `POST ${path}: ${await res.clone().text()}`).toBe(200);
    await res.body?.cancel();
  };
  return {
    calls: () => getJson<CallsSnapshot>("/control/calls"),
    state: () => getJson<StateSnapshot>("/control/state"),
    sessions: () => getJson<{ open: number }>("/control/sessions"),
    reset: () => post("/control/reset"),
    arm: (fault: { tool: string; mode: "delay" | "error" | "commit_then_drop"; delay_ms?: number }) => post("/control/faults", fault),
  };
}

function expectResult(outcome: McpCallOutcome): Extract<McpCallOutcome, { kind: "result" }> {
  if (outcome.kind !== "result") throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
  return outcome;
}

function expectFailed(outcome: McpCallOutcome): Extract<McpCallOutcome, { kind: "failed" }> {
  if (outcome.kind !== "failed") throw new Error(`expected a failure, got ${JSON.stringify(outcome)}`);
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// Nothing may leak: no unhandled rejection and no console output from the transport, in any test.

const unhandled: unknown[] = [];
const onUnhandled = (event: PromiseRejectionEvent) => void unhandled.push(event.reason);
let consoleSpies: MockInstance[] = [];

beforeAll(() => addEventListener("unhandledrejection", onUnhandled));
afterAll(() => removeEventListener("unhandledrejection", onUnhandled));
beforeEach(() => {
  unhandled.length = 0;
  consoleSpies = (["log", "info", "warn", "error", "debug"] as const).map((method) => vi.spyOn(console, method));
});
afterEach(async () => {
  // Rejections are reported a task after they happen; late SDK work (aborts on close) too.
  await sleep(50);
  const calls = consoleSpies.flatMap((spy) => spy.mock.calls);
  for (const spy of consoleSpies) spy.mockRestore();
  expect(unhandled, "unhandled rejections").toEqual([]);
  expect(calls, "console output").toEqual([]);
});

// ---------------------------------------------------------------------------------------------

describe.each([
  { mode: "sse", url: () => env.DEMO_MCP_URL },
  { mode: "json", url: () => env.DEMO_MCP_JSON_URL },
])("MCP transport against the demo server ($mode responses)", ({ mode, url }) => {
  const demo = () => control(url());
  const server = () => ({ url: url() });

  beforeEach(async () => {
    await demo().reset();
  });

  it("lists the eight tools with their schemas and annotations as the server gave them", async () => {
    const { tools, protocolVersion } = await listMcpTools(server(), CAPS);
    // The demo server speaks only the revisions before 2026-07-28: the server/discover probe fell back to initialize.
    expect(protocolVersion).toBe("2025-11-25");
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName).sort()).toEqual([
      "create_alert_from_chart",
      "create_dashboard",
      "create_kpi",
      "delete_dashboard",
      "echo",
      "get_dashboard",
      "list_dashboards",
      "update_dashboard",
    ]);
    for (const name of ["create_dashboard", "update_dashboard", "create_kpi", "create_alert_from_chart"]) {
      expect(byName[name]?.annotations, name).toMatchObject({ readOnlyHint: false, destructiveHint: false, openWorldHint: false });
    }
    expect(byName.update_dashboard?.annotations?.idempotentHint).toBe(true);
    expect(byName.delete_dashboard?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(byName.create_dashboard?.annotations?.idempotentHint).toBe(false);
    for (const name of ["list_dashboards", "get_dashboard", "echo"]) {
      expect(byName[name]?.annotations, name).toEqual({ readOnlyHint: true, openWorldHint: false });
    }
    expect(byName.create_dashboard?.description).toMatch(/Create a dashboard/);
    expect(byName.create_dashboard?.inputSchema).toMatchObject({
      type: "object",
      properties: { title: { type: "string" } },
      required: ["title"],
    });
    // Listing is not calling.
    expect((await demo().calls()).total).toBe(0);
  });

  it("opens a session first (connect before checkpoint): nothing is called until `call`, which calls exactly once", async () => {
    const opened = await openMcpSession(server(), CAPS);
    if (opened.kind !== "open") throw new Error(`expected an open session, got ${JSON.stringify(opened)}`);
    try {
      // Connected and initialized, and the server has received no tools/call.
      expect((await demo().calls()).total).toBe(0);
      expectResult(shapeAnswer(completed(await opened.session.call("create_dashboard", { title: "Opened first" })), CAPS.maxResponseBytes));
      // One call per session: a second is refused without leaving.
      expect(await opened.session.call("create_dashboard", { title: "Twice" })).toMatchObject({ kind: "failed", sent: false });
    } finally {
      await opened.session.close();
      await opened.session.close(); // idempotent
    }
    await sleep(RETRY_WINDOW_MS);
    expect((await demo().calls()).calls.map((c) => c.arguments)).toEqual([{ title: "Opened first" }]);
  });

  it("a `prepare` that fails (the call's tool listing) answers failed with the session closed, and nothing is called", async () => {
    let prepared = false;
    const before = (await demo().sessions()).open;
    const opened = await openMcpSession(server(), CAPS, async (session) => {
      prepared = true;
      expect(session.protocolVersion).not.toBe("unknown");
      throw new McpTransportError("transport_error", "tools/list failed: the server answered 500");
    });
    expect(prepared).toBe(true);
    expect(opened).toEqual({ kind: "failed", code: "transport_error", message: "tools/list failed: the server answered 500" });
    // The session it opened (initialize, for this older-revision server) was freed again.
    expect((await demo().sessions()).open).toBe(before);
    await sleep(RETRY_WINDOW_MS);
    expect((await demo().calls()).total).toBe(0);
  });

  it("calls create_dashboard exactly once and reports the result's facts", async () => {
    const outcome = expectResult(await callMcpTool(server(), "create_dashboard", { title: "Latency", panels: ["p99"] }, CAPS));
    expect(outcome.isError).toBe(false);
    expect(outcome.rpcError).toBeUndefined();
    const dashboard = JSON.parse(outcome.modelText) as { id: string; title: string; panels: string[] };
    expect(dashboard).toMatchObject({ id: "dash-1", title: "Latency", panels: ["p99"] });
    expect(outcome.summary).toBe(outcome.modelText);
    expect(outcome.contentBytes).toBe(utf8Bytes(JSON.stringify([{ type: "text", text: outcome.modelText }])));

    await sleep(RETRY_WINDOW_MS);
    const calls = await demo().calls();
    expect(calls.total).toBe(1);
    expect(calls.by_tool.create_dashboard).toBe(1);
    expect((await demo().state()).dashboards.map((d) => d.title)).toEqual(["Latency"]);
  });

  it("frees the server's session after each call", async () => {
    // Relative: a test that aborts its initialize may have left a session the server keeps.
    const before = (await demo().sessions()).open;
    expectResult(await callMcpTool(server(), "list_dashboards", {}, CAPS));
    await listMcpTools(server(), CAPS);
    expect((await demo().sessions()).open).toBe(before);
  });

  it("redacts credentials a result echoes from its summary; the real arguments reach the tool", async () => {
    const args = { note: "Authorization: Bearer tok-echo-1", password: "pw-echo-2", url: "https://u:pw-echo-3@h.example/x" };
    const outcome = expectResult(await callMcpTool(server(), "echo", args, CAPS));
    for (const secret of ["tok-echo-1", "pw-echo-2", "pw-echo-3"]) expect(outcome.summary).not.toContain(secret);
    expect(outcome.summary).toContain("echo: note=Authorization: [redacted]");
    // The model's copy is the tool's answer as given (it rests only in the run's object).
    expect(outcome.modelText).toContain("pw-echo-2");
    expect((await demo().calls()).calls.at(-1)?.arguments).toEqual(args);
  });

  it("reports a tool error (update_dashboard on an unknown id) as a result with isError", async () => {
    const outcome = expectResult(await callMcpTool(server(), "update_dashboard", { dashboard_id: "dash-404", title: "x" }, CAPS));
    expect(outcome.isError).toBe(true);
    expect(outcome.summary).toBe("Unknown dashboard_id: dash-404");
    expect((await demo().calls()).by_tool.update_dashboard).toBe(1);
  });

  it("reports a JSON-RPC error answer (error fault) as a result with isError", async () => {
    await demo().arm({ tool: "create_dashboard", mode: "error" });
    const outcome = expectResult(await callMcpTool(server(), "create_dashboard", { title: "Errors" }, CAPS));
    expect(outcome.isError).toBe(true);
    expect(outcome.rpcError).toEqual({ code: -32603, message: "Injected fault: error (create_dashboard)" });
    expect(outcome.summary).toContain("Injected fault: error (create_dashboard)");
    expect(outcome.contentBytes).toBe(0);
    await sleep(RETRY_WINDOW_MS);
    expect((await demo().calls()).total).toBe(1);
    expect((await demo().state()).dashboards).toEqual([]);
  });

  it("times out a call the server holds past callTimeoutMs: sent, never retried", async () => {
    await demo().arm({ tool: "create_dashboard", mode: "delay", delay_ms: FAULT_DELAY_MS });
    const started = Date.now();
    const outcome = expectFailed(
      await callMcpTool(server(), "create_dashboard", { title: "Slow" }, { ...CAPS, callTimeoutMs: SHORT_CALL_TIMEOUT_MS }),
    );
    const elapsed = Date.now() - started;
    expect(outcome).toMatchObject({
      code: "transport_timeout",
      sent: true,
      message: `tools/call timed out after ${SHORT_CALL_TIMEOUT_MS} ms`,
    });
    // Bounded by the cap (plus connect and the session DELETE), not by the server's delay.
    expect(elapsed).toBeGreaterThanOrEqual(SHORT_CALL_TIMEOUT_MS);
    expect(elapsed).toBeLessThan(FAULT_DELAY_MS);

    // Past the server's delay and then some: a retry would have been counted by now.
    await sleep(FAULT_DELAY_MS - elapsed + RETRY_WINDOW_MS);
    const calls = await demo().calls();
    expect(calls.total).toBe(1);
    expect(calls.by_tool.create_dashboard).toBe(1);
  });

  it("fails a call whose response is dropped after the commit: sent, committed once, never retried", async () => {
    await demo().arm({ tool: "create_dashboard", mode: "commit_then_drop" });
    const started = Date.now();
    const outcome = expectFailed(await callMcpTool(server(), "create_dashboard", { title: "Dropped" }, CAPS));
    const elapsed = Date.now() - started;
    expect(outcome.sent).toBe(true);
    // The break is seen as such (no waiting out the 5 s call timeout) in both response modes.
    expect(outcome.code).toBe("transport_error");
    expect(elapsed).toBeLessThan(CAPS.callTimeoutMs);

    await sleep(RETRY_WINDOW_MS);
    expect((await demo().state()).dashboards.map((d) => d.title)).toEqual(["Dropped"]);
    expect((await demo().calls()).total).toBe(1);
  });

  it("fails a response over maxResponseBytes as response_too_large, sent", async () => {
    // Above the initialize response (a few hundred bytes), below this call's result.
    const caps = { ...CAPS, maxResponseBytes: 1024 };
    const outcome = expectFailed(await callMcpTool(server(), "create_dashboard", { title: "x".repeat(4000) }, caps));
    expect(outcome).toMatchObject({ code: "response_too_large", sent: true });
    await sleep(RETRY_WINDOW_MS);
    expect((await demo().calls()).total).toBe(1);
  });

  it("fails at connect when even the initialize response is over the cap: not sent", async () => {
    const outcome = expectFailed(await callMcpTool(server(), "create_dashboard", { title: "Tiny cap" }, { ...CAPS, maxResponseBytes: 64 }));
    expect(outcome).toMatchObject({ code: "response_too_large", sent: false });
    await expect(listMcpTools(server(), { ...CAPS, maxResponseBytes: 64 })).rejects.toMatchObject({
      name: "McpTransportError",
      code: "response_too_large",
    });
    expect((await demo().calls()).total).toBe(0);
  });

  it("bounds the connect by connectTimeoutMs: transport_timeout, not sent", async () => {
    // No initialize handshake (a new server session, six tools registered, a loopback round
    // trip through workerd) completes within 1 ms.
    const outcome = expectFailed(await callMcpTool(server(), "create_dashboard", { title: "x" }, { ...CAPS, connectTimeoutMs: 1 }));
    expect(outcome).toMatchObject({ code: "transport_timeout", sent: false, message: "connect timed out after 1 ms" });
    await sleep(RETRY_WINDOW_MS);
    expect((await demo().calls()).total).toBe(0);
  });

  it("sends the config's headers on the MCP requests, and keeps them out of messages", async () => {
    // The demo server's /mcp-protected endpoint takes only `Bearer demo-mcp-token`: the right
    // header gets the call through, a wrong one is refused before anything is called, which
    // proves the configured header went out on the connect's requests (probe and handshake).
    const protectedUrl = url().replace(/\/mcp$/, "/mcp-protected");
    const secret = "Bearer not-the-token-s3cr3t";
    const refused = expectFailed(
      await callMcpTool({ url: protectedUrl, headers: { authorization: secret } }, "create_dashboard", { title: "x" }, CAPS),
    );
    expect(refused).toMatchObject({ code: "transport_error", sent: false });
    expect(refused.message).toMatch(/401/);
    expect(refused.message).not.toContain("s3cr3t");
    expect((await demo().calls()).total).toBe(0);
    const accepted = await callMcpTool(
      { url: protectedUrl, headers: { authorization: "Bearer demo-mcp-token" } },
      "create_dashboard",
      { title: "x" },
      CAPS,
    );
    expect(accepted).toMatchObject({ kind: "result", isError: false });
    expect((await demo().calls()).total).toBe(1);
  });

  it("summarises a long multi-byte result within 2 KiB without splitting a character", async () => {
    const title = "é🚀".repeat(1_000); // 6 000 UTF-8 bytes
    const outcome = expectResult(await callMcpTool(server(), "create_dashboard", { title }, CAPS));
    expect(utf8Bytes(outcome.summary)).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
    expect(utf8Bytes(outcome.summary)).toBeGreaterThan(SUMMARY_MAX_BYTES - 8);
    expect(outcome.summary.endsWith("…")).toBe(true);
    expect(outcome.summary).not.toContain("\uFFFD");
    expect(outcome.modelText).toContain(title);
    expect(outcome.contentBytes).toBeGreaterThan(6_000);
  });

  it("bounds the model text too: a result far over 64 KiB reaches the model cut at 64 KiB, on a character boundary", async () => {
    const MODEL_TEXT_BOUND_BYTES = 64 * 1024; // the bound this module promises the model loop
    const title = "é🚀".repeat(30_000); // 180 000 UTF-8 bytes, under the 1 MiB response cap
    const outcome = expectResult(await callMcpTool(server(), "create_dashboard", { title }, CAPS));
    expect(outcome.isError).toBe(false);
    expect(outcome.contentBytes).toBeGreaterThan(180_000);
    expect(MODEL_TEXT_MAX_BYTES).toBe(MODEL_TEXT_BOUND_BYTES);
    expect(utf8Bytes(outcome.modelText)).toBeLessThanOrEqual(MODEL_TEXT_BOUND_BYTES);
    expect(utf8Bytes(outcome.modelText)).toBeGreaterThan(MODEL_TEXT_BOUND_BYTES - 8);
    expect(outcome.modelText.endsWith("…")).toBe(true);
    expect(outcome.modelText).not.toContain("\uFFFD");
    // The text kept is the start of the result: the dashboard's id and the start of its title.
    expect(outcome.modelText).toContain("dash-1");
    expect(outcome.modelText).toContain("é🚀".repeat(1_000));
    expect(utf8Bytes(outcome.summary)).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
  });
});

describe("MCP transport against an unreachable server", () => {
  beforeEach(async () => {
    await control(env.DEMO_MCP_URL).reset();
  });

  it("reports connection refused as transport_error, not sent, and calls nothing", async () => {
    const outcome = expectFailed(await callMcpTool({ url: CLOSED_PORT_URL }, "create_dashboard", { title: "x" }, CAPS));
    expect(outcome).toMatchObject({ code: "transport_error", sent: false });
    expect(outcome.message).not.toBe("");
    expect((await control(env.DEMO_MCP_URL).calls()).total).toBe(0);
  });

  it("cannot open a session: answers failed (never throws), and nothing is received", async () => {
    expect(await openMcpSession({ url: CLOSED_PORT_URL }, CAPS)).toMatchObject({ kind: "failed", code: "transport_error" });
    expect(await openMcpSession({ url: "not a url" }, CAPS)).toMatchObject({ kind: "failed", code: "transport_error" });
    expect((await control(env.DEMO_MCP_URL).calls()).total).toBe(0);
  });

  it("throws McpTransportError from listMcpTools", async () => {
    const error = await listMcpTools({ url: CLOSED_PORT_URL }, CAPS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpTransportError);
    expect(error).toMatchObject({ code: "transport_error" });
  });

  it("never throws from callMcpTool, even for a URL that does not parse", async () => {
    const outcome = expectFailed(await callMcpTool({ url: "not a url" }, "create_dashboard", {}, CAPS));
    expect(outcome).toMatchObject({ code: "transport_error", sent: false });
  });
});

describe("truncateUtf8", () => {
  it("keeps text that fits and cuts on code point boundaries with an ellipsis", () => {
    expect(truncateUtf8("short", 10)).toBe("short");
    expect(truncateUtf8("abcdef", 6)).toBe("abcdef");
    // "…" is 3 bytes: 7 bytes leave 4 for text.
    expect(truncateUtf8("abcdefgh", 7)).toBe("abcd…");
    // 🚀 is 4 bytes; a 6-byte budget leaves 3 for text, too few for it.
    expect(truncateUtf8("🚀🚀", 6)).toBe("…");
    expect(truncateUtf8("a🚀🚀", 7)).toBe("a…");
    expect(truncateUtf8("a🚀🚀", 8)).toBe("a🚀…");
    expect(truncateUtf8("é".repeat(10), 8)).toBe("éé…");
    expect(truncateUtf8("abc", 2)).toBe("ab");
    expect(truncateUtf8("🚀", 2)).toBe("");
    for (let max = 0; max < 40; max += 1) {
      const cut = truncateUtf8("aé🚀中".repeat(5), max);
      expect(utf8Bytes(cut)).toBeLessThanOrEqual(max);
      expect(cut).not.toContain("\uFFFD");
    }
  });
});

/** The older demo server never answers input_required; a test that sees one fails here. */
function completed(answer: McpCallAnswer): Exclude<McpCallAnswer, { kind: "input_required" }> {
  if (answer.kind === "input_required") throw new Error("unexpected input_required answer");
  return answer;
}
