// The engine client's event iterator against a local SSE server that misbehaves
// as a network and a server can: it cuts connections mid-frame, replays events
// the client already has, answers 204, 410 replay_gap, 503 with Retry-After and
// 404. Everything runs over real loopback HTTP; no Worker is involved.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError, EngineClient, type EngineEvent, ReplayGapError, StreamRetriesExhaustedError } from "../../src/client";

const RUN = "run_01TEST";
const TOKEN = "client-test-token";

function event(sequence: number, last: number): EngineEvent {
  const base = { protocol_version: "v2" as const, sequence, run_id: RUN, channel_id: "C1", at: new Date(0).toISOString() };
  if (sequence === 1) return { ...base, type: "run_started", user_id: "U1" };
  if (sequence === last) return { ...base, type: "run_completed", tool_calls: 0 };
  return { ...base, type: "assistant_message", text: `step ${sequence} ${"x".repeat(40)}` };
}

const frame = (e: EngineEvent) => `id: ${e.sequence}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

type Handler = (req: IncomingMessage, res: ServerResponse, after: number, attempt: number) => void;

interface FakeServer {
  url: string;
  /** The `after` of every events request, in order. */
  afters: number[];
  authorizations: (string | undefined)[];
  close(): Promise<void>;
}

const servers: FakeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(handler: Handler): Promise<FakeServer> {
  const afters: number[] = [];
  const authorizations: (string | undefined)[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname !== `/api/runs/${RUN}/events`) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not_found", message: "No run." }));
      return;
    }
    const after = Number(url.searchParams.get("after") ?? "0");
    afters.push(after);
    authorizations.push(req.headers.authorization);
    handler(req, res, after, afters.length);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const fake: FakeServer = {
    url: `http://127.0.0.1:${port}`,
    afters,
    authorizations,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  servers.push(fake);
  return fake;
}

const sse = (res: ServerResponse) => res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });

async function collect(iterable: AsyncIterable<EngineEvent>): Promise<EngineEvent[]> {
  const out: EngineEvent[] = [];
  for await (const e of iterable) out.push(e);
  return out;
}

const clientFor = (server: FakeServer) => new EngineClient({ baseUrl: server.url, token: TOKEN });
const fast = { retryDelayMs: 5, maxDelayMs: 20 };

describe("EngineClient.events", () => {
  it("resumes after every cut, mid-frame included, and yields each sequence exactly once", async () => {
    const LAST = 60;
    const CUT_EVERY = 7;
    // Each connection replays from two events BEFORE `after` (a server or proxy that overlaps), then cuts
    // the socket halfway through the frame after a few new events, until the terminal event is reached.
    const server = await serve((_req, res, after) => {
      sse(res);
      const from = Math.max(1, after - 1);
      const to = Math.min(LAST, after + CUT_EVERY);
      let body = "";
      for (let s = from; s <= to; s++) body += frame(event(s, LAST));
      if (to < LAST) {
        const next = frame(event(to + 1, LAST));
        body += next.slice(0, Math.floor(next.length / 2));
        res.write(body, () => res.socket?.destroy());
      } else res.end(body);
    });
    const events = await collect(clientFor(server).events(RUN, fast));
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: LAST }, (_, i) => i + 1));
    expect(events.at(-1)?.type).toBe("run_completed");
    // At least seven cuts, each resumed from the last sequence yielded.
    expect(server.afters.length).toBeGreaterThanOrEqual(8);
    expect(server.afters).toEqual(server.afters.map((_, i) => i * CUT_EVERY));
    expect(new Set(server.authorizations)).toEqual(new Set([`Bearer ${TOKEN}`]));
  });

  it("starts after the given sequence and stops after the terminal event without reading further", async () => {
    const server = await serve((_req, res, after) => {
      sse(res);
      // Frames after the terminal one must never be yielded (the contract appends nothing after it).
      res.write(frame(event(after + 1, after + 2)) + frame(event(after + 2, after + 2)));
      res.write(frame({ ...event(after + 3, 0), type: "heartbeat" } as EngineEvent));
      // The response stays open: the iterator ends on the terminal event, not on the socket's end.
    });
    const events = await collect(clientFor(server).events(RUN, { after: 40 }));
    expect(events.map((e) => [e.sequence, e.type])).toEqual([
      [41, "assistant_message"],
      [42, "run_completed"],
    ]);
    expect(server.afters).toEqual([40]);
  });

  it("ends on 204 after a cut when the run has ended meanwhile", async () => {
    const server = await serve((_req, res, after, attempt) => {
      if (attempt === 1) {
        sse(res);
        res.write(frame(event(1, 99)) + frame(event(2, 99)), () => res.socket?.destroy());
      } else {
        expect(after).toBe(2);
        res.writeHead(204).end();
      }
    });
    const events = await collect(clientFor(server).events(RUN, fast));
    expect(events.map((e) => e.sequence)).toEqual([1, 2]);
    expect(server.afters).toEqual([0, 2]);
  });

  it("throws ReplayGapError with the earliest retained sequence on 410 replay_gap", async () => {
    const server = await serve((_req, res, _after, attempt) => {
      if (attempt === 1) {
        sse(res);
        res.write(frame(event(1, 99)), () => res.socket?.destroy());
        return;
      }
      res
        .writeHead(410, { "content-type": "application/json" })
        .end(JSON.stringify({ error: "replay_gap", message: "gone", earliest_sequence: 17 }));
    });
    const seen: number[] = [];
    const failure = await (async () => {
      for await (const e of clientFor(server).events(RUN, fast)) seen.push(e.sequence);
    })().catch((err: unknown) => err);
    expect(seen).toEqual([1]);
    expect(failure).toBeInstanceOf(ReplayGapError);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ReplayGapError).earliestSequence).toBe(17);
    expect((failure as ReplayGapError).status).toBe(410);
    expect((failure as ReplayGapError).message).toContain("after sequence 1");
  });

  it("waits out a 503 with its Retry-After, then resumes", async () => {
    const server = await serve((_req, res, after, attempt) => {
      if (attempt === 2) {
        res
          .writeHead(503, { "content-type": "application/json", "retry-after": "0" })
          .end(JSON.stringify({ error: "storage_timeout", message: "busy" }));
        return;
      }
      sse(res);
      if (attempt === 1) res.write(frame(event(1, 3)), () => res.socket?.destroy());
      else res.end(frame(event(after + 1, 3)) + frame(event(after + 2, 3)));
    });
    const events = await collect(clientFor(server).events(RUN, fast));
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect(server.afters).toEqual([0, 1, 1]);
  });

  it("does not retry a refusal: 404 is an ApiError with the server's code and message", async () => {
    const server = await serve(() => {});
    const client = clientFor(server);
    const failure = await collect(client.events("run_unknown")).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure).toMatchObject({ status: 404, code: "not_found" });
    expect(String((failure as ApiError).message)).toContain("No run.");
    expect(server.afters).toEqual([]);
  });

  it("gives up after the bounded number of attempts that deliver nothing new", async () => {
    const server = await serve((_req, res) => {
      sse(res);
      res.write(": nothing\n\n", () => res.socket?.destroy());
    });
    const failure = await collect(clientFor(server).events(RUN, { ...fast, maxAttemptsWithoutProgress: 3 })).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(StreamRetriesExhaustedError);
    expect(server.afters).toEqual([0, 0, 0, 0]);
  });

  it("stops reading when the consumer breaks out, and an abort ends the iteration with its reason", async () => {
    let closed = 0;
    const server = await serve((_req, res) => {
      sse(res);
      res.on("close", () => closed++);
      res.write(frame(event(1, 99)) + frame(event(2, 99)));
    });
    const client = clientFor(server);
    for await (const e of client.events(RUN)) if (e.sequence === 2) break;
    await expect.poll(() => closed).toBe(1);

    const controller = new AbortController();
    const seen: number[] = [];
    const failure = await (async () => {
      for await (const e of client.events(RUN, { signal: controller.signal })) {
        seen.push(e.sequence);
        if (e.sequence === 1) setTimeout(() => controller.abort(new Error("consumer gave up")), 20);
      }
    })().catch((err: unknown) => err);
    expect(seen).toEqual([1, 2]);
    expect(String(failure)).toContain("consumer gave up");
    await expect.poll(() => closed).toBe(2);
  });
});
