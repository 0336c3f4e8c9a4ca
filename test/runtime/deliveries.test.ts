// Delivery identity: a repeated delivery never starts a second run, even when
// the duplicates arrive at the same moment; receipts are readable.
import { describe, expect, it } from "vitest";
import { api, SseReader, trigger, types } from "./helpers";

describe("delivery identity", () => {
  it("gives a repeated delivery_id the first run's receipt and records it", async () => {
    const first = await trigger({ message: "m", delivery_id: "Ev-1", channel_id: "C1" });
    expect(first.status).toBe(202);
    const again = await trigger({ message: "different text", delivery_id: "Ev-1", channel_id: "C1" });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ status: "duplicate", run_id: first.json.run_id, channel_id: "C1" });
    const receipt = await api("/api/deliveries/Ev-1");
    expect(await receipt.json()).toEqual({
      delivery_id: "Ev-1",
      run_id: first.json.run_id,
      channel_id: "C1",
      accepted_at: expect.any(String),
    });
  });

  it("treats the Idempotency-Key header as the delivery identity", async () => {
    const first = await trigger({ message: "m" }, { "idempotency-key": "key-7" });
    const again = await trigger({ message: "m" }, { "idempotency-key": "key-7" });
    expect(again.json).toMatchObject({ status: "duplicate", run_id: first.json.run_id });
    const mismatch = await trigger({ message: "m", delivery_id: "a" }, { "idempotency-key": "b" });
    expect(mismatch.status).toBe(400);
  });

  it("makes exactly one run of identical triggers sent at the same moment", async () => {
    const results = await Promise.all(Array.from({ length: 12 }, () => trigger({ message: "m", delivery_id: "burst-1" })));
    const runIds = new Set(results.map((r) => r.json.run_id));
    expect(runIds.size).toBe(1);
    expect(results.filter((r) => r.status === 202)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200 && r.json.status === "duplicate")).toHaveLength(11);
    const [runId] = runIds;
    const events = await new SseReader(await api(`/api/runs/${runId}/events`)).readToEnd();
    expect(types(events).filter((t) => t === "run_started")).toHaveLength(1);
  });

  it("replays the first run's stream from sequence 1 for a duplicate that asks for SSE", async () => {
    const first = await trigger({ message: "m", delivery_id: "sse-dup" });
    const res = await api("/api/trigger", {
      method: "POST",
      headers: { accept: "text/event-stream" },
      body: JSON.stringify({ message: "m", delivery_id: "sse-dup" }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-run-id")).toBe(first.json.run_id);
    expect(res.headers.get("x-delivery-status")).toBe("duplicate");
    const events = await new SseReader(res).readToEnd();
    expect(events[0]?.id).toBe("1");
    expect(types(events)).toEqual(["run_started", "assistant_message", "run_completed"]);
  });
});
