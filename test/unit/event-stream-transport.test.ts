// The client's choice of transport (contract section 27): streamEvents over a
// WebSocket first, with SSE as the fallback when the upgrade is refused other
// than 401, 403, 404 or 410, or the socket closes abnormally (1006) twice
// running; close 1000 "reconnect" resumes on the WebSocket, 4410 is a
// ReplayGapError, 4401 an ApiError; and a switch never yields an event twice.
// Sockets and responses are in-memory stand-ins: the wire itself is covered by
// test/runtime/watch-sockets.test.ts and the e2e file.
import { describe, expect, it } from "vitest";
import { ApiError, type EngineEvent, ReplayGapError } from "../../src/client";
import { type OpenSocket, streamEvents } from "../../src/client/event-stream";
import type { WebSocketLike } from "../../src/client/socket-stream";

const RUN = "run_01UNIT";
const LAST = 6;

function event(sequence: number): EngineEvent {
  const base = { protocol_version: "v2" as const, sequence, run_id: RUN, channel_id: "C1", at: new Date(0).toISOString() };
  if (sequence === 1) return { ...base, type: "run_started", user_id: "U1" };
  if (sequence === LAST) return { ...base, type: "run_completed", tool_calls: 0 };
  return { ...base, type: "assistant_message", text: `step ${sequence}` };
}

/** A socket that delivers `messages` then closes with `code`/`reason` (or never opens). */
class FakeSocket implements WebSocketLike {
  readyState = 0;
  readonly sent: string[] = [];
  #listeners = new Map<string, ((e: unknown) => void)[]>();

  constructor(messages: string[], close: { code: number; reason?: string } | undefined, opens = true) {
    setTimeout(() => {
      if (!opens) {
        this.#emit("error", {});
        this.#emit("close", { code: 1006, reason: "" });
        return;
      }
      this.readyState = 1;
      this.#emit("open", {});
      for (const data of messages) this.#emit("message", { data });
      if (close) {
        this.readyState = 3;
        this.#emit("close", { code: close.code, reason: close.reason ?? "" });
      }
    }, 0);
  }

  send(data: string): void {
    this.sent.push(data);
  }
  close(): void {
    this.readyState = 3;
  }
  addEventListener(type: string, listener: (e: never) => void): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener as (e: unknown) => void]);
  }
  #emit(type: string, e: unknown): void {
    for (const l of this.#listeners.get(type) ?? []) l(e);
  }
}

const json = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => JSON.stringify(event(from + i)));
const sseBody = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => event(from + i))
    .map((e) => `id: ${e.sequence}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
    .join("");

interface Script {
  sockets: ((after: number) => Awaited<ReturnType<OpenSocket>>)[];
  sse?: (after: number) => Response;
}

function run(script: Script) {
  const socketAfters: number[] = [];
  const sseAfters: number[] = [];
  const openSocket: OpenSocket = async (after) => {
    socketAfters.push(after);
    const next = script.sockets.shift();
    if (!next) throw new Error("no more sockets scripted");
    return next(after);
  };
  const open = async (after: number) => {
    sseAfters.push(after);
    if (!script.sse) throw new Error("SSE was not expected");
    return script.sse(after);
  };
  const events = streamEvents(RUN, open, { retryDelayMs: 1, maxDelayMs: 2 }, undefined, openSocket);
  return { events, socketAfters, sseAfters };
}

async function collect(iterable: AsyncIterable<EngineEvent>): Promise<number[]> {
  const out: number[] = [];
  for await (const e of iterable) out.push(e.sequence);
  return out;
}

describe("streamEvents over a WebSocket", () => {
  it("yields the socket's events and ends after the terminal event, without SSE", async () => {
    const r = run({ sockets: [() => ({ socket: new FakeSocket(json(1, LAST), { code: 1000 }) })] });
    expect(await collect(r.events)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(r.sseAfters).toEqual([]);
  });

  it("resumes on the WebSocket after close 1000 reconnect, from the last sequence yielded, nothing twice", async () => {
    const r = run({
      sockets: [
        () => ({ socket: new FakeSocket(json(1, 3), { code: 1000, reason: "reconnect" }) }),
        // The server replays from `after`; a repeat of 3 would be skipped anyway.
        (after) => ({ socket: new FakeSocket(json(after, LAST), { code: 1000 }) }),
      ],
    });
    expect(await collect(r.events)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(r.socketAfters).toEqual([0, 3]);
    expect(r.sseAfters).toEqual([]);
  });

  it("falls back to SSE after two abnormal closes (1006) running, from the last sequence yielded", async () => {
    const r = run({
      sockets: [
        () => ({ socket: new FakeSocket(json(1, 2), { code: 1006 }) }),
        (after) => ({ socket: new FakeSocket(json(after + 1, 3), { code: 1006 }) }),
      ],
      sse: (after) => new Response(sseBody(after - 1, LAST), { headers: { "content-type": "text/event-stream" } }),
    });
    expect(await collect(r.events)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(r.socketAfters).toEqual([0, 2]);
    expect(r.sseAfters).toEqual([3]);
  });

  it("reconnects the WebSocket after one abnormal close", async () => {
    const r = run({
      sockets: [
        () => ({ socket: new FakeSocket(json(1, 2), { code: 1006 }) }),
        (after) => ({ socket: new FakeSocket(json(after + 1, LAST), { code: 1000 }) }),
      ],
    });
    expect(await collect(r.events)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(r.sseAfters).toEqual([]);
  });

  it("falls back to SSE when the upgrade is refused other than 401, 403, 404 or 410, or never opens", async () => {
    for (const refusal of [
      () => ({ refused: new Response("no", { status: 426 }) }),
      () => ({ socket: new FakeSocket([], undefined, false) }),
      () => null,
    ]) {
      const r = run({ sockets: [refusal], sse: (after) => new Response(sseBody(after + 1, LAST)) });
      expect(await collect(r.events)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(r.sseAfters).toEqual([0]);
    }
  });

  it("throws the refusal for 401, 403, 404 and 410, without trying SSE", async () => {
    for (const status of [401, 403, 404, 410]) {
      const body = JSON.stringify({ error: status === 410 ? "replay_gap" : `e${status}`, message: "no", earliest_sequence: 3 });
      const r = run({ sockets: [() => ({ refused: new Response(body, { status }) })] });
      const failure = await collect(r.events).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(ApiError);
      expect((failure as ApiError).status).toBe(status);
      expect(r.sseAfters).toEqual([]);
    }
  });

  it("turns close 4410 into a ReplayGapError and 4401 into an ApiError credential_ended", async () => {
    const gap = run({ sockets: [() => ({ socket: new FakeSocket([], { code: 4410, reason: "replay_gap:42" }) })] });
    const gapFailure = await collect(gap.events).catch((err: unknown) => err);
    expect(gapFailure).toBeInstanceOf(ReplayGapError);
    expect((gapFailure as ReplayGapError).earliestSequence).toBe(42);
    const ended = run({ sockets: [() => ({ socket: new FakeSocket(json(1, 2), { code: 4401, reason: "credential_ended" }) })] });
    const seen: number[] = [];
    const failure = await (async () => {
      for await (const e of ended.events) seen.push(e.sequence);
    })().catch((err: unknown) => err);
    expect(seen).toEqual([1, 2]);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ApiError).code).toBe("credential_ended");
    expect(ended.sseAfters).toEqual([]);
  });
});
