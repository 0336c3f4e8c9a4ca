// Watching without holding the run (contract section 27) over real loopback
// against the shared `wrangler dev`: a real WebSocket client (Node's global
// one) and a real `eventsource` client each drop their stream mid-run and
// rejoin with `after`, and get every event once, in order, the WebSocket's
// messages byte-identical to the SSE `data:` lines; the engine client on the
// WebSocket; a client message other than `ping` closes with 1008.
import { EventSource } from "eventsource";
import { describe, expect, it } from "vitest";
import { EngineClient, type EngineEvent } from "../../src/client";
import { auth, engine, slowScript, token, url } from "../support/e2e-client";

const wsUrl = (runId: string, after: number) => `${url.replace(/^http/, "ws")}/api/runs/${runId}/events?after=${after}`;

/** Opens a WebSocket with the bearer header; resolves once open. */
function openSocket(
  runId: string,
  after: number,
): Promise<{ ws: WebSocket; messages: string[]; closed: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(wsUrl(runId, after), { headers: auth } as never);
  const messages: string[] = [];
  ws.addEventListener("message", (e) => {
    messages.push(String(e.data));
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason }));
  });
  return new Promise((resolve, reject) => {
    ws.addEventListener("open", () => resolve({ ws, messages, closed }), { once: true });
    ws.addEventListener("error", () => reject(new Error(`the WebSocket of ${runId} did not open`)), { once: true });
  });
}

async function until(what: string, done: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function sseDataLines(runId: string): Promise<string[]> {
  const text = await (await fetch(`${url}/api/runs/${runId}/events`, { headers: auth })).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => l.slice("data: ".length));
}

const ones = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe("the WebSocket stream over loopback", () => {
  it("drops and rejoins with after: every event once, in order, byte-identical to the SSE data lines", async () => {
    const { run_id: runId } = await engine.trigger({ message: "m", script: slowScript(8, 150) });
    const first = await openSocket(runId, 0);
    await until("three events", () => first.messages.length >= 3);
    first.ws.close(1000, "dropping");
    await first.closed;
    const had = first.messages.map((m) => JSON.parse(m).sequence as number);
    const last = had.at(-1)!;
    const second = await openSocket(runId, last);
    const end = await second.closed;
    expect(end.code).toBe(1000);
    const all = [...first.messages, ...second.messages];
    const events = all.map((m) => JSON.parse(m));
    expect(events.map((e) => e.sequence)).toEqual(ones(events.length));
    expect(events.at(-1).type).toBe("run_completed");
    expect(all).toEqual(await sseDataLines(runId));
  });

  it("answers ping with pong and closes 1008 on any other client message", async () => {
    const { run_id: runId } = await engine.trigger({ message: "m", script: slowScript(3, 2_000) });
    const s = await openSocket(runId, 0);
    s.ws.send("ping");
    await until("pong", () => s.messages.includes("pong"));
    s.ws.send("subscribe");
    expect((await s.closed).code).toBe(1008);
    await engine.cancel(runId);
  });

  it("the engine client on the WebSocket yields every event once and counts as a WebSocket watcher", async () => {
    const client = new EngineClient({ baseUrl: url, token, webSocket: "header" });
    const { run_id: runId } = await engine.trigger({ message: "m", script: slowScript(5, 200) });
    const seen: EngineEvent[] = [];
    let watchers: unknown;
    for await (const e of client.events(runId)) {
      seen.push(e);
      if (seen.length === 2) watchers = (await engine.summary(runId)).watchers;
    }
    expect(watchers).toEqual({ sse: 0, websocket: 1 });
    expect(seen.map((e) => e.sequence)).toEqual(ones(seen.length));
    expect(seen.at(-1)?.type).toBe("run_completed");
  });
});

describe("SSE served by the Worker, over a real EventSource", () => {
  it("drops and rejoins with after: every event once, in order", async () => {
    const { run_id: runId } = await engine.trigger({ message: "m", script: slowScript(8, 150) });
    const withAuth = {
      fetch: (input: string | URL | Request, init?: RequestInit) => fetch(input, { ...init, headers: { ...init?.headers, ...auth } }),
    };
    const TYPES = ["run_started", "assistant_message", "heartbeat", "run_completed"];
    const received: { id: number; data: string; type: string }[] = [];
    const listen = (source: EventSource, stopAt: (n: number) => boolean) =>
      new Promise<void>((resolve) => {
        for (const type of TYPES) {
          source.addEventListener(type, (e: MessageEvent) => {
            received.push({ id: Number(e.lastEventId), data: e.data, type: e.type });
            if (stopAt(received.length) || e.type === "run_completed") {
              source.close();
              resolve();
            }
          });
        }
      });
    const first = new EventSource(`${url}/api/runs/${runId}/events`, withAuth);
    await listen(first, (n) => n >= 3);
    const last = received.at(-1)!.id;
    const second = new EventSource(`${url}/api/runs/${runId}/events?after=${last}`, withAuth);
    await listen(second, () => false);
    expect(received.map((e) => e.id)).toEqual(ones(received.length));
    expect(received.at(-1)?.type).toBe("run_completed");
    expect(received.map((e) => e.data)).toEqual(await sseDataLines(runId));
    const summary = await engine.summary(runId);
    expect(summary.subscribers).toBe(0);
  });
});
