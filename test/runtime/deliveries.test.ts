// Delivery identity: a repeated delivery never starts a second run, even when
// the duplicates arrive at the same moment; receipts are readable.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { claimDelivery, slackNamespace } from "../../src/http/deliveries";
import { deliveryNamespaceOf } from "../../src/http/start-run";
import { api, apiAs, namedToken, SseReader, trigger, types } from "./helpers";

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

  describe("identities belong to their source (contract section 3, issue 29)", () => {
    const triggerAs = async (token: string, body: Record<string, unknown>) => {
      const res = await apiAs(token, "/api/trigger", { method: "POST", body: JSON.stringify(body) });
      return { status: res.status, json: await res.json<any>() };
    };

    it("an id another principal claimed first does not swallow this caller's trigger; each reads its own receipt", async () => {
      const squatter = await namedToken(["requester", "viewer"]);
      const id = `shared-${crypto.randomUUID().slice(0, 8)}`;
      const squat = await triggerAs(squatter.token, { message: "first", delivery_id: id });
      expect(squat.status).toBe(202);
      const mine = await trigger({ message: "mine", delivery_id: id });
      expect(mine.status).toBe(202);
      expect(mine.json.status).toBe("accepted");
      expect(mine.json.run_id).not.toBe(squat.json.run_id);
      // Each caller's repeat is a duplicate of its own run.
      expect((await trigger({ message: "mine", delivery_id: id })).json).toMatchObject({ status: "duplicate", run_id: mine.json.run_id });
      expect((await triggerAs(squatter.token, { message: "again", delivery_id: id })).json).toMatchObject({
        status: "duplicate",
        run_id: squat.json.run_id,
      });
      expect(await (await api(`/api/deliveries/${id}`)).json()).toMatchObject({ delivery_id: id, run_id: mine.json.run_id });
      expect(await (await apiAs(squatter.token, `/api/deliveries/${id}`)).json()).toMatchObject({
        delivery_id: id,
        run_id: squat.json.run_id,
      });
    });

    it("a Slack event id claimed first through the API stays free for Slack's delivery", async () => {
      const squatter = await namedToken(["requester"]);
      const eventId = `Ev${crypto.randomUUID().replaceAll("-", "").slice(0, 10).toUpperCase()}`;
      expect((await triggerAs(squatter.token, { message: "squat", delivery_id: eventId })).status).toBe(202);
      expect(deliveryNamespaceOf({ source: "slack", requested_by: "slack:T1:U1" })).toBe(slackNamespace());
      const receipt = { delivery_id: eventId, run_id: "run_slackevent", channel_id: "C1", accepted_at: new Date().toISOString() };
      expect(await claimDelivery(env.DB, slackNamespace(), receipt)).toEqual({ claimed: true, receipt });
      expect((await api(`/api/deliveries/${eventId}?source=slack`)).status).toBe(200);
      // Reading Slack's namespace is an adapter's (or an admin's): a viewer is refused.
      const viewer = await namedToken(["viewer"]);
      expect((await apiAs(viewer.token, `/api/deliveries/${eventId}?source=slack`)).status).toBe(403);
      expect((await api(`/api/deliveries/${eventId}?source=email`)).status).toBe(400);
    });

    it("a receipt written before namespaces still answers for its id (a retry across the upgrade starts no second run)", async () => {
      const first = await trigger({ message: "m" });
      const id = `legacy-${crypto.randomUUID().slice(0, 8)}`;
      await env.DB.prepare("INSERT INTO deliveries (delivery_id, run_id, channel_id, accepted_at) VALUES (?, ?, ?, ?)")
        .bind(id, first.json.run_id, "api", new Date().toISOString())
        .run();
      expect((await trigger({ message: "m", delivery_id: id })).json).toMatchObject({ status: "duplicate", run_id: first.json.run_id });
    });
  });
});
