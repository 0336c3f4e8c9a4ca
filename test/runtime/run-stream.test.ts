// The RunObject's stream inside workerd: initial stream, replay identity,
// resume points, heartbeats while blocked, subscribers, cancel, terminal
// fencing and retention, with alarms fired by runDurableObjectAlarm.
import { RUN_METRICS_TABLES } from "../../src/operate/run-metrics";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunObject } from "../../durable-objects/run-object";
import { api, engine, openEvents, runStub, SseReader, sequences, sleep, trigger, types } from "./helpers";

/** A turn that keeps the run "thinking" far longer than any test lasts. */
const BLOCKED = { text: "late", delay_ms: 600_000 };

async function summary(runId: string) {
  return (await api(`/api/runs/${runId}`)).json<any>();
}

describe("initial stream", () => {
  it("streams the run from sequence 1 when the trigger asks for text/event-stream", async () => {
    const res = await api("/api/trigger", {
      method: "POST",
      headers: { accept: "text/event-stream" },
      body: JSON.stringify({ message: "hello", channel_id: "C1" }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const runId = res.headers.get("x-run-id");
    expect(runId).toMatch(/^run_[0-9A-Z]{26}$/);
    expect(res.headers.get("content-location")).toBe(`/api/runs/${runId}/events`);
    const events = await new SseReader(res).readToEnd();
    expect(types(events)).toEqual(["run_started", "assistant_message", "run_completed"]);
    expect(sequences(events)).toEqual([1, 2, 3]);
    const [started, message, completed] = events.map((e) => JSON.parse(e.data));
    expect(started).toMatchObject({
      protocol_version: "v2",
      sequence: 1,
      run_id: runId,
      channel_id: "C1",
      type: "run_started",
      user_id: "token:root",
      requested_by: "token:root",
    });
    expect(started).not.toHaveProperty("on_behalf_of");
    expect(Object.keys(started).slice(0, 6)).toEqual(["protocol_version", "sequence", "run_id", "channel_id", "type", "at"]);
    expect(message).toMatchObject({ type: "assistant_message", text: "You said: hello" });
    expect(completed).toMatchObject({ type: "run_completed", text: "You said: hello", tool_calls: 0 });
  });
});

describe("replay", () => {
  it("replays byte for byte what was first sent, from after, Last-Event-ID or the start", async () => {
    const res = await api("/api/trigger", {
      method: "POST",
      headers: { accept: "text/event-stream" },
      body: JSON.stringify({ message: "m", script: [{ text: "one" }, { text: "two" }, { text: "three" }] }),
    });
    const first = new SseReader(res);
    await first.readToEnd();
    const runId = res.headers.get("x-run-id")!;
    expect(sequences(first.events)).toEqual([1, 2, 3, 4, 5]);

    const full = new SseReader(await openEvents(runId));
    await full.readToEnd();
    expect(full.raw).toBe(first.raw);

    const after2 = new SseReader(await openEvents(runId, "?after=2"));
    await after2.readToEnd();
    expect(sequences(after2.events)).toEqual([3, 4, 5]);
    expect(first.raw.endsWith(after2.raw)).toBe(true);

    const byHeader = new SseReader(await openEvents(runId, "", { "last-event-id": "4" }));
    await byHeader.readToEnd();
    expect(sequences(byHeader.events)).toEqual([5]);

    // `after` wins over Last-Event-ID.
    const both = new SseReader(await openEvents(runId, "?after=3", { "last-event-id": "1" }));
    await both.readToEnd();
    expect(sequences(both.events)).toEqual([4, 5]);
  });

  it("waits for new events when after is beyond the last sequence, then delivers the later ones", async () => {
    const { run_id: runId } = await engine.trigger({ message: "m", script: [BLOCKED] });
    expect((await engine.summary(runId)).last_sequence).toBe(1);
    const reader = new SseReader(await openEvents(runId, "?after=5"));
    expect((await engine.summary(runId)).subscribers).toBe(1);
    // Only run_started exists; the attached reader makes the blocked run append heartbeats, and the
    // first event this reader gets is the first one after 5, once it exists.
    const [first] = await reader.readUntil(1);
    expect(Number(first!.id)).toBe(6);
    expect(first!.event).toBe("heartbeat");
    expect(await engine.cancel(runId)).toEqual({ status: "cancelling" });
    const events = await reader.readToEnd();
    expect(sequences(events)).toEqual(Array.from({ length: events.length }, (_, i) => i + 6));
    expect(types(events).at(-1)).toBe("run_failed");
    // Past the end of an ended run nothing will ever come: 204.
    const last = (await engine.summary(runId)).last_sequence;
    expect((await openEvents(runId, `?after=${last + 5}`)).status).toBe(204);
  });
});

describe("heartbeats", () => {
  it("appends sequenced heartbeats while the run is blocked and someone is attached", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const reader = new SseReader(await openEvents(json.run_id));
    const events = await reader.readUntil(4);
    expect(types(events)).toEqual(["run_started", "heartbeat", "heartbeat", "heartbeat"]);
    expect(sequences(events)).toEqual([1, 2, 3, 4]);
    const heartbeat = JSON.parse(events[1]!.data);
    expect(Object.keys(heartbeat)).toEqual(["protocol_version", "sequence", "run_id", "channel_id", "type", "at"]);
    await reader.cancel();
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
  });

  it("stops appending heartbeats once nobody is attached", async () => {
    const { run_id: runId } = await engine.trigger({ message: "m", script: [BLOCKED] });
    // First prove heartbeats flow while someone is attached...
    const reader = new SseReader(await openEvents(runId));
    const events = await reader.readUntil(3);
    expect(types(events)).toEqual(["run_started", "heartbeat", "heartbeat"]);
    // ...then detach the only subscriber and watch the sequence stand still.
    await reader.cancel();
    await expect.poll(async () => (await engine.summary(runId)).subscribers).toBe(0);
    const stopped = (await engine.summary(runId)).last_sequence;
    await sleep(350); // 3.5 heartbeat intervals of the test config
    await runDurableObjectAlarm(runStub(runId));
    expect((await engine.summary(runId)).last_sequence).toBe(stopped);
    expect((await engine.summary(runId)).status).toBe("running");
    await engine.cancel(runId);
  });
});

describe("subscribers", () => {
  it("counts subscribers and releases one when its client goes away, without stopping the run", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const a = new SseReader(await openEvents(json.run_id));
    const b = new SseReader(await openEvents(json.run_id));
    await a.readUntil(1);
    await b.readUntil(1);
    expect((await summary(json.run_id)).subscribers).toBe(2);
    await a.cancel();
    await expect.poll(async () => (await summary(json.run_id)).subscribers).toBe(1);
    expect((await summary(json.run_id)).status).toBe("running");
    await b.cancel();
    await expect.poll(async () => (await summary(json.run_id)).subscribers).toBe(0);
    expect((await summary(json.run_id)).status).toBe("running");
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
  });

  it("lets a reattach under the same client key replace the old response, whose cleanup cannot detach it", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const old = new SseReader(await openEvents(json.run_id, "?client_key=slack-1"));
    await old.readUntil(1);
    const newer = new SseReader(await openEvents(json.run_id, "?client_key=slack-1"));
    await newer.readUntil(1);
    // The old response's late cleanup, while its reader has NOT reached the end of its stream.
    expect(old.done).toBe(false);
    await old.cancel();
    await sleep(50);
    expect((await summary(json.run_id)).subscribers).toBe(1);
    // The newer subscriber is still attached and live: heartbeats keep reaching it after the cleanup.
    const seen = newer.events.length;
    const later = await newer.readUntil(seen + 2);
    expect(types(later.slice(seen))).toEqual(["heartbeat", "heartbeat"]);
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
    const events = await newer.readToEnd();
    expect(types(events).at(-1)).toBe("run_failed");
  });
});

describe("cancel", () => {
  it("ends a blocked run with run_failed(cancelled) and answers a repeat with the terminal status", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const reader = new SseReader(await openEvents(json.run_id));
    await reader.readUntil(1);
    const cancel = await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
    expect(cancel.status).toBe(202);
    expect(await cancel.json()).toEqual({ status: "cancelling" });
    const events = await reader.readToEnd();
    expect(types(events).filter((t) => t !== "heartbeat")).toEqual(["run_started", "run_failed"]);
    expect(JSON.parse(events.at(-1)!.data).error).toEqual({ code: "cancelled", message: "The run was cancelled." });
    const again = await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ status: "failed" });
    expect(await summary(json.run_id)).toMatchObject({ status: "failed", subscribers: 0, ended_at: expect.any(String) });
  });
});

describe("terminal fencing", () => {
  it("appends nothing after the terminal event, not even from a late alarm or a direct append", async () => {
    const { json } = await trigger({ message: "m" });
    const stub = runStub(json.run_id);
    const before = await summary(json.run_id);
    expect(before).toMatchObject({ status: "completed", last_sequence: 3 });
    await runDurableObjectAlarm(stub);
    const appended = await runInDurableObject(stub, (instance: RunObject) =>
      (instance as unknown as { appendEvent(t: string, f: object): unknown }).appendEvent("heartbeat", {}),
    );
    expect(appended).toBeNull();
    expect((await summary(json.run_id)).last_sequence).toBe(3);
  });
});

/** The run object's own tables (workerd's internal `_cf_` tables left out). */
async function tablesOf(runId: string): Promise<string[]> {
  return runInDurableObject(runStub(runId), (_instance, state) =>
    state.storage.sql
      .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' ORDER BY name`)
      .toArray()
      .map((r) => r.name),
  );
}

describe("retention", () => {
  it("deletes a finished run's events, arguments, script and record when its retention alarm fires; the summary is 404, the stream 410 replay_gap", async () => {
    const { json } = await trigger({
      message: "m",
      script: [{ text: "asking", tool_calls: [{ tool_name: "human__ask", arguments: { question: "Which team holds the key s3cret?" } }] }],
    });
    const stub = runStub(json.run_id);
    await expect.poll(async () => (await summary(json.run_id)).pending_inputs?.length ?? 0).toBe(1);
    expect((await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" })).status).toBe(202);
    const ended = await summary(json.run_id);
    expect(ended).toMatchObject({ status: "failed" });
    const LAST: number = ended.last_sequence;
    expect(await tablesOf(json.run_id)).toEqual(expect.arrayContaining(["calls", "deadlines", "events", "run"]));
    // Bring the retention deadline to now instead of waiting a day, then fire the alarm.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec(`UPDATE deadlines SET due_at = 0 WHERE name = 'retention'`);
    });
    // The object's own alarm may be running right now (an index flush), or fire first now that the retention
    // deadline is past: fire it once it is free, with a bound, and wait until the run is gone either way.
    await fireAlarm(stub);
    await expect.poll(async () => (await api(`/api/runs/${json.run_id}`)).status, { timeout: 5_000 }).toBe(404);
    // Only the purge marker (last sequence) and the run's identity stay: no event, argument, script or record.
    // The run index's marks table stays (contract section 15: the listings outlive the events), emptied by the flush,
    // and so do the metrics' counter deltas not yet in D1 (contract section 22; the flush of leftovers opens the
    // metrics' two other tables again, empty): counts, never the run's input.
    expect(await tablesOf(json.run_id)).toEqual(
      ["event_log_purged", "events", ...RUN_METRICS_TABLES, "metric_slack_seen", "metric_timers", "purged_run", "run_index_marks"].sort(),
    );
    const left = await runInDurableObject(stub, async (_i, state) => ({
      alarm: await state.storage.getAlarm(),
      events: state.storage.sql.exec(`SELECT COUNT(*) AS n FROM events`).one().n,
      marks: state.storage.sql.exec(`SELECT COUNT(*) AS n FROM run_index_marks`).one().n,
      rows: JSON.stringify([
        ...state.storage.sql.exec(`SELECT * FROM event_log_purged`).toArray(),
        ...state.storage.sql.exec(`SELECT * FROM purged_run`).toArray(),
      ]),
    }));
    expect(left).toEqual({
      alarm: null,
      events: 0,
      marks: 0,
      rows: JSON.stringify([
        { id: 1, last: LAST },
        { id: 1, run_id: json.run_id, channel_id: "api" },
      ]),
    });
    expect((await api(`/api/runs/${json.run_id}`)).status).toBe(404);
    expect((await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" })).status).toBe(404);
    const gap = await openEvents(json.run_id, "?after=0");
    expect(gap.status).toBe(410);
    expect(await gap.json()).toMatchObject({ error: "replay_gap", earliest_sequence: LAST + 1 });
    // A client that already had everything is told there is nothing more (204 stops EventSource reconnecting).
    expect((await openEvents(json.run_id, `?after=${LAST}`)).status).toBe(204);
    // And so does a new instance of the object, from what stayed in storage.
    await runInDurableObject(stub, (_i, state) => state.abort("test: restart")).catch(() => undefined);
    expect((await openEvents(json.run_id, "?after=0")).status).toBe(410);
    expect((await api(`/api/runs/${json.run_id}`)).status).toBe(404);
  });
});

describe("unknown runs", () => {
  it("creates no storage for a well-formed run id that never existed, whatever route asks", async () => {
    const runId = "run_01JZZZZZZZZZZZZZZZZZZZZZZZ";
    expect((await api(`/api/runs/${runId}`)).status).toBe(404);
    expect((await openEvents(runId, "?after=0")).status).toBe(404);
    expect((await api(`/api/runs/${runId}/cancel`, { method: "POST" })).status).toBe(404);
    const decision = await api(`/api/runs/${runId}/approvals/approval_x`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decision.status).toBe(404);
    const answer = await api(`/api/runs/${runId}/inputs/call_x`, {
      method: "POST",
      body: JSON.stringify({ answer: "a" }),
    });
    expect(answer.status).toBe(404);
    expect(await runDurableObjectAlarm(runStub(runId))).toBe(false);
    expect(await tablesOf(runId)).toEqual([]);
    const size = await runInDurableObject(runStub(runId), (_i, state) => state.storage.sql.databaseSize);
    const started = await trigger({ message: "m" });
    const startedSize = await runInDurableObject(runStub(started.json.run_id), (_i, state) => state.storage.sql.databaseSize);
    expect(size).toBeLessThan(startedSize);
  });
});

/** runDurableObjectAlarm, retried while the object's alarm is mid-run (then none is scheduled for a moment). */
async function fireAlarm(stub: DurableObjectStub<RunObject>): Promise<boolean> {
  for (let attempt = 0; attempt < 20; attempt++) {
    if (await runDurableObjectAlarm(stub)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
