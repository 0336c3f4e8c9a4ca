// The release note's lifecycle suite (tests/test_approved_execution_lifecycle.py
// there), over real loopback HTTP: both engine entry points (the initial
// stream of a trigger that asks for SSE, and an accepted trigger replayed
// later through the events route or a duplicate delivery), ordered admission
// stalls, and the unattended run. Blocked storage, including a backend
// holding the session lock past the storage bound, needs a seam in front of
// D1 and so runs inside workerd: test/runtime/mutation-faults.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ApiError, EngineClient, type EngineEvent } from "../../src/client";
import { type CuttingProxy, startCuttingProxy } from "../support/cutting-proxy";
import {
  ASK_THEN_WRITE,
  auth,
  demoCalls,
  demoReset,
  engine,
  LIST,
  rawEvents,
  Scenario,
  slowScript,
  token,
  url,
} from "../support/e2e-client";
import { eventIds, eventTypes } from "../support/sse-client";
import { untilCompleted } from "../support/run-waits";

beforeEach(demoReset);

async function collect(events: AsyncIterable<EngineEvent>): Promise<EngineEvent[]> {
  const out: EngineEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe("engine entry points", () => {
  it("the initial stream: a trigger that asks for SSE streams the run from sequence 1", async () => {
    const res = await fetch(`${url}/api/trigger`, {
      method: "POST",
      headers: { ...auth, accept: "text/event-stream", "content-type": "application/json" },
      body: JSON.stringify({ message: "m", delivery_id: `initial-${Date.now()}`, script: slowScript(2, 100) }),
    });
    expect(res.status).toBe(200);
    const runId = res.headers.get("x-run-id")!;
    expect(res.headers.get("content-location")).toBe(`/api/runs/${runId}/events`);
    const text = await res.text();
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    // The events route replays exactly what the initial stream sent.
    const replay = await rawEvents(runId);
    await replay.toEnd();
    expect(replay.raw).toBe(text);
  });

  it("the accepted trigger replayed later: 202 now, the same events from the events route or a duplicate delivery", async () => {
    const deliveryId = `accepted-${Date.now()}`;
    const json = await engine.trigger({ message: "m", delivery_id: deliveryId, script: slowScript(2, 50) });
    expect(json).toMatchObject({ status: "accepted", delivery_id: deliveryId });
    await untilCompleted((id) => engine.summary(id), json.run_id);
    const later = await rawEvents(json.run_id);
    await later.toEnd();
    const duplicate = await fetch(`${url}/api/trigger`, {
      method: "POST",
      headers: { ...auth, accept: "text/event-stream", "content-type": "application/json" },
      body: JSON.stringify({ message: "m", delivery_id: deliveryId }),
    });
    expect(duplicate.headers.get("x-run-id")).toBe(json.run_id);
    expect(duplicate.headers.get("x-delivery-status")).toBe("duplicate");
    expect(await duplicate.text()).toBe(later.raw);
    expect(eventTypes(later.events)).toEqual(["run_started", "assistant_message", "assistant_message", "run_completed"]);
  });
});

describe("the engine client's streamed trigger", () => {
  let proxy: CuttingProxy;
  beforeAll(async () => {
    proxy = await startCuttingProxy(new URL(url));
  });
  afterAll(() => proxy.close());

  it("resumes through a proxy that cuts the connection 20 times: no event lost or repeated", async () => {
    const CUTS = 20;
    const client = new EngineClient({ baseUrl: proxy.url, token });
    const deliveryId = `cuts-${Date.now()}`;
    const started = await client.triggerStream(
      { message: "m", delivery_id: deliveryId, script: slowScript(30, 120) },
      { retryDelayMs: 20, maxAttemptsWithoutProgress: 50 },
    );
    expect(started.duplicate).toBe(false);
    const received: EngineEvent[] = [];
    let cuts = 0;
    let connectionsAtLastCut = 0;
    for await (const event of started.events) {
      received.push(event);
      // Cut each new connection once it delivered an event, until 20 live connections were cut.
      if (cuts < CUTS && proxy.requests.length > connectionsAtLastCut) {
        connectionsAtLastCut = proxy.requests.length;
        proxy.cutAll();
        cuts++;
      }
    }
    expect(cuts).toBe(CUTS);
    const sequences = received.map((e) => e.sequence);
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1));
    expect(received.at(-1)?.type).toBe("run_completed");
    expect(received.filter((e) => e.type === "assistant_message")).toHaveLength(30);
    // Every reconnection after the first request went to the events route, resuming after a sequence it had.
    const resumed = proxy.requests.filter((head) => /^GET \/api\/runs\/[^/]+\/events\?after=\d+ /.test(head));
    expect(resumed.length).toBeGreaterThanOrEqual(CUTS);
    // What the consumer saw is exactly what a full replay gives, field for field.
    expect(await collect(engine.events(started.runId))).toEqual(received);
    // The streamed form of a repeated delivery replays the first run, flagged as a duplicate.
    const again = await engine.triggerStream({ message: "m", delivery_id: deliveryId });
    expect(again).toMatchObject({ runId: started.runId, duplicate: true });
    expect(await collect(again.events)).toEqual(received);
  });
});

describe("trigger defaults and bounds", () => {
  it('defaults channel_id to "api" and user_id to the principal', async () => {
    const receipt = await engine.trigger({ message: "m", script: [{ text: "hi" }] });
    expect(receipt).toMatchObject({ status: "accepted", channel_id: "api", events_url: `/api/runs/${receipt.run_id}/events` });
    const events = await collect(engine.events(receipt.run_id));
    expect(events[0]).toMatchObject({ type: "run_started", channel_id: "api", user_id: "token:root", requested_by: "token:root" });
    expect((await engine.summary(receipt.run_id)).channel_id).toBe("api");
  });

  it("accepts a message of 32768 characters and a delivery_id of 200, and refuses one more of either", async () => {
    const longest = await engine.trigger({
      message: "m".repeat(32_768),
      delivery_id: `d${Date.now()}`.padEnd(200, "x"),
      script: [{ text: "ok" }],
    });
    expect(longest.status).toBe("accepted");
    expect(longest.delivery_id).toHaveLength(200);
    const tooLong = await engine.trigger({ message: "m".repeat(32_769), script: [{ text: "ok" }] }).catch((e: unknown) => e);
    expect(tooLong).toBeInstanceOf(ApiError);
    expect(tooLong).toMatchObject({ status: 400, code: "invalid_request" });
    expect(JSON.stringify((tooLong as ApiError).details)).toContain("message");
    const longId = await engine.trigger({ message: "m", delivery_id: "d".repeat(201) }).catch((e: unknown) => e);
    expect(longId).toMatchObject({ status: 400, code: "invalid_request" });
    expect(JSON.stringify((longId as ApiError).details)).toContain("delivery_id");
    await expect(engine.trigger({ message: "" })).rejects.toMatchObject({ status: 400 });
    await expect(engine.trigger({ message: "m", delivery_id: "" })).rejects.toMatchObject({ status: 400 });
  });
});

describe("unattended runs", () => {
  it("finishes with nobody attached and replays completely afterwards", async () => {
    const json = await engine.trigger({ message: "m", script: slowScript(3, 100) });
    await untilCompleted((id) => engine.summary(id), json.run_id);
    const replay = await rawEvents(json.run_id);
    await replay.toEnd();
    expect(eventTypes(replay.events)).toEqual([
      "run_started",
      "assistant_message",
      "assistant_message",
      "assistant_message",
      "run_completed",
    ]);
    expect(eventIds(replay.events)).toEqual([1, 2, 3, 4, 5]);
  });
});

describe("delivery identity over HTTP", () => {
  it("makes one run of many identical triggers sent at once", async () => {
    const deliveryId = `Ev-${Date.now()}`;
    const results = await Promise.all(Array.from({ length: 20 }, () => engine.trigger({ message: "m", delivery_id: deliveryId })));
    expect(new Set(results.map((r) => r.run_id)).size).toBe(1);
    expect(results.map((r) => r.status).sort()).toEqual(["accepted", ...Array(19).fill("duplicate")]);
    const receipt = await engine.delivery(deliveryId);
    expect(receipt).toMatchObject({ delivery_id: deliveryId, run_id: results[0]!.run_id, channel_id: "api" });
  });
});

describe("ordered admission and the ceiling", () => {
  it("stalls an approved call behind an unanswered human__ask until its admission deadline", async () => {
    const s = await Scenario.start(ASK_THEN_WRITE, { channel_id: "C-lifecycle" });
    await s.approve("write-1");
    await s.waitFor("tool_execution", "write-1");
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "expired" });
    // Blocked on admission for 1.5 s (ADMISSION_TIMEOUT_MS), the stream kept getting sequenced heartbeats (200 ms).
    const admitted = s.one("tool_execution_started", "write-1").sequence;
    const ended = s.one("tool_execution", "write-1").sequence;
    const waiting = s.events.filter((e) => e.sequence > admitted && e.sequence < ended);
    expect(waiting.filter((e) => e.type === "heartbeat").length).toBeGreaterThanOrEqual(5);
    expect(waiting.filter((e) => e.type !== "heartbeat")).toEqual([]);
    // Then the question itself expires, and a late answer is refused with 410.
    await s.toEnd();
    expect(s.one("tool_execution", "ask-1")).toMatchObject({ execution_status: "not_executed", reason: "expired" });
    await expect(engine.answerInput(s.runId, "ask-1", { answer: "too late" })).rejects.toMatchObject({
      status: 410,
      code: "expired",
    });
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:ask-1",
      "human_input_requested:ask-1",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution_started:write-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "tool_execution:ask-1",
      "tool_completed:ask-1",
      "run_completed",
    ]);
    expect((await demoCalls()).total).toBe(0);
  });

  it("runs the approved call once the earlier question is answered", async () => {
    const s = await Scenario.start(ASK_THEN_WRITE, { channel_id: "C-lifecycle" });
    await s.approve("write-1");
    await s.waitFor("tool_execution_started", "write-1");
    // The summary shows what the run waits for: the question, no approval left.
    const waiting = await engine.summary(s.runId);
    expect(waiting.pending_approvals).toEqual([]);
    expect(waiting.pending_inputs).toEqual([{ tool_call_id: "ask-1", question: "Which dashboard?", expires_at: expect.any(String) }]);
    await expect(engine.answerInput(s.runId, "nope", { answer: "x" })).rejects.toMatchObject({ status: 404 });
    const answer = await engine.answerInput(s.runId, "ask-1", { answer: "Latency" });
    expect(answer).toEqual({ tool_call_id: "ask-1", status: "answered" });
    expect(await engine.answerInput(s.runId, "ask-1", { answer: "Latency" })).toEqual(answer);
    await expect(engine.answerInput(s.runId, "ask-1", { answer: "Other" })).rejects.toMatchObject({
      status: 409,
      code: "already_resolved",
    });
    await s.toEnd();
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:ask-1",
      "human_input_requested:ask-1",
      "tool_started:write-1",
      "approval_requested:write-1",
      "approval_resolved:write-1",
      "tool_execution_started:write-1",
      "human_input_received:ask-1",
      "tool_execution:ask-1",
      "tool_completed:ask-1",
      "tool_execution:write-1",
      "tool_completed:write-1",
      "run_completed",
    ]);
    expect(s.one("human_input_received", "ask-1")).toMatchObject({ answered_by: "token:root" });
    expect(JSON.stringify(s.events)).not.toContain("Latency"); // the answer goes to the model, not the stream
    expect((await demoCalls()).by_tool.create_dashboard).toBe(1);
  });

  it("enforces the effective call ceiling (the trigger narrows the host's)", async () => {
    const s = await Scenario.start(
      [
        {
          tool_calls: [
            { tool_name: LIST, tool_call_id: "read-1", arguments: {} },
            { tool_name: LIST, tool_call_id: "read-2", arguments: {} },
          ],
        },
      ],
      { max_tool_calls: 1 },
    );
    await s.toEnd();
    // read-2 can never be admitted once read-1 took the only call: it ends at once, before read-1 returns.
    expect(s.shape()).toEqual([
      "run_started",
      "tool_started:read-1",
      "tool_started:read-2",
      "tool_execution:read-2",
      "tool_completed:read-2",
      "tool_execution:read-1",
      "tool_completed:read-1",
      "run_completed",
    ]);
    expect(s.one("tool_started", "read-1")).toMatchObject({ approval_required: false });
    expect(s.one("tool_execution", "read-1")).toMatchObject({ execution_status: "executed" });
    expect(s.one("tool_execution", "read-2")).toMatchObject({ execution_status: "not_executed", reason: "call_ceiling" });
    expect(s.events.some((e) => e.type === "tool_execution_started" || e.type === "approval_requested")).toBe(false);
    expect((await demoCalls()).by_tool.list_dashboards).toBe(1);
  });
});
