// The release note's lifecycle suite (tests/test_approved_execution_lifecycle.py
// there), over real loopback HTTP: both engine entry points (the initial
// stream of a trigger that asks for SSE, and an accepted trigger replayed
// later through the events route or a duplicate delivery), ordered admission
// stalls, and the unattended run. Blocked storage, including a backend
// holding the session lock past the storage bound, needs a seam in front of
// D1 and so runs inside workerd: test/runtime/mutation-faults.test.ts.
import { beforeEach, describe, expect, it } from "vitest";
import {
  ASK_THEN_WRITE,
  auth,
  demo,
  demoCalls,
  events,
  LIST,
  post,
  Scenario,
  slowScript,
  summary,
  trigger,
  url,
} from "../support/e2e-client";
import { eventIds, eventTypes } from "../support/sse-client";

beforeEach(async () => {
  await fetch(`${demo}/control/reset`, { method: "POST" });
});

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
    const replay = await events(runId);
    await replay.toEnd();
    expect(replay.raw).toBe(text);
  });

  it("the accepted trigger replayed later: 202 now, the same events from the events route or a duplicate delivery", async () => {
    const deliveryId = `accepted-${Date.now()}`;
    const { status, json } = await trigger({ message: "m", delivery_id: deliveryId, script: slowScript(2, 50) });
    expect(status).toBe(202);
    await expect.poll(async () => (await summary(json.run_id)).status, { timeout: 10_000 }).toBe("completed");
    const later = await events(json.run_id);
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

describe("unattended runs", () => {
  it("finishes with nobody attached and replays completely afterwards", async () => {
    const { json } = await trigger({ message: "m", script: slowScript(3, 100) });
    await expect.poll(async () => (await summary(json.run_id)).status, { timeout: 10_000 }).toBe("completed");
    const replay = await events(json.run_id);
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
    const results = await Promise.all(Array.from({ length: 20 }, () => trigger({ message: "m", delivery_id: deliveryId })));
    expect(new Set(results.map((r) => r.json.run_id)).size).toBe(1);
    expect(results.map((r) => r.status).sort()).toEqual([...Array(19).fill(200), 202]);
    const receipt = await (await fetch(`${url}/api/deliveries/${deliveryId}`, { headers: auth })).json();
    expect(receipt).toMatchObject({ delivery_id: deliveryId, run_id: results[0]!.json.run_id });
  });
});

describe("ordered admission and the ceiling", () => {
  it("stalls an approved call behind an unanswered human__ask until its admission deadline", async () => {
    const s = await Scenario.start(ASK_THEN_WRITE, { channel_id: "C-lifecycle" });
    await s.approve("write-1");
    await s.waitFor("tool_execution", "write-1");
    expect(s.one("tool_execution", "write-1")).toMatchObject({ execution_status: "not_executed", reason: "expired" });
    // Then the question itself expires.
    await s.toEnd();
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
    const waiting = await summary(s.runId);
    expect(waiting.pending_approvals).toEqual([]);
    expect(waiting.pending_inputs).toEqual([{ tool_call_id: "ask-1", question: "Which dashboard?", expires_at: expect.any(String) }]);
    expect((await post(`/api/runs/${s.runId}/inputs/nope`, { answer: "x", answered_by: "U-2" })).status).toBe(404);
    const answer = await post(`/api/runs/${s.runId}/inputs/ask-1`, { answer: "Latency", answered_by: "U-2" });
    expect(answer).toEqual({ status: 200, json: { tool_call_id: "ask-1", status: "answered" } });
    expect(await post(`/api/runs/${s.runId}/inputs/ask-1`, { answer: "Latency", answered_by: "U-2" })).toEqual(answer);
    expect((await post(`/api/runs/${s.runId}/inputs/ask-1`, { answer: "Other", answered_by: "U-2" })).status).toBe(409);
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
    expect(s.one("human_input_received", "ask-1")).toMatchObject({ answered_by: "U-2" });
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
