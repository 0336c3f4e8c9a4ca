// Issue 4: the write-ahead pipeline of approved mutations under storage and
// engine faults, end to end inside workerd: real runs driven through
// SELF.fetch, real D1 (miniflare), the real 16-slot storage pool, and the
// real demo MCP server process (its /control API counts every tools/call on
// arrival, so "sent at most once" is checked on the server's side).
//
// Faults come from three places:
//  - the storage seam (storage-seam.ts) installed in the run's object right
//    after the trigger: it stalls or fails chosen D1 statements (checkpoint,
//    settlement, intent);
//  - the storage pool, filled by holding its slots directly;
//  - the demo server's faults (delay, commit_then_drop) and the object's
//    abort (a restart in the middle of the pipeline).
//
// Bindings (vitest.config.ts): MCP_SERVERS.demo is DEMO_MCP_URL,
// MUTATION_BUDGET allows create_dashboard 5 times per run, STORAGE_WAIT_MS is
// 300 and MCP_CALL_TIMEOUT_MS 2000.
import { env, runInDurableObject } from "cloudflare:test";
import type { EventSourceMessage } from "eventsource-parser";
import { beforeEach, describe, expect, it } from "vitest";
import { globalStoragePool, POOL_CAPACITY_SLOTS } from "../../durable-objects/storage-pool";
import { api, openEvents, runStub, sleep, SseReader, trigger } from "./helpers";
import { StorageSeam } from "./storage-seam";

const STORAGE_WAIT_MS = 300;
const TOOL = "mcp__demo__create_dashboard";
const DEMO_TOOL = "create_dashboard";

/** The events of one human-approved call, in order, when it reaches execution. */
const APPROVED_CALL = ["tool_started", "approval_requested", "approval_resolved", "tool_execution_started", "tool_execution", "tool_completed"];

// ---- the demo MCP server's control API ----------------------------------------

interface DemoCall {
  tool: string;
  arguments: Record<string, unknown>;
}

const demo = {
  at: (path: string) => new URL(path, env.DEMO_MCP_URL).toString(),
  async reset(): Promise<void> {
    const res = await fetch(demo.at("/control/reset"), { method: "POST" });
    expect(res.status).toBe(200);
    await res.body?.cancel();
  },
  async calls(): Promise<DemoCall[]> {
    const res = await fetch(demo.at("/control/calls"));
    expect(res.status).toBe(200);
    return ((await res.json()) as { calls: DemoCall[] }).calls;
  },
  /** tools/call requests of create_dashboard with this title that reached the server. */
  async count(title: string): Promise<number> {
    return (await demo.calls()).filter((c) => c.tool === DEMO_TOOL && c.arguments.title === title).length;
  },
  async arm(fault: { tool: string; mode: "delay" | "error" | "commit_then_drop"; delay_ms?: number }): Promise<void> {
    const res = await fetch(demo.at("/control/faults"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(fault),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.body?.cancel();
  },
  async dashboards(title: string): Promise<unknown[]> {
    const res = await fetch(demo.at("/control/state"));
    const state = (await res.json()) as { dashboards: { title: string }[] };
    return state.dashboards.filter((d) => d.title === title);
  },
};

// ---- runs -------------------------------------------------------------------------

let serial = 0;
/** A title (and so arguments digest) and a channel no other test uses. */
function fresh(label: string): { title: string; channel: string } {
  const id = `${label}-${++serial}-${crypto.randomUUID().slice(0, 8)}`;
  return { title: `dash ${id}`, channel: `C-${id}` };
}

function writeScript(title: string, toolCallId = "write-1") {
  return [{ tool_calls: [{ tool_name: TOOL, tool_call_id: toolCallId, arguments: { title } }] }];
}

async function startRun(title: string, channel: string, toolCallId = "write-1"): Promise<string> {
  const { status, json } = await trigger({ message: `create ${title}`, channel_id: channel, user_id: "U", script: writeScript(title, toolCallId) });
  expect(status).toBe(202);
  return json.run_id as string;
}

async function installSeam(runId: string, seam: StorageSeam): Promise<void> {
  await runInDurableObject(runStub(runId), (instance) => instance.useOutcomeDbForTests(seam));
}

async function summary(runId: string): Promise<any> {
  const res = await api(`/api/runs/${runId}`);
  expect(res.status).toBe(200);
  return res.json();
}

/** The run's one pending approval, once the tool turn has been announced. */
async function pendingApproval(runId: string): Promise<string> {
  let approvalId: string | undefined;
  await expect
    .poll(async () => {
      approvalId = (await summary(runId)).pending_approvals[0]?.approval_id;
      return approvalId;
    }, { timeout: 5_000, interval: 20 })
    .toMatch(/^approval_/);
  return approvalId!;
}

async function approve(runId: string, approvalId: string): Promise<void> {
  const res = await api(`/api/runs/${runId}/approvals/${approvalId}`, {
    method: "POST",
    body: JSON.stringify({ decision: "approve", decided_by: "U" }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  expect(await res.json()).toEqual({ approval_id: approvalId, decision: "approved", status: "resolved" });
}

/** The whole run from sequence 1 to its terminal event, heartbeats left out. */
async function finishedRun(runId: string): Promise<any[]> {
  const reader = new SseReader(await openEvents(runId));
  const events = await reader.readToEnd();
  return events.map((e: EventSourceMessage) => JSON.parse(e.data)).filter((e) => e.type !== "heartbeat");
}

const typesOf = (events: any[]) => events.map((e) => e.type as string);
const forCall = (events: any[], toolCallId: string) => events.filter((e) => e.tool_call_id === toolCallId);
const only = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1);
  return items[0]!;
};

async function mutation(mutationId: string): Promise<any> {
  const res = await api(`/api/mutations/${mutationId}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json();
}

async function runMutations(runId: string): Promise<any[]> {
  const res = await api(`/api/runs/${runId}/mutations`);
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { mutations: any[] }).mutations;
}

function execution(events: any[], toolCallId = "write-1"): any {
  return only(forCall(events, toolCallId).filter((e) => e.type === "tool_execution"), "one tool_execution");
}

/** The projection every row of these tests shares. */
function rowOf(runId: string, channel: string, approvalId: string, mutationId: string, toolCallId = "write-1") {
  return {
    schema: "mutation_outcome/v1",
    mutation_id: mutationId,
    run_id: runId,
    channel_id: channel,
    delivery_id: null,
    tool_call_id: toolCallId,
    approval_id: approvalId,
    tool_name: TOOL,
    arguments_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
  };
}

beforeEach(async () => {
  await demo.reset();
});

// ---- 1, 2: the checkpoint --------------------------------------------------------------

describe("the write-ahead checkpoint", () => {
  it("held past STORAGE_WAIT_MS: not_executed(storage_unavailable), nothing sent; the row ends not_executed once the hold lifts", async () => {
    const { title, channel } = fresh("blocked-checkpoint");
    const runId = await startRun(title, channel);
    // The backend holds the row's lock: the checkpoint and every later write on the row queue behind it.
    const seam = new StorageSeam(env.DB).stall("checkpoint").stall("settlement");
    await installSeam(runId, seam);
    const approvalId = await pendingApproval(runId);
    await approve(runId, approvalId);

    const events = await finishedRun(runId);
    expect(typesOf(events)).toEqual(["run_started", ...APPROVED_CALL, "run_completed"]);
    expect(typesOf(forCall(events, "write-1"))).toEqual(APPROVED_CALL);
    const exec = execution(events);
    expect(exec).toStrictEqual({
      ...envelope(exec, runId, channel),
      type: "tool_execution",
      tool_name: TOOL,
      tool_call_id: "write-1",
      approval_id: approvalId,
      execution_status: "not_executed",
      reason: "storage_unavailable",
      mutation_id: expect.stringMatching(/^mut_/),
    });
    expect(only(forCall(events, "write-1").filter((e) => e.type === "tool_completed"), "tool_completed").approved).toBe(true);

    // While held: the checkpoint never reached D1, and nothing reached the server.
    expect(seam.held("checkpoint")).toHaveLength(1);
    expect(await mutation(exec.mutation_id)).toStrictEqual({
      ...rowOf(runId, channel, approvalId, exec.mutation_id),
      state: "unresolved",
      dispatched: false,
      created_at: expect.any(String),
    });
    expect(await demo.count(title)).toBe(0);

    // The lock passes on: the late checkpoint lands first, then the not_executed settlement.
    await seam.release();
    await expect.poll(async () => (await mutation(exec.mutation_id)).state, { timeout: 3_000, interval: 25 }).toBe("not_executed");
    const row = await mutation(exec.mutation_id);
    expect(row).toStrictEqual({
      ...rowOf(runId, channel, approvalId, exec.mutation_id),
      state: "not_executed",
      // The late checkpoint did land: "may have left" -- but the engine knows it did not send, and says so.
      dispatched: true,
      reason: "storage_unavailable",
      created_at: expect.any(String),
      settled_at: expect.any(String),
    });
    expect(await runMutations(runId)).toStrictEqual([row]);
    await sleep(STORAGE_WAIT_MS);
    expect(await demo.count(title)).toBe(0);
  });

  it("failing (D1 error): not_executed(storage_unavailable) at once, nothing sent, row not_executed", async () => {
    const { title, channel } = fresh("failed-checkpoint");
    const runId = await startRun(title, channel);
    const seam = new StorageSeam(env.DB).fail("checkpoint");
    await installSeam(runId, seam);
    const approvalId = await pendingApproval(runId);
    await approve(runId, approvalId);

    const events = await finishedRun(runId);
    expect(typesOf(events)).toEqual(["run_started", ...APPROVED_CALL, "run_completed"]);
    const exec = execution(events);
    expect(exec).toMatchObject({ approval_id: approvalId, execution_status: "not_executed", reason: "storage_unavailable", mutation_id: expect.stringMatching(/^mut_/) });
    expect(exec).not.toHaveProperty("error");
    expect(exec).not.toHaveProperty("result");
    expect(seam.seen("checkpoint").map((e) => e.status)).toEqual(["failed"]);

    await expect.poll(async () => (await mutation(exec.mutation_id)).state, { timeout: 3_000, interval: 25 }).toBe("not_executed");
    expect(await runMutations(runId)).toStrictEqual([
      {
        ...rowOf(runId, channel, approvalId, exec.mutation_id),
        state: "not_executed",
        dispatched: false,
        reason: "storage_unavailable",
        created_at: expect.any(String),
        settled_at: expect.any(String),
      },
    ]);
    expect(await demo.count(title)).toBe(0);
  });
});

function envelope(event: any, runId: string, channel: string) {
  return { protocol_version: "v2", sequence: event.sequence, run_id: runId, channel_id: channel, at: expect.any(String) };
}
