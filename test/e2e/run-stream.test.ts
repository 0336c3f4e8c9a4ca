// The run stream end to end: the Worker under wrangler dev on loopback, real
// sockets that really close, the `eventsource` client resuming on its own.
import { EventSource } from "eventsource";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startCuttingProxy, type CuttingProxy } from "../support/cutting-proxy";
import { eventIds, eventTypes, RawSseClient } from "../support/sse-client";

const url = inject("workerUrl");
const token = inject("workerToken");
const auth = { authorization: `Bearer ${token}` };

async function trigger(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/api/trigger`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function summary(runId: string): Promise<any> {
  return (await fetch(`${url}/api/runs/${runId}`, { headers: auth })).json();
}

const events = (runId: string, query = "") => RawSseClient.open(`${url}/api/runs/${runId}/events${query}`, auth);

/** Turns that keep a run going for a few seconds: a message every `gapMs`. */
function slowScript(turns: number, gapMs: number) {
  return Array.from({ length: turns }, (_, i) => ({ text: `step ${i + 1}`, delay_ms: gapMs }));
}

describe("subscriber loss and reattach", () => {
  it("survives two consecutive subscriber losses mid-run; the third attach gets every event once, identical bytes", async () => {
    const { json } = await trigger({ message: "m", script: slowScript(8, 250) });
    const runId: string = json.run_id;

    const first = await events(runId);
    await first.waitFor(3);
    await first.close();
    const seenByFirst = Number(first.events.at(-1)!.id);
    await expect.poll(async () => (await summary(runId)).subscribers, { timeout: 5_000 }).toBe(0);
    expect((await summary(runId)).status).toBe("running");

    const second = await events(runId, `?after=${seenByFirst}`);
    await second.waitFor(2);
    await second.close();
    const seenBySecond = Number(second.events.at(-1)!.id);
    await expect.poll(async () => (await summary(runId)).subscribers, { timeout: 5_000 }).toBe(0);
    expect((await summary(runId)).status).toBe("running");

    const third = await events(runId, `?after=${seenBySecond}`);
    await third.toEnd();
    expect(eventTypes(third.events).at(-1)).toBe("run_completed");

    const all = [...first.events, ...second.events, ...third.events];
    const ids = eventIds(all);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(eventTypes(all).filter((t) => t === "assistant_message")).toHaveLength(8);

    // A full replay afterwards is byte-for-byte what the three subscribers received together.
    const replay = await events(runId);
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
    const { json } = await trigger({ message: "m", script: slowScript(6, 300) });
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
    const { json } = await trigger({ message: "m", script: [{ text: "done thinking", delay_ms: 1_500 }] });
    const client = await events(json.run_id);
    await client.toEnd();
    const types = eventTypes(client.events);
    expect(types[0]).toBe("run_started");
    expect(types.slice(-2)).toEqual(["assistant_message", "run_completed"]);
    // 1.5 s of thinking at a 200 ms heartbeat interval.
    expect(types.filter((t) => t === "heartbeat").length).toBeGreaterThanOrEqual(4);
    expect(eventIds(client.events)).toEqual(Array.from({ length: types.length }, (_, i) => i + 1));
  });
});

describe("unattended runs", () => {
  it("finishes with nobody attached and replays completely afterwards", async () => {
    const { json } = await trigger({ message: "m", script: slowScript(3, 100) });
    await expect.poll(async () => (await summary(json.run_id)).status, { timeout: 10_000 }).toBe("completed");
    const replay = await events(json.run_id);
    await replay.toEnd();
    expect(eventTypes(replay.events)).toEqual(["run_started", "assistant_message", "assistant_message", "assistant_message", "run_completed"]);
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

describe("cancel over HTTP", () => {
  it("ends the live stream with run_failed(cancelled)", async () => {
    const { json } = await trigger({ message: "m", script: [{ text: "never", delay_ms: 600_000 }] });
    const client = await events(json.run_id);
    await client.waitFor(1);
    const res = await fetch(`${url}/api/runs/${json.run_id}/cancel`, { method: "POST", headers: auth });
    expect(res.status).toBe(202);
    await client.toEnd();
    const last = JSON.parse(client.events.at(-1)!.data);
    expect(last).toMatchObject({ type: "run_failed", error: { code: "cancelled" } });
  });
});
