// Contract section 23's tool identity, end to end over loopback: the shared Worker (wrangler dev,
// the global setup's) and the real demo MCP server process. An approval is bound to the tool's
// `tool_digest` as listed when the call was proposed; when the tool's inputSchema changes at the
// server, or the tool is removed, before the approval is decided, the approved call ends
// not_executed(tool_changed) with the digest now listed (null when gone), no tools/call reaches
// the server and its row is not_executed. An unchanged tool runs. The expected digests are
// computed here from the contract's definition (RFC 8785 via `canonicalize`, SHA-256 via
// node:crypto) over the tool as an MCP client lists it, never by the engine's code.
import { Client, StreamableHTTPClientTransport, type Tool } from "@modelcontextprotocol/client";
import { canonicalize } from "json-canonicalize";
import { createHash } from "node:crypto";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { demo, demoCalls, demoReset, engine, KPI, Scenario } from "../support/e2e-client";

/** The MCP_SERVERS url as the shared Worker is configured with it (global-setup.ts). */
const SERVER_URL = `${demo}/mcp`;

beforeEach(demoReset);
// The demo server is shared with the other files: its tools are left as they were.
afterAll(demoReset);

/** The tool's digest by contract section 23, over the tool as the demo server lists it now. */
async function listedDigest(name: string): Promise<string | null> {
  const client = new Client({ name: "tool-identity-e2e", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await client.connect(new StreamableHTTPClientTransport(new URL(SERVER_URL)));
  try {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? undefined : { cursor });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    const tool = tools.find((t) => t.name === name);
    if (tool === undefined) return null;
    const { title, description, inputSchema, outputSchema, annotations } = tool;
    const form = canonicalize({ server_url: SERVER_URL, name, title, description, inputSchema, outputSchema, annotations });
    return `sha256:${createHash("sha256")
      .update(form ?? "", "utf8")
      .digest("hex")}`;
  } finally {
    await client.close();
  }
}

async function changeTool(change: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${demo}/control/tools`, { method: "POST", body: JSON.stringify({ tool: "create_kpi", ...change }) });
  expect(res.status, await res.text()).toBe(200);
}

/** A run proposing one create_kpi call; resolves once its approval is asked. */
async function proposeKpi(label: string) {
  const run = await Scenario.start(
    [{ tool_calls: [{ tool_name: KPI, tool_call_id: "kpi-1", arguments: { name: label, query: "q" } }] }, { text: "done" }],
    {
      channel_id: `C-tool-identity-${label}-${Date.now()}`,
    },
  );
  const requested = await run.waitFor("approval_requested", "kpi-1");
  return { run, requested };
}

describe("an approval bound to the tool's identity (contract section 23)", () => {
  it("carries the tool's digest on approval_requested and the row, and runs the unchanged tool", async () => {
    const digest = await listedDigest("create_kpi");
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const { run, requested } = await proposeKpi("unchanged");
    expect(requested.tool_digest).toBe(digest);
    await run.decide(requested.approval_id!, { decision: "approve" });
    await run.toEnd();
    const execution = run.one("tool_execution", "kpi-1");
    expect(execution).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(execution).not.toHaveProperty("tool_digest");
    const row = await engine.mutation(execution.mutation_id as string);
    expect(row).toMatchObject({ state: "completed", dispatched: true, tool_digest: digest });
    expect((await demoCalls()).by_tool.create_kpi).toBe(1);
  });

  it.each([
    ["whose inputSchema changed", { add_input: "owner" }],
    ["that was removed", { removed: true }],
  ] as const)("ends a call to a tool %s after it was asked not_executed(tool_changed), sending nothing", async (_what, change) => {
    const approved = await listedDigest("create_kpi");
    const { run, requested } = await proposeKpi(`changed-${"removed" in change ? "removed" : "schema"}`);
    expect(requested.tool_digest).toBe(approved);
    // The server changes the tool while the person decides.
    await changeTool(change);
    const now = await listedDigest("create_kpi");
    expect(now).not.toBe(approved);
    await run.decide(requested.approval_id!, { decision: "approve" });
    await run.toEnd();
    expect(run.shape()).toEqual([
      "run_started",
      "tool_started:kpi-1",
      "approval_requested:kpi-1",
      "approval_resolved:kpi-1",
      "tool_execution_started:kpi-1",
      "tool_execution:kpi-1",
      "tool_completed:kpi-1",
      "assistant_message",
      "run_completed",
    ]);
    const execution = run.one("tool_execution", "kpi-1");
    // The digest now listed: another one, or null for a tool that is gone.
    expect(execution).toMatchObject({ execution_status: "not_executed", reason: "tool_changed", tool_digest: now });
    expect(run.one("tool_completed", "kpi-1")).toMatchObject({ approved: true });
    expect((await demoCalls()).by_tool.create_kpi).toBe(0);
    const row = await engine.mutation(execution.mutation_id as string);
    expect(row).toMatchObject({ state: "not_executed", dispatched: false, reason: "tool_changed", tool_digest: approved });
  });
});
