// What the host config decides, end to end, on a Worker of its own whose
// config narrows the e2e defaults: a host call ceiling that binds (and a
// trigger cannot widen), TOOL_POLICY's read_only override in both directions,
// an automatic approval whose identity repeats (replay_blocked), and a
// response over MCP_MAX_RESPONSE_BYTES (response_too_large on the stream).
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { EngineClient, type EngineEvent, type ScriptTurn } from "../../src/client";
import { demoCalls, demoReset } from "../support/e2e-client";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const CREATE = "mcp__demo__create_dashboard";
const UPDATE = "mcp__demo__update_dashboard";
const LIST = "mcp__demo__list_dashboards";
/** The host's ceiling here: below the default 25 and below what the trigger asks for. */
const HOST_MAX_TOOL_CALLS = 2;
/** Room for the initialize and tools/list answers, not for a 20 KB dashboard title echoed back. */
const HOST_MAX_RESPONSE_BYTES = 16_384;

let server: WorkerServer;
let engine: EngineClient;

beforeAll(async () => {
  server = await startWorkerServer({
    ...e2eVars(`${demo}/mcp`),
    MAX_TOOL_CALLS: String(HOST_MAX_TOOL_CALLS),
    MCP_MAX_RESPONSE_BYTES: String(HOST_MAX_RESPONSE_BYTES),
    TOOL_POLICY: JSON.stringify({
      // Mutating by default (no readOnlyHint), declared read-only by the host: no approval, no row, no budget.
      [CREATE]: { read_only: true },
      // readOnlyHint: true on the server, declared mutating by the host: outside the budget.
      [LIST]: { read_only: false },
      // A mutation approved automatically (level null): its row's approval_id is the automatic one.
      [UPDATE]: { level: null },
    }),
  });
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

beforeEach(demoReset);

async function runToEnd(script: ScriptTurn[], extra: { max_tool_calls?: number } = {}): Promise<{ runId: string; events: EngineEvent[] }> {
  const { run_id: runId } = await engine.trigger({ message: "m", channel_id: `C-host-${Date.now()}`, script, ...extra });
  const events: EngineEvent[] = [];
  for await (const event of engine.events(runId)) events.push(event);
  return { runId, events };
}

const of = (events: EngineEvent[], type: string, toolCallId: string) =>
  events.filter((e) => e.type === type && "tool_call_id" in e && e.tool_call_id === toolCallId);

describe("the host's call ceiling", () => {
  it("binds below a trigger's larger max_tool_calls: a trigger narrows the ceiling, never widens it", async () => {
    // Read-only calls need no approval and no budget, so only the ceiling can stop them.
    const reads = ["read-1", "read-2", "read-3", "read-4"].map((id) => ({
      tool_name: "mcp__demo__get_dashboard",
      tool_call_id: id,
      arguments: { dashboard_id: "dash-1" },
    }));
    const { events } = await runToEnd([{ tool_calls: reads }], { max_tool_calls: 10 });
    const outcomes = Object.fromEntries(
      reads.map(({ tool_call_id }) => {
        const [execution] = of(events, "tool_execution", tool_call_id);
        return [tool_call_id, execution && "execution_status" in execution ? [execution.execution_status, execution.reason ?? null] : null];
      }),
    );
    expect(outcomes).toEqual({
      "read-1": ["executed", null],
      "read-2": ["executed", null],
      "read-3": ["not_executed", "call_ceiling"],
      "read-4": ["not_executed", "call_ceiling"],
    });
    expect((await demoCalls()).total).toBe(HOST_MAX_TOOL_CALLS);
    expect(events.at(-1)?.type).toBe("run_completed");
  });
});

describe("TOOL_POLICY read_only override", () => {
  it("read_only: true runs a write with no approval and no durable row; read_only: false makes a read a mutation outside the budget", async () => {
    const { runId, events } = await runToEnd([
      {
        tool_calls: [
          { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "declared read-only" } },
          { tool_name: LIST, tool_call_id: "read-1", arguments: {} },
        ],
      },
    ]);
    expect(of(events, "tool_started", "write-1")[0]).toMatchObject({ approval_required: false });
    expect(of(events, "approval_requested", "write-1")).toEqual([]);
    expect(of(events, "tool_execution", "write-1")[0]).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(of(events, "tool_execution", "write-1")[0]).not.toHaveProperty("mutation_id");
    expect(of(events, "tool_execution", "read-1")[0]).toMatchObject({ execution_status: "not_executed", reason: "not_in_budget" });
    expect(of(events, "tool_completed", "read-1")[0]).toMatchObject({ approved: false });
    expect(await demoCalls()).toMatchObject({ total: 1, by_tool: { create_dashboard: 1 } });
    expect((await engine.runMutations(runId)).mutations).toEqual([]);
  });
});

describe("replay_blocked", () => {
  it("refuses a second automatic approval of the same call identity in a run: one dispatch, one row", async () => {
    const update = { tool_name: UPDATE, tool_call_id: "write-1", arguments: { dashboard_id: "dash-1", title: "renamed" } };
    const { runId, events } = await runToEnd([{ tool_calls: [update] }, { tool_calls: [update] }, { text: "done" }]);
    const executions = of(events, "tool_execution", "write-1");
    expect(executions).toHaveLength(2);
    expect(executions[0]).toMatchObject({ execution_status: "executed" });
    expect(executions[1]).toMatchObject({ execution_status: "not_executed", reason: "replay_blocked" });
    expect(of(events, "tool_execution_started", "write-1")).toEqual([]);
    expect(await demoCalls()).toMatchObject({ total: 1, by_tool: { update_dashboard: 1 } });
    const { mutations } = await engine.runMutations(runId);
    expect(mutations).toHaveLength(1);
    expect(mutations[0]).toMatchObject({ tool_call_id: "write-1", approval_id: null, dispatched: true });
  });
});

describe("response_too_large", () => {
  it("is reported on the stream as executed with error.code response_too_large: the call left", async () => {
    const { run_id: runId } = await engine.trigger({
      message: "m",
      // create_dashboard (read-only by this host's policy, so automatic) echoes the 20 KB title back.
      script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "big-1", arguments: { title: "t".repeat(20_000) } }] }],
    });
    const events: EngineEvent[] = [];
    for await (const event of engine.events(runId)) events.push(event);
    expect(of(events, "tool_execution", "big-1")[0]).toMatchObject({ execution_status: "executed", error: { code: "response_too_large" } });
    expect(of(events, "tool_execution", "big-1")[0]).not.toHaveProperty("result");
    expect(await demoCalls()).toMatchObject({ total: 1, by_tool: { create_dashboard: 1 } });
  });
});
