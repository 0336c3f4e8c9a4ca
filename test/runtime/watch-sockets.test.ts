// Watching without holding the run (contract section 27) inside workerd: the
// WebSocket stream on the events route (byte-identical messages, `after`,
// close codes 1000 / 4410 / 1008 / 4401, ping answered pong), the checks
// before the upgrade and the Origin rule, no heartbeat for WebSocket-only
// watchers, the summary's watchers, STREAM_MAX_SECONDS, and a run waiting for
// a person evicted with a WebSocket and an SSE watcher attached, whose later
// events still reach each watcher once, in order.
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, freshAddress, runStub, SseReader, sequences, sleep, TOKEN, trigger, types } from "./helpers";

const ORIGIN = "https://engine.test";
/** A turn that keeps the run "thinking" far longer than any test lasts. */
const BLOCKED = { text: "late", delay_ms: 600_000 };
const ASKING = [{ text: "asking", tool_calls: [{ tool_name: "human__ask", arguments: { question: "Which team?" } }] }, { text: "thanks" }];

/** One WebSocket client: its messages as they arrive, and how it closed. */
class Watcher {
  readonly messages: string[] = [];
  closed: { code: number; reason: string } | undefined;

  constructor(readonly ws: WebSocket) {
    ws.addEventListener("message", (e) => {
      this.messages.push(String(e.data));
    });
    ws.addEventListener("close", (e) => {
      this.closed = { code: e.code, reason: e.reason };
    });
    ws.accept();
  }

  get events(): any[] {
    return this.messages.filter((m) => m !== "pong").map((m) => JSON.parse(m));
  }

  async until(what: string, done: () => boolean, timeoutMs = 5_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > end)
        throw new Error(`timed out waiting for ${what}; got ${this.messages.length} messages, closed ${JSON.stringify(this.closed)}`);
      await sleep(10);
    }
  }

  untilClosed(): Promise<void> {
    return this.until("the close", () => this.closed !== undefined);
  }

  untilEvents(count: number): Promise<void> {
    return this.until(`${count} events`, () => this.events.length >= count);
  }
}

function upgrade(runId: string, query = "", headers: Record<string, string> = {}): Promise<Response> {
  return api(`/api/runs/${runId}/events${query}`, { headers: { upgrade: "websocket", ...headers } });
}

async function watch(runId: string, query = "", headers: Record<string, string> = {}): Promise<Watcher> {
  const res = await upgrade(runId, query, headers);
  expect(res.status).toBe(101);
  return new Watcher(res.webSocket!);
}

async function summary(runId: string) {
  return (await api(`/api/runs/${runId}`)).json<any>();
}

/** The run's SSE `data:` lines, as the SSE route replays them. */
async function sseDataLines(runId: string): Promise<string[]> {
  const text = await (await api(`/api/runs/${runId}/events`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => l.slice("data: ".length));
}

async function signInCookie(token = TOKEN): Promise<string> {
  const res = await SELF.fetch(`${ORIGIN}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": freshAddress() },
    body: JSON.stringify({ token }),
  });
  expect(res.status).toBe(204);
  return res.headers.get("set-cookie")!.split(";")[0]!;
}

function consecutiveFrom1(events: any[]): boolean {
  return events.every((e, i) => e.sequence === i + 1);
}

describe("the WebSocket stream", () => {
  it("sends each event's JSON byte-identical to the SSE data line, from after, then closes 1000 after the terminal event", async () => {
    const { json } = await trigger({ message: "m", script: [{ text: "one" }, { text: "two" }] });
    await expect.poll(async () => (await summary(json.run_id)).status).toBe("completed");
    const lines = await sseDataLines(json.run_id);
    expect(lines.length).toBe(4);

    const all = await watch(json.run_id);
    await all.untilClosed();
    expect(all.messages).toEqual(lines);
    expect(all.closed?.code).toBe(1000);

    const after2 = await watch(json.run_id, "?after=2");
    await after2.untilClosed();
    expect(after2.messages).toEqual(lines.slice(2));
    expect(after2.closed?.code).toBe(1000);

    // An ended run with nothing after `after`: closed with 1000 at once, nothing sent.
    const past = await watch(json.run_id, "?after=4");
    await past.untilClosed();
    expect(past.messages).toEqual([]);
    expect(past.closed?.code).toBe(1000);
  });

  it("replays, then goes live, then closes 1000 after the terminal event; the messages match the SSE replay", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const live = await watch(json.run_id);
    await live.untilEvents(1);
    expect(live.events.map((e) => e.type)).toEqual(["run_started"]);
    expect((await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" })).status).toBe(202);
    await live.untilClosed();
    expect(live.closed?.code).toBe(1000);
    expect(live.events.at(-1)).toMatchObject({ type: "run_failed", error: { code: "cancelled" } });
    expect(live.messages).toEqual(await sseDataLines(json.run_id));
  });

  it("answers ping with pong and closes 1008 on any other client message", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const w = await watch(json.run_id);
    await w.untilEvents(1);
    w.ws.send("ping");
    await w.until("pong", () => w.messages.includes("pong"));
    expect(w.closed).toBeUndefined();
    w.ws.send("hello");
    await w.untilClosed();
    expect(w.closed?.code).toBe(1008);
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
  });

  it("closes 4410 replay_gap:<earliest_sequence> for a run whose events retention deleted", async () => {
    const { json } = await trigger({ message: "m" });
    await expect.poll(async () => (await summary(json.run_id)).status).toBe("completed");
    const last: number = (await summary(json.run_id)).last_sequence;
    const stub = runStub(json.run_id);
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec(`UPDATE deadlines SET due_at = 0 WHERE name = 'retention'`);
    });
    await expect.poll(async () => (await runDurableObjectAlarm(stub), (await api(`/api/runs/${json.run_id}`)).status)).toBe(404);
    const gap = await watch(json.run_id, "?after=0");
    await gap.untilClosed();
    expect(gap.closed).toEqual({ code: 4410, reason: `replay_gap:${last + 1}` });
    expect(gap.messages).toEqual([]);
    const nothingLeft = await watch(json.run_id, `?after=${last}`);
    await nothingLeft.untilClosed();
    expect(nothingLeft.closed?.code).toBe(1000);
  });
});

describe("before the upgrade", () => {
  it("answers a bad after 400, no credential 401, an unknown run 404", async () => {
    const { json } = await trigger({ message: "m" });
    const bad = await upgrade(json.run_id, "?after=-1");
    expect(bad.status).toBe(400);
    expect(bad.webSocket).toBeNull();
    const anonymous = await SELF.fetch(`${ORIGIN}/api/runs/${json.run_id}/events`, {
      headers: { upgrade: "websocket", "cf-connecting-ip": freshAddress() },
    });
    expect(anonymous.status).toBe(401);
    const unknown = await upgrade("run_01JZZZZZZZZZZZZZZZZZZZZZZZ");
    expect(unknown.status).toBe(404);
  });

  it("needs Origin equal to the request's origin for the console cookie (403 forbidden_origin), none for a bearer token", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const cookie = await signInCookie();
    const byCookie = (origin?: string) =>
      SELF.fetch(`${ORIGIN}/api/runs/${json.run_id}/events`, {
        headers: { upgrade: "websocket", cookie, "cf-connecting-ip": freshAddress(), ...(origin ? { origin } : {}) },
      });
    for (const origin of [undefined, "https://evil.example"]) {
      const refused = await byCookie(origin);
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ error: "forbidden_origin" });
    }
    const same = await byCookie(ORIGIN);
    expect(same.status).toBe(101);
    new Watcher(same.webSocket!).ws.close(1000);
    // A bearer token is not sent by the browser by itself: no Origin needed.
    const bearer = await upgrade(json.run_id);
    expect(bearer.status).toBe(101);
    new Watcher(bearer.webSocket!).ws.close(1000);
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
  });
});

describe("watchers", () => {
  it("appends no heartbeat while only WebSocket watchers wait, and counts both kinds in the summary", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const w = await watch(json.run_id);
    await w.untilEvents(1);
    expect(await summary(json.run_id)).toMatchObject({ subscribers: 1, watchers: { sse: 0, websocket: 1 }, last_sequence: 1 });
    await sleep(350); // 3.5 heartbeat intervals of the test config
    await runDurableObjectAlarm(runStub(json.run_id));
    expect((await summary(json.run_id)).last_sequence).toBe(1);
    expect(w.events.length).toBe(1);

    // An SSE watcher makes the run append heartbeats, and the WebSocket watcher gets them too.
    const sse = new SseReader(await api(`/api/runs/${json.run_id}/events`));
    expect(await summary(json.run_id)).toMatchObject({ subscribers: 2, watchers: { sse: 1, websocket: 1 } });
    await sse.readUntil(3);
    expect(types(sse.events)).toEqual(["run_started", "heartbeat", "heartbeat"]);
    await w.untilEvents(3);
    expect(w.events.slice(0, 3).map((e) => e.type)).toEqual(["run_started", "heartbeat", "heartbeat"]);
    await sse.cancel();
    await expect.poll(async () => (await summary(json.run_id)).watchers).toEqual({ sse: 0, websocket: 1 });
    w.ws.close(1000);
    await expect.poll(async () => (await summary(json.run_id)).subscribers).toBe(0);
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
  });

  it("delivers every event after an eviction to each watcher once, in order, while the run waits for a person", async () => {
    const { json } = await trigger({ message: "m", script: ASKING });
    const runId: string = json.run_id;
    const ws = await watch(runId);
    const sse = new SseReader(await api(`/api/runs/${runId}/events`));
    await expect.poll(async () => (await summary(runId)).pending_inputs.length).toBe(1);
    await ws.until("the question", () => ws.events.some((e) => e.type === "human_input_requested"));
    const before = (await summary(runId)).last_sequence;
    // No watcher holds a request open on the object, so it can be evicted; the sockets hibernate.
    await evictDurableObject(runStub(runId));
    const toolCallId: string = (await summary(runId)).pending_inputs[0].tool_call_id;
    const answered = await api(`/api/runs/${runId}/inputs/${toolCallId}`, { method: "POST", body: JSON.stringify({ answer: "platform" }) });
    expect(answered.status).toBeLessThan(300);
    await ws.untilClosed();
    expect(ws.closed?.code).toBe(1000);
    const sseEvents = await sse.readToEnd();
    const last: number = (await summary(runId)).last_sequence;
    expect(last).toBeGreaterThan(before);
    // Each watcher: every sequence from 1 to the last exactly once, in order, ending with run_completed.
    expect(ws.events.map((e) => e.sequence)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(consecutiveFrom1(ws.events)).toBe(true);
    expect(sequences(sseEvents)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(ws.events.at(-1).type).toBe("run_completed");
    expect(types(sseEvents).at(-1)).toBe("run_completed");
    expect(ws.events.map((e) => e.type)).toEqual(expect.arrayContaining(["human_input_received", "tool_execution", "tool_completed"]));
  });
});

describe("a stream keeps its credential", () => {
  it("closes 4401 credential_ended at the next send after its token was revoked, and ends the SSE response", async () => {
    const name = `watch-${crypto.randomUUID().slice(0, 8)}`;
    const made = await api("/api/tokens", { method: "POST", body: JSON.stringify({ name, roles: ["viewer"] }) });
    expect(made.status).toBe(201);
    const token: string = (await made.json<any>()).token;
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const auth = { authorization: `Bearer ${token}` };
    const ws = await watch(json.run_id, "", auth);
    const sse = new SseReader(await api(`/api/runs/${json.run_id}/events`, { headers: auth }));
    // A root-token SSE watcher keeps heartbeats flowing, so both streams keep sending.
    const root = new SseReader(await api(`/api/runs/${json.run_id}/events`));
    await sse.readUntil(3);
    await ws.untilEvents(3);
    expect(ws.closed).toBeUndefined();
    expect((await api(`/api/tokens/${name}`, { method: "DELETE" })).status).toBe(200);
    await ws.untilClosed();
    expect(ws.closed).toEqual({ code: 4401, reason: "credential_ended" });
    await sse.readToEnd();
    expect(sse.done).toBe(true);
    // The root token's stream goes on.
    const seen = root.events.length;
    await root.readUntil(seen + 2);
    expect(root.done).toBe(false);
    await root.cancel();
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
  });

  it("closes every stream after STREAM_MAX_SECONDS (WebSocket 1000 reconnect), the alarm waking it", async () => {
    const { json } = await trigger({ message: "m", script: [BLOCKED] });
    const stub = runStub(json.run_id);
    const ws = await watch(json.run_id);
    const sse = new SseReader(await api(`/api/runs/${json.run_id}/events`));
    await ws.untilEvents(1);
    await sse.readUntil(1);
    // Open them an hour and a second ago (the default STREAM_MAX_SECONDS is 3600), then let the object wake from its alarm.
    await runInDurableObject(stub, (_i, state) => {
      for (const socket of state.getWebSockets()) {
        const attachment = socket.deserializeAttachment() as { opened_at: number };
        socket.serializeAttachment({ ...attachment, opened_at: Date.now() - 3_601_000 });
      }
    });
    await evictDurableObject(stub);
    await runDurableObjectAlarm(stub);
    await ws.untilClosed();
    expect(ws.closed).toEqual({ code: 1000, reason: "reconnect" });
    await sse.readToEnd();
    expect(sse.done).toBe(true);
    expect((await summary(json.run_id)).status).toBe("running");
    // Resuming with `after` gets what followed, nothing twice.
    const seen = ws.events.at(-1).sequence;
    const again = await watch(json.run_id, `?after=${seen}`);
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
    await again.untilClosed();
    expect(again.events[0].sequence).toBe(seen + 1);
    expect(again.events.at(-1).type).toBe("run_failed");
  });
});
