// Tool annotations are the server's claims (contract section 21), end to end
// over loopback against the real demo MCP server process: a Worker of its own
// names that one server twice, `demo` unmarked and `trusted` marked
// `"trust_annotations": true`. The same readOnlyHint tool runs without
// approval on the trusted name and is a mutation on the unmarked one (asked
// for, budgeted, given a durable row; not_in_budget when unlisted), and the
// server's destructiveHint raises delete_dashboard to confirm on either name,
// with the annotations on approval_requested as the server gave them.
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { EngineClient, type EngineEvent, type ScriptTurn } from "../../src/client";
import { demoCalls, demoReset } from "../support/e2e-client";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const UNMARKED_LIST = "mcp__demo__list_dashboards";
const UNMARKED_GET = "mcp__demo__get_dashboard";
const UNMARKED_DELETE = "mcp__demo__delete_dashboard";
const TRUSTED_LIST = "mcp__trusted__list_dashboards";
const TRUSTED_DELETE = "mcp__trusted__delete_dashboard";
const TRUSTED_CREATE = "mcp__trusted__create_dashboard";

let server: WorkerServer;
let engine: EngineClient;

beforeAll(async () => {
  server = await startWorkerServer({
    ...e2eVars(`${demo}/mcp`),
    APPROVAL_TIMEOUT_MS: "30000",
    MCP_SERVERS: JSON.stringify({ demo: { url: `${demo}/mcp` }, trusted: { url: `${demo}/mcp`, trust_annotations: true } }),
    // The unmarked server's get_dashboard is budgeted, its list_dashboards is not.
    MUTATION_BUDGET: JSON.stringify({ [UNMARKED_GET]: 1, [UNMARKED_DELETE]: 1, [TRUSTED_DELETE]: 1, [TRUSTED_CREATE]: 2 }),
    TOOL_POLICY: JSON.stringify({ [TRUSTED_CREATE]: { level: null } }),
  });
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

beforeEach(demoReset);

/** Runs `script` to its end, approving every approval it asks for (typing the tool name for confirm). */
async function runApproving(script: ScriptTurn[]): Promise<{ runId: string; events: EngineEvent[] }> {
  const { run_id: runId } = await engine.trigger({ message: "m", channel_id: `C-annotations-${Date.now()}`, script });
  const events: EngineEvent[] = [];
  for await (const event of engine.events(runId)) {
    events.push(event);
    if (event.type === "approval_requested") {
      await engine.decideApproval(runId, event.approval_id, {
        decision: "approve",
        ...(event.level === "confirm" ? { confirmation: event.tool_name } : {}),
      });
    }
  }
  return { runId, events };
}

const of = <T extends EngineEvent["type"]>(events: EngineEvent[], type: T, toolCallId: string) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === type && "tool_call_id" in e && e.tool_call_id === toolCallId);

describe("readOnlyHint counts only on a server marked trust_annotations", () => {
  it("runs the trusted server's read without approval; on the unmarked server the same tool is a mutation outside the budget", async () => {
    const { runId, events } = await runApproving([
      {
        tool_calls: [
          { tool_name: TRUSTED_LIST, tool_call_id: "trusted-read", arguments: {} },
          { tool_name: UNMARKED_LIST, tool_call_id: "unmarked-read", arguments: {} },
        ],
      },
    ]);
    expect(of(events, "tool_started", "trusted-read")[0]).toMatchObject({ approval_required: false });
    expect(of(events, "tool_execution", "trusted-read")[0]).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(of(events, "tool_execution", "trusted-read")[0]).not.toHaveProperty("mutation_id");
    // Mutating, so it needs approval and budget; unlisted, so nobody is asked and nothing is sent.
    expect(of(events, "tool_started", "unmarked-read")[0]).toMatchObject({ approval_required: true });
    expect(of(events, "approval_requested", "unmarked-read")).toEqual([]);
    expect(of(events, "tool_execution", "unmarked-read")[0]).toMatchObject({ execution_status: "not_executed", reason: "not_in_budget" });
    expect(await demoCalls()).toMatchObject({ total: 1, by_tool: { list_dashboards: 1 } });
    expect((await engine.runMutations(runId)).mutations).toEqual([]);
  });

  it("asks approval for a budgeted readOnlyHint tool of the unmarked server, showing its annotations, and records it as a mutation", async () => {
    const { runId, events } = await runApproving([
      { tool_calls: [{ tool_name: UNMARKED_GET, tool_call_id: "get-1", arguments: { dashboard_id: "dash-404" } }] },
    ]);
    const [requested] = of(events, "approval_requested", "get-1");
    expect(requested).toMatchObject({ level: "approve", annotations: { readOnlyHint: true, openWorldHint: false } });
    expect(requested?.annotations).not.toHaveProperty("destructiveHint");
    const [execution] = of(events, "tool_execution", "get-1");
    expect(execution).toMatchObject({ execution_status: "executed" });
    expect(execution?.mutation_id).toMatch(/^mut_/);
    expect(await demoCalls()).toMatchObject({ total: 1, by_tool: { get_dashboard: 1 } });
    const { mutations } = await engine.runMutations(runId);
    expect(mutations.map((m) => [m.tool_name, m.state])).toEqual([[UNMARKED_GET, "completed"]]);
  });
});

describe("destructiveHint: true raises the level to confirm, trusted or not", () => {
  it("asks confirm for delete_dashboard on both names, with the annotations as the server gave them, and runs it once confirmed", async () => {
    const create = (id: string) => ({ tool_name: TRUSTED_CREATE, tool_call_id: id, arguments: { title: id } });
    const { events } = await runApproving([
      { tool_calls: [create("create-1"), create("create-2")] },
      {
        tool_calls: [
          { tool_name: UNMARKED_DELETE, tool_call_id: "delete-unmarked", arguments: { dashboard_id: "dash-1" } },
          { tool_name: TRUSTED_DELETE, tool_call_id: "delete-trusted", arguments: { dashboard_id: "dash-2" } },
        ],
      },
    ]);
    for (const id of ["delete-unmarked", "delete-trusted"]) {
      expect(of(events, "approval_requested", id)[0]).toMatchObject({
        level: "confirm",
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      });
      expect(of(events, "tool_execution", id)[0]).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    }
    // The creates (host level null) were asked nothing, annotations or not.
    expect(events.filter((e) => e.type === "approval_requested").map((e) => "tool_call_id" in e && e.tool_call_id)).toEqual([
      "delete-unmarked",
      "delete-trusted",
    ]);
    expect(await demoCalls()).toMatchObject({ total: 4, by_tool: { create_dashboard: 2, delete_dashboard: 2 } });
  });
});
