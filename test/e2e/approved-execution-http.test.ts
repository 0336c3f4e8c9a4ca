// The release note's HTTP suite (tests/test_approved_execution_http.py there):
// the Worker under wrangler dev, the demo MCP server as a separate process,
// decisions and replays over real loopback HTTP. It validates the committed
// fixtures and covers create/update dashboard plus synthetic KPI and alert
// writes, cancellation, expiry, transport timeout, HTTP heartbeat delivery,
// two consecutive subscriber losses, replay identity, no ambiguous retry and
// terminal fencing. Every scenario asserts the exact ordered list of event
// types and identities its subscriber received (heartbeats interleave and are
// checked for contiguity), and the demo server's own call count proves what
// reached it.
import { readFile } from "node:fs/promises";
import { EventSource } from "eventsource";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createHookDispatcher } from "../../src/client/adapter-hooks";
import { ApiError } from "../../src/client";
import { argumentsDigest } from "../../src/execution/arguments-digest";
import { generateFixtures, serialiseFixtures } from "../support/approval-execution-fixtures";
import { startCuttingProxy, type CuttingProxy } from "../support/cutting-proxy";
import {
  ALERT,
  armFault,
  ASK_THEN_WRITE,
  auth,
  CREATE,
  demo,
  demoCalls,
  demoReset,
  type Event,
  engine,
  KPI,
  LIST,
  rawEvents,
  Scenario,
  slowScript,
  token,
  UPDATE,
  url,
} from "../support/e2e-client";
import { eventIds, eventTypes } from "../support/sse-client";

const approvedAndRun = (id: string) => [
  `tool_started:${id}`,
  `approval_requested:${id}`,
  `approval_resolved:${id}`,
  `tool_execution_started:${id}`,
  `tool_execution:${id}`,
  `tool_completed:${id}`,
];

beforeEach(demoReset);

/** The ApiError a refused client call threw (fails the test if the call succeeded). */
async function refusal(call: Promise<unknown>): Promise<ApiError> {
  const outcome = await call.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a refusal, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(ApiError);
  return outcome.error as ApiError;
}

describe("approved mutations", () => {
  it("creates and then updates a dashboard, each after a person's approval", async () => {
    const s = await Scenario.start([
      { text: "Creating it.", tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "Latency" } }] },
      { tool_calls: [{ tool_name: UPDATE, tool_call_id: "write-2", arguments: { dashboard_id: "dash-1", title: "Latency p99" } }] },
      { text: "Done." },
    ]);
    const first = await s.approve("write-1");
    const second = await s.approve("write-2");
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "assistant_message",
      ...approvedAndRun("write-1"),
      ...approvedAndRun("write-2"),
      "assistant_message",
      "run_completed",
    ]);
    expect(first.approval_id).not.toBe(second.approval_id);
    expect(s.one("approval_requested", "write-1")).toMatchObject({ tool_name: CREATE, level: "approve", arguments: { title: "Latency" } });
    expect(s.one("approval_resolved", "write-1")).toMatchObject({
      approval_id: first.approval_id,
      decision: "approved",
      decided_by: "token:root",
    });
    const started = s.one("tool_execution_started", "write-1");
    expect(Object.keys(started).sort()).toEqual([
      "approval_id",
      "at",
      "channel_id",
      "protocol_version",
      "run_id",
      "sequence",
      "tool_call_id",
      "tool_name",
      "type",
    ]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({
      execution_status: "executed",
      approval_id: first.approval_id,
      result: { is_error: false },
    });
    expect(s.one("tool_execution", "write-2")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(s.one("tool_completed", "write-2")).toMatchObject({ approved: true, duration_ms: expect.any(Number) });
    expect(s.events.at(-1)).toMatchObject({ type: "run_completed", text: "Done.", tool_calls: 2 });
    const calls = await demoCalls();
    expect(calls.by_tool).toMatchObject({ create_dashboard: 1, update_dashboard: 1 });
    const state = (await (await fetch(`${demo}/control/state`)).json()) as any;
    expect(state.dashboards).toEqual([expect.objectContaining({ id: "dash-1", title: "Latency p99" })]);
  });

  it("runs synthetic KPI and alert writes within their budget and refuses the ones beyond it", async () => {
    const s = await Scenario.start([
      {
        tool_calls: [
          { tool_name: KPI, tool_call_id: "kpi-1", arguments: { name: "p99", query: "latency" } },
          { tool_name: KPI, tool_call_id: "kpi-2", arguments: { name: "p50", query: "latency" } },
          { tool_name: ALERT, tool_call_id: "alert-1", arguments: { dashboard_id: "dash-9", chart: "p99", threshold: 250 } },
          { tool_name: "mcp__demo__delete_everything", tool_call_id: "nope-1", arguments: {} },
        ],
      },
    ]);
    // One decision at a time, each after the previous call ended, so the expected order is exact.
    await s.approve("kpi-1");
    await s.waitFor("tool_completed", "kpi-1");
    await s.approve("kpi-2");
    await s.waitFor("tool_completed", "kpi-2");
    await s.approve("alert-1", { confirmation: ALERT });
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:kpi-1",
      "approval_requested:kpi-1",
      "tool_started:kpi-2",
      "approval_requested:kpi-2",
      "tool_started:alert-1",
      "approval_requested:alert-1",
      "tool_started:nope-1",
      "tool_execution:nope-1",
      "tool_completed:nope-1",
      "approval_resolved:kpi-1",
      "tool_execution_started:kpi-1",
      "tool_execution:kpi-1",
      "tool_completed:kpi-1",
      "approval_resolved:kpi-2",
      "tool_execution_started:kpi-2",
      "tool_execution:kpi-2",
      "tool_completed:kpi-2",
      "approval_resolved:alert-1",
      "tool_execution_started:alert-1",
      "tool_execution:alert-1",
      "tool_completed:alert-1",
      "run_completed",
    ]);
    expect(s.one("tool_execution", "nope-1")).toMatchObject({ execution_status: "not_executed", reason: "not_in_budget" });
    expect(s.one("tool_completed", "nope-1")).toMatchObject({ approved: false });
    expect(s.one("tool_execution", "kpi-1")).toMatchObject({ execution_status: "executed" });
    // Approval adds no allowance: the KPI budget is 1 per run.
    expect(s.one("tool_execution", "kpi-2")).toMatchObject({ execution_status: "not_executed", reason: "budget_exhausted" });
    expect(s.one("tool_completed", "kpi-2")).toMatchObject({ approved: true });
    expect(s.one("approval_requested", "alert-1")).toMatchObject({ level: "confirm" });
    // The demo server has no dash-9: the call left, and the tool said no.
    expect(s.one("tool_execution", "alert-1")).toMatchObject({
      execution_status: "executed",
      result: { is_error: true },
      error: { code: "tool_error" },
    });
    expect((await demoCalls()).by_tool).toMatchObject({ create_kpi: 1, create_alert_from_chart: 1 });
  });

  it("needs the tool name as confirmation for a confirm-level approval", async () => {
    const s = await Scenario.start([
      { tool_calls: [{ tool_name: ALERT, tool_call_id: "alert-1", arguments: { dashboard_id: "dash-1", chart: "c", threshold: 1 } }] },
    ]);
    const requested = await s.waitFor("approval_requested", "alert-1");
    const missing = await refusal(s.decide(requested.approval_id!, { decision: "approve" }));
    expect(missing).toMatchObject({ status: 400, code: "confirmation_mismatch" });
    const wrong = await refusal(s.decide(requested.approval_id!, { decision: "approve", confirmation: "create_alert_from_chart" }));
    expect(wrong).toMatchObject({ status: 400, code: "confirmation_mismatch" });
    const summary = await engine.summary(s.runId);
    expect(summary.pending_approvals).toEqual([
      expect.objectContaining({ approval_id: requested.approval_id, tool_call_id: "alert-1", tool_name: ALERT }),
    ]);
    expect(await s.decide(requested.approval_id!, { decision: "approve", confirmation: ALERT })).toMatchObject({ decision: "approved" });
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", ...approvedAndRun("alert-1"), "run_completed"]);
  });
});

describe("decisions that stop a call", () => {
  it("denial: not executed, approved false, and a repeat or a change of mind gets a clear answer", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } }] }]);
    const requested = await s.waitFor("approval_requested", "write-1");
    const denied = await s.decide(requested.approval_id!, { decision: "deny", reason: "not now" });
    expect(denied).toEqual({ approval_id: requested.approval_id, decision: "denied", status: "resolved" });
    expect(await s.decide(requested.approval_id!, { decision: "deny" })).toEqual(denied);
    const changed = await refusal(s.decide(requested.approval_id!, { decision: "approve" }));
    expect(changed).toMatchObject({ status: 409, code: "already_resolved", body: { decision: "denied" } });
    expect(await refusal(s.decide("approval_unknown", { decision: "approve" }))).toMatchObject({ status: 404, code: "not_found" });
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "run_completed",
    ]);
    expect(s.one("approval_resolved", "write-1")).toMatchObject({ decision: "denied", reason: "not now" });
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "denied" });
    expect(s.one("tool_completed", "write-1")).toMatchObject({ approved: false });
    expect((await demoCalls()).total).toBe(0);
  });

  it("expiry by the run's alarm: expired, never denied, and a late decision gets 410", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } }] }]);
    const requested = await s.waitFor("approval_requested", "write-1");
    await s.toEnd(); // nobody decides: the alarm expires it
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "run_completed",
    ]);
    expect(s.one("approval_resolved", "write-1")).toMatchObject({ decision: "expired" });
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "expired" });
    // Blocked on a person for 3 s, the idle response still got sequenced heartbeats (200 ms interval).
    const blocked = s.events.filter((e) => e.sequence > requested.sequence && e.sequence < s.one("approval_resolved", "write-1").sequence);
    expect(blocked.length).toBeGreaterThanOrEqual(5);
    expect(blocked.every((e) => e.type === "heartbeat")).toBe(true);
    expect(await refusal(s.decide(requested.approval_id!, { decision: "approve" }))).toMatchObject({ status: 410, code: "expired" });
    expect(await refusal(s.decide(requested.approval_id!, { decision: "deny" }))).toMatchObject({ status: 410, code: "expired" });
    expect((await demoCalls()).total).toBe(0);
  });
});

describe("cancellation at each wait", () => {
  async function cancel(s: Scenario) {
    expect(await engine.cancel(s.runId)).toEqual({ status: "cancelling" });
  }

  it("while waiting for approval", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } }] }]);
    await s.waitFor("approval_requested", "write-1");
    await cancel(s);
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "run_failed",
    ]);
    expect(s.one("approval_resolved", "write-1")).toMatchObject({ decision: "cancelled" });
    expect(s.one("tool_execution", "write-1")).toMatchObject({ reason: "cancelled" });
    expect(s.one("run_failed")).toMatchObject({ error: { code: "cancelled" } });
  });

  it("while waiting for an answer", async () => {
    const s = await Scenario.start([
      { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which team?" } }] },
    ]);
    await s.waitFor("human_input_requested", "ask-1");
    await cancel(s);
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:ask-1",
      "human_input_requested:ask-1",
      "tool_execution:ask-1",
      "tool_completed:ask-1",
      "run_failed",
    ]);
    expect(s.one("tool_execution", "ask-1")).toMatchObject({ execution_status: "not_executed", reason: "cancelled" });
  });

  it("while waiting for admission behind a human__ask", async () => {
    const s = await Scenario.start(ASK_THEN_WRITE);
    await s.approve("write-1");
    await s.waitFor("tool_execution_started", "write-1");
    await cancel(s);
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:ask-1",
      "human_input_requested:ask-1",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution_started:write-1",
      "tool_execution:ask-1",
      "tool_completed:ask-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "run_failed",
    ]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "cancelled" });
    expect(s.one("tool_completed", "write-1")).toMatchObject({ approved: true });
    expect((await demoCalls()).total).toBe(0);
  });

  it("during a dispatch: the call is not abandoned and its result is still reported", async () => {
    await armFault("create_dashboard", "delay", 600);
    const s = await Scenario.start([
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } }] },
      { text: "never said" },
    ]);
    await s.approve("write-1");
    await s.waitFor("tool_execution_started", "write-1");
    await new Promise((r) => setTimeout(r, 150)); // the call is on the wire now
    await cancel(s);
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", ...approvedAndRun("write-1"), "run_failed"]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect((await demoCalls()).by_tool.create_dashboard).toBe(1);
  });
});

describe("transport", () => {
  it("a mutating call that times out is executed with transport_timeout and reached the server once", async () => {
    await armFault("create_dashboard", "delay", 2_500);
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "slow" } }] }]);
    await s.approve("write-1");
    await s.toEnd();
    expect(s.shape()).toEqual(["run_started", ...approvedAndRun("write-1"), "run_completed"]);
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "executed", error: { code: "transport_timeout" } });
    await new Promise((r) => setTimeout(r, 2_000)); // long enough for any retry to have arrived
    expect((await demoCalls()).by_tool.create_dashboard).toBe(1);
  });

  it("an ambiguous failure (committed, response dropped) is never retried", async () => {
    await armFault("create_dashboard", "commit_then_drop");
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "lost" } }] }]);
    await s.approve("write-1");
    await s.toEnd();
    const execution = s.one("tool_execution", "write-1");
    expect(execution).toMatchObject({
      execution_status: "executed",
      error: { code: expect.stringMatching(/^transport_(timeout|error)$/) },
    });
    await new Promise((r) => setTimeout(r, 500));
    expect((await demoCalls()).by_tool.create_dashboard).toBe(1);
  });
});

const SECRET_ARGUMENTS = {
  title: "Billing",
  api_key: "sk-live-123",
  panels: ["p1"],
  auth: { password: "hunter2", headers: { Authorization: "Bearer abc" } },
};

/** Runs the adapter hooks over a run's events (twice: a replay must call nothing again). */
function hookCalls(events: Event[]): unknown[][] {
  const recorded: unknown[][] = [];
  const dispatch = createHookDispatcher({
    onToolStart: (name, input) => recorded.push(["start", name, input]),
    onToolExecutionStarted: (name) => recorded.push(["execution_started", name]),
    onToolEnd: (name, elapsed, approved) => recorded.push(["end", name, typeof elapsed, approved]),
  });
  for (const e of events) dispatch(JSON.stringify(e));
  for (const e of events) dispatch(JSON.stringify(e));
  return recorded;
}

describe("what the stream shows", () => {
  it("redacts secret-looking arguments in the approval and never puts them on the stream", async () => {
    const s = await Scenario.start([
      {
        tool_calls: [
          {
            tool_name: CREATE,
            tool_call_id: "write-1",
            arguments: SECRET_ARGUMENTS,
          },
        ],
      },
    ]);
    const requested = await s.approve("write-1");
    await s.toEnd();
    expect(requested.arguments).toEqual({
      title: "Billing",
      api_key: "[redacted]",
      panels: ["p1"],
      auth: { password: "[redacted]", headers: { Authorization: "[redacted]" } },
    });
    const replay = await rawEvents(s.runId);
    await replay.toEnd();
    expect(replay.events).toHaveLength(s.events.length);
    for (const secret of ["sk-live-123", "hunter2", "Bearer abc"]) expect(replay.raw).not.toContain(secret);
    // The approved call was dispatched with the exact arguments the model proposed (shown, before
    // redaction): the whole object, secrets included, so a "[REDACTED]" substitution would fail here.
    const calls = await demoCalls();
    expect(calls.calls).toEqual([{ tool: "create_dashboard", arguments: SECRET_ARGUMENTS, at: expect.any(String) }]);
    // And the digest the durable row recorded at approval is the digest of exactly those arguments.
    const { mutations } = await engine.runMutations(s.runId);
    expect(mutations).toHaveLength(1);
    expect(mutations[0]!.arguments_digest).toBe(await argumentsDigest(SECRET_ARGUMENTS));
    expect(mutations[0]!.arguments_digest).toBe(await argumentsDigest(calls.calls[0]!.arguments));
    expect(mutations[0]!.arguments_digest).not.toBe(await argumentsDigest(requested.arguments));
  });

  it("drives adapter hooks from the stream: execution-started only for human-approved calls", async () => {
    const s = await Scenario.start([
      {
        tool_calls: [
          { tool_name: LIST, tool_call_id: "read-1", arguments: {} },
          { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "a" } },
          { tool_name: CREATE, tool_call_id: "write-2", arguments: { title: "b" } },
          { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "?" } },
        ],
      },
    ]);
    await s.waitFor("tool_completed", "read-1");
    await s.approve("write-1");
    await s.waitFor("tool_completed", "write-1");
    const second = await s.waitFor("approval_requested", "write-2");
    expect(await s.decide(second.approval_id!, { decision: "deny" })).toEqual({
      approval_id: second.approval_id,
      decision: "denied",
      status: "resolved",
    });
    expect(await engine.answerInput(s.runId, "ask-1", { answer: "ok" })).toEqual({
      tool_call_id: "ask-1",
      status: "answered",
    });
    await s.toEnd();
    // The hook calls alone look the same for a denial and an expiry: the stream says which it was.
    expect(s.one("approval_resolved", "write-2")).toMatchObject({ decision: "denied", decided_by: "token:root" });
    expect(s.one("tool_execution", "write-2")).toMatchObject({ execution_status: "not_executed", reason: "denied" });
    expect(s.one("human_input_received", "ask-1")).toMatchObject({ answered_by: "token:root" });
    expect(hookCalls(s.events)).toEqual([
      ["start", LIST, { tool_call_id: "read-1", approval_required: false }],
      ["start", CREATE, { tool_call_id: "write-1", approval_required: true }],
      ["start", CREATE, { tool_call_id: "write-2", approval_required: true }],
      ["start", "human__ask", { tool_call_id: "ask-1", approval_required: false }],
      ["end", LIST, "number", true],
      ["execution_started", CREATE],
      ["end", CREATE, "number", true],
      ["end", CREATE, "number", false],
      ["end", "human__ask", "number", true],
    ]);
  });

  it("an expired approval never calls onToolExecutionStarted, and the expiry is not a denial", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "late" } }] }]);
    const requested = await s.waitFor("approval_requested", "write-1");
    await s.toEnd(); // nobody decides within APPROVAL_TIMEOUT_MS (3 s)
    expect(s.one("approval_resolved", "write-1")).toMatchObject({ decision: "expired" });
    expect(s.one("approval_resolved", "write-1")).not.toHaveProperty("decided_by");
    expect(hookCalls(s.events)).toEqual([
      ["start", CREATE, { tool_call_id: "write-1", approval_required: true }],
      ["end", CREATE, "number", false],
    ]);
    expect(await refusal(s.decide(requested.approval_id!, { decision: "approve" }))).toMatchObject({ status: 410, code: "expired" });
  });
});

describe("subscriber loss and reattach", () => {
  it("survives two consecutive subscriber losses mid-run; the third attach gets every event once, identical bytes", async () => {
    const { run_id: runId } = await engine.trigger({ message: "m", script: slowScript(8, 250) });

    const first = await rawEvents(runId);
    await first.waitFor(3);
    await first.close();
    const seenByFirst = Number(first.events.at(-1)!.id);
    await expect.poll(async () => (await engine.summary(runId)).subscribers, { timeout: 5_000 }).toBe(0);
    expect((await engine.summary(runId)).status).toBe("running");

    const second = await rawEvents(runId, `?after=${seenByFirst}`);
    await second.waitFor(2);
    await second.close();
    const seenBySecond = Number(second.events.at(-1)!.id);
    await expect.poll(async () => (await engine.summary(runId)).subscribers, { timeout: 5_000 }).toBe(0);
    expect((await engine.summary(runId)).status).toBe("running");

    const third = await rawEvents(runId, `?after=${seenBySecond}`);
    await third.toEnd();
    expect(eventTypes(third.events).at(-1)).toBe("run_completed");

    const all = [...first.events, ...second.events, ...third.events];
    const ids = eventIds(all);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(eventTypes(all).filter((t) => t === "assistant_message")).toHaveLength(8);

    // A full replay afterwards is byte-for-byte what the three subscribers received together.
    const replay = await rawEvents(runId);
    await replay.toEnd();
    expect(first.raw + second.raw + third.raw).toBe(replay.raw);
    // The run never restarted: one run_started, one run_completed.
    expect(eventTypes(replay.events).filter((t) => t === "run_started" || t === "run_completed")).toEqual(["run_started", "run_completed"]);
  });
});

describe("EventSource", () => {
  let proxy: CuttingProxy;
  beforeAll(async () => {
    proxy = await startCuttingProxy(new URL(url));
  });
  afterAll(() => proxy.close());

  it("resumes by Last-Event-ID on its own after the connection is cut", async () => {
    const json = await engine.trigger({ message: "m", script: slowScript(6, 300) });
    const received: { id: string; type: string; data: string }[] = [];
    const source = new EventSource(`${proxy.url}/api/runs/${json.run_id}/events`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, ...auth } }),
    });
    const finished = new Promise<void>((resolve) => {
      const onEvent = (e: MessageEvent) => {
        received.push({ id: e.lastEventId, type: e.type, data: e.data });
        if (e.type === "run_completed") {
          source.close();
          resolve();
        }
      };
      for (const type of ["run_started", "assistant_message", "heartbeat", "run_completed"]) source.addEventListener(type, onEvent);
    });
    await expect.poll(() => received.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    const lastBeforeCut = received.at(-1)!.id;
    proxy.cutAll();
    await finished;

    const ids = received.map((e) => Number(e.id));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    // The client reconnected by itself, naming the last event it had.
    const reconnect = proxy.requests.find((head) => /^last-event-id:/im.test(head));
    expect(reconnect).toBeDefined();
    expect(Number(/^last-event-id:\s*(\d+)/im.exec(reconnect!)![1])).toBeGreaterThanOrEqual(Number(lastBeforeCut));
  });
});

describe("heartbeats over HTTP", () => {
  it("keeps an idle response alive with sequenced heartbeats while the run is blocked", async () => {
    const json = await engine.trigger({ message: "m", script: [{ text: "done thinking", delay_ms: 1_500 }] });
    const client = await rawEvents(json.run_id);
    await client.toEnd();
    const types = eventTypes(client.events);
    expect(types[0]).toBe("run_started");
    expect(types.slice(-2)).toEqual(["assistant_message", "run_completed"]);
    // 1.5 s of thinking at a 200 ms heartbeat interval.
    expect(types.filter((t) => t === "heartbeat").length).toBeGreaterThanOrEqual(4);
    expect(eventIds(client.events)).toEqual(Array.from({ length: types.length }, (_, i) => i + 1));
  });
});

describe("terminal fencing", () => {
  it("appends nothing after the terminal event: late decisions change nothing and a rejoin gets 204", async () => {
    const s = await Scenario.start([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "fenced" } }] }]);
    const requested = await s.waitFor("approval_requested", "write-1");
    expect(await engine.cancel(s.runId)).toEqual({ status: "cancelling" });
    await s.toEnd();
    const last = (await engine.summary(s.runId)).last_sequence;
    expect(last).toBe(s.events.length);
    // A late decision, a late cancel and three heartbeat intervals later: nothing appended.
    expect(await refusal(s.decide(requested.approval_id!, { decision: "approve" }))).toMatchObject({
      status: 409,
      code: "already_resolved",
    });
    const lateCancel = await engine.raw(`/api/runs/${s.runId}/cancel`, { method: "POST" });
    expect(lateCancel.status).toBe(200);
    expect(await lateCancel.json()).toEqual({ status: "failed" });
    await new Promise((r) => setTimeout(r, 700));
    expect((await engine.summary(s.runId)).last_sequence).toBe(last);
    const rejoin = await engine.raw(`/api/runs/${s.runId}/events?after=${last}`);
    expect(rejoin.status).toBe(204);
    // The client's iterator ends quietly on that 204: nothing to yield.
    const after: unknown[] = [];
    for await (const e of engine.events(s.runId, { after: last })) after.push(e);
    expect(after).toEqual([]);
    expect((await demoCalls()).total).toBe(0);
  });
});

describe("producer fixtures", () => {
  it("regenerates test/fixtures/approved_execution_v2.json byte for byte through the real routes", async () => {
    const committed = await readFile(new URL("../fixtures/approved_execution_v2.json", import.meta.url), "utf8");
    const regenerated = serialiseFixtures(await generateFixtures({ workerUrl: url, token, demoBaseUrl: demo }));
    expect(regenerated).toBe(committed);
    const fixtures = JSON.parse(committed);
    expect(Object.keys(fixtures.examples)).toEqual(["success", "pre_dispatch_expiry", "dispatched_timeout"]);
    for (const example of Object.values<any>(fixtures.examples)) {
      const sequences = example.events.map((e: { sequence: number }) => e.sequence);
      expect(sequences).toEqual([...sequences].sort((a: number, b: number) => a - b));
      expect(example.mutation_outcomes).toHaveLength(1);
      expect(example.mutation_outcomes[0].schema).toBe("mutation_outcome/v1");
    }
    expect(fixtures.examples.success.mutation_outcomes[0].state).toBe("completed");
    expect(fixtures.examples.pre_dispatch_expiry.mutation_outcomes[0].state).toBe("not_executed");
    expect(fixtures.examples.dispatched_timeout.mutation_outcomes[0].state).toBe("outcome_unknown");
  });
});
