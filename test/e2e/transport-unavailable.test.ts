// Connect before checkpoint (contract section 7), end to end: a Worker of its
// own whose host config names an MCP server at a port nothing listens on
// (bound once to find a free port, then closed). An approved mutation for it
// ends not_executed(transport_unavailable) and its durable row not_executed
// with dispatched: false (no checkpoint was ever written: the session could
// not be opened, so nothing was sent); a read-only call to it also ends
// transport_unavailable, since nothing was sent. Nothing reached the demo MCP
// server, which serves the same tools at its real port.
import { createServer } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { EngineClient, type EngineEvent } from "../../src/client";
import { demoCalls, demoReset } from "../support/e2e-client";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const DOWN_WRITE = "mcp__down__create_dashboard";
const DOWN_READ = "mcp__down__list_dashboards";

let server: WorkerServer;
let engine: EngineClient;

/** A loopback port that was free a moment ago and has nothing listening on it now. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return address.port;
}

beforeAll(async () => {
  const base = e2eVars(`${demo}/mcp`);
  const servers = JSON.parse(base.MCP_SERVERS!) as Record<string, unknown>;
  server = await startWorkerServer({
    ...base,
    MCP_SERVERS: JSON.stringify({ ...servers, down: { url: `http://127.0.0.1:${await closedPort()}/mcp` } }),
    MUTATION_BUDGET: JSON.stringify({ ...(JSON.parse(base.MUTATION_BUDGET!) as Record<string, number>), [DOWN_WRITE]: 1 }),
    // The down server cannot list its tools, so the host says which is read-only.
    TOOL_POLICY: JSON.stringify({ [DOWN_READ]: { read_only: true } }),
  });
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

beforeEach(demoReset);

const of = (events: EngineEvent[], type: string, toolCallId: string) =>
  events.filter((e) => e.type === type && "tool_call_id" in e && e.tool_call_id === toolCallId);

describe("an MCP server that cannot be reached", () => {
  it("ends an approved mutation not_executed(transport_unavailable) with a dispatched: false row, and a read too; nothing is received", async () => {
    const channel = `C-down-${Date.now()}`;
    const { run_id: runId } = await engine.trigger({
      message: "m",
      channel_id: channel,
      script: [
        {
          tool_calls: [
            { tool_name: DOWN_READ, tool_call_id: "read-1", arguments: {} },
            { tool_name: DOWN_WRITE, tool_call_id: "write-1", arguments: { title: "never sent" } },
          ],
        },
      ],
    });
    const events: EngineEvent[] = [];
    let approved = false;
    for await (const event of engine.events(runId)) {
      events.push(event);
      if (event.type === "approval_requested" && !approved) {
        approved = true;
        await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
      }
    }
    expect(events.at(-1)?.type).toBe("run_completed");

    const [read] = of(events, "tool_execution", "read-1");
    expect(read).toMatchObject({ execution_status: "not_executed", reason: "transport_unavailable" });
    expect(read).not.toHaveProperty("mutation_id");

    expect(of(events, "tool_execution_started", "write-1")).toHaveLength(1);
    const [write] = of(events, "tool_execution", "write-1");
    expect(write).toMatchObject({ execution_status: "not_executed", reason: "transport_unavailable" });
    expect(write).not.toHaveProperty("error");
    const mutationId = (write as { mutation_id?: string }).mutation_id;
    expect(mutationId).toMatch(/^mut_/);
    const [resolved] = of(events, "approval_resolved", "write-1");

    // The row settles in the background: read until it is.
    let row = await engine.mutation(mutationId!);
    for (let i = 0; i < 100 && row.state === "unresolved"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      row = await engine.mutation(mutationId!);
    }
    expect(row).toMatchObject({
      mutation_id: mutationId,
      run_id: runId,
      channel_id: channel,
      tool_call_id: "write-1",
      tool_name: DOWN_WRITE,
      state: "not_executed",
      dispatched: false,
      reason: "transport_unavailable",
      approved_by: "token:root",
    });
    expect(row).not.toHaveProperty("error");
    // approved_at is the moment of the decision: no later than approval_resolved was appended.
    expect(Date.parse(row.approved_at!)).toBeLessThanOrEqual(Date.parse(resolved!.at));
    expect((await engine.runMutations(runId)).mutations).toHaveLength(1);

    // Nothing reached any MCP server: the demo server serves these tools, at its own port, and saw nothing.
    expect((await demoCalls()).total).toBe(0);
  });
});
