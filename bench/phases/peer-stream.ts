// Phase 18, the stream beside the Cloudflare Agents SDK (issue 33): the same
// PEER_EVENTS events PEER_GAP_MS apart (each append request awaited, then
// the gap), at 1 and 50 subscribers, on five streams in the same
// `wrangler dev`: the engine over SSE (served by the Worker from its socket,
// contract section 27), the engine over its WebSocket, the raw floor over SSE
// and over a hibernatable WebSocket (one SQLite insert, then the send: what
// the engine must do at least, since an event is stored before it is sent,
// section 5) and the peer, an `agents` Agent whose `broadcast()` feeds
// hibernatable WebSockets and stores nothing (bench/agents-peer.ts). Per
// stream: the runtime workerd's CPU over the whole trial (server CPU, the
// figure a shared machine blurs least), events per second (the events over
// the time from the first append to the last delivery at every subscriber)
// and p50 and p99 append-to-delivery. PEER_TRIALS trials, the order of the
// streams turning every trial; the median of each. `BENCH_ONLY=peer` runs it alone.
import { performance } from "node:perf_hooks";
import { type Client, type Frame, mapLimit, percentile, range, sleep, type Subscription, Waiter } from "../http-client";
import { ATTACH_CONCURRENCY, NS_PER_US, PEER_EVENTS, PEER_GAP_MS, PEER_SUBSCRIBER_COUNTS, PEER_TRIALS, TEXT_BYTES } from "../settings";
import { createRun } from "../targets";

export interface PeerTrial {
  /** Runtime workerd CPU over the trial, s. */
  cpuS: number;
  eventsPerSecond: number;
  /** Append-to-delivery, ms: the per-event cost (p50) and its tail (p99, the goal's). */
  p50: number;
  p99: number;
}

interface Stream {
  name: string;
  transport: "sse" | "websocket";
  create(client: Client): Promise<string>;
  path(id: string): string;
  /** Messages a subscriber gets before it is live (the engine replays run_started). */
  initial: number;
  appendPath(id: string): string;
  finish(client: Client, id: string): Promise<void>;
}

const query = (label: string) => `count=1&bytes=${TEXT_BYTES}&label=${label}`;
let peers = 0;
/** A raw floor object, made by asking its stats. */
const createRaw = async (client: Client) => {
  const name = `peer-raw-${++peers}`;
  await client.expect(200, "GET", `/bench/raw/${name}/stats`);
  return name;
};
const engineFinish = async (client: Client, id: string) => {
  await client.engine.cancel(id);
};

const PEER_NAME = "Agents SDK broadcast()";

export const STREAMS: readonly Stream[] = [
  {
    name: "engine SSE",
    transport: "sse",
    create: createRun,
    path: (id) => `/api/runs/${id}/events?after=0`,
    initial: 1,
    appendPath: (id) => `/bench/runs/${id}/append`,
    finish: engineFinish,
  },
  {
    name: "engine WebSocket",
    transport: "websocket",
    create: createRun,
    path: (id) => `/api/runs/${id}/events?after=0`,
    initial: 1,
    appendPath: (id) => `/bench/runs/${id}/append`,
    finish: engineFinish,
  },
  {
    name: "raw floor SSE",
    transport: "sse",
    create: createRaw,
    path: (id) => `/bench/raw/${id}/events`,
    initial: 0,
    appendPath: (id) => `/bench/raw/${id}/append`,
    finish: async () => {},
  },
  {
    // The WebSocket's floor: the peer's hibernatable socket plus the one row the engine stores before each send.
    name: "raw floor WebSocket",
    transport: "websocket",
    create: createRaw,
    path: (id) => `/bench/raw/${id}/ws`,
    initial: 0,
    appendPath: (id) => `/bench/raw/${id}/append`,
    finish: async () => {},
  },
  {
    name: PEER_NAME,
    transport: "websocket",
    create: async () => `peer-${++peers}`,
    path: (id) => `/bench/peer/${id}/ws`,
    initial: 0,
    appendPath: (id) => `/bench/peer/${id}/append`,
    finish: async () => {},
  },
];

/** A WebSocket subscriber (Node's global WebSocket, the bearer in a header); resolves once open. */
function subscribeWs(client: Client, path: string, onMessage: (data: string, at: number) => void): Promise<Subscription> {
  return new Promise((resolve, reject) => {
    const url = `${client.url.replace(/^http/, "ws")}${path}`;
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${client.token}` } } as never);
    ws.addEventListener("message", (e: MessageEvent) => onMessage(String(e.data), performance.now()));
    ws.addEventListener("open", () => resolve({ close: () => ws.close(1000) }), { once: true });
    ws.addEventListener("error", () => reject(new Error(`WebSocket ${path}: failed to open`)), { once: true });
  });
}

const LABEL = /"text":"e(\d+)_/;

export async function trial(client: Client, stream: Stream, subscribers: number): Promise<PeerTrial> {
  const id = await stream.create(client);
  const waiter = new Waiter();
  const seen = new Array<number>(subscribers).fill(0);
  const sentAt = new Array<number>(PEER_EVENTS).fill(Number.NaN);
  const latencies: number[] = [];
  let delivered = 0;
  let lastAt = 0;
  const onData = (i: number, data: string, at: number) => {
    seen[i]!++;
    const probe = LABEL.exec(data);
    if (probe) {
      delivered++;
      lastAt = Math.max(lastAt, at);
      latencies.push(at - sentAt[Number(probe[1])]!);
    }
    waiter.notify();
  };
  const subs = await mapLimit(range(subscribers), ATTACH_CONCURRENCY, (i) =>
    stream.transport === "sse"
      ? client.subscribe(stream.path(id), (frame: Frame, at) => onData(i, frame.data, at))
      : subscribeWs(client, stream.path(id), (data, at) => onData(i, data, at)),
  );
  await waiter.until(() => seen.every((n) => n >= stream.initial), `${subscribers} ${stream.name} subscribers to go live`);
  const cpuBefore = client.cpu();
  const started = performance.now();
  for (let i = 0; i < PEER_EVENTS; i++) {
    sentAt[i] = performance.now();
    await client.expect(200, "POST", `${stream.appendPath(id)}?${query(`e${i}_`)}`);
    await sleep(PEER_GAP_MS);
  }
  await waiter.until(() => delivered >= PEER_EVENTS * subscribers, `${PEER_EVENTS} events at ${subscribers} ${stream.name} subscribers`);
  const cpuAfter = client.cpu();
  for (const sub of subs) sub.close();
  await stream.finish(client, id);
  latencies.sort((a, b) => a - b);
  return {
    cpuS: (cpuAfter.runtime - cpuBefore.runtime) / NS_PER_US / 1e6,
    eventsPerSecond: PEER_EVENTS / ((lastAt - started) / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/** Every stream at every count, PEER_TRIALS times, the order turning; the median of each. Keys: `${name}@${subscribers}`. */
export async function peerStreamPhase(client: Client): Promise<Map<string, PeerTrial>> {
  const trials = new Map<string, PeerTrial[]>();
  // Warm-up: each stream once, 1 subscriber (JIT, SQLite pages, the peer's class).
  for (const stream of STREAMS) await trial(client, stream, 1);
  for (const subscribers of PEER_SUBSCRIBER_COUNTS) {
    for (let t = 0; t < PEER_TRIALS; t++) {
      const order = STREAMS.map((_, i) => STREAMS[(i + t) % STREAMS.length]!);
      for (const stream of order) {
        const key = `${stream.name}@${subscribers}`;
        trials.set(key, [...(trials.get(key) ?? []), await trial(client, stream, subscribers)]);
      }
    }
  }
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  return new Map(
    [...trials].map(([key, list]) => [
      key,
      {
        cpuS: median(list.map((t) => t.cpuS)),
        eventsPerSecond: median(list.map((t) => t.eventsPerSecond)),
        p50: median(list.map((t) => t.p50)),
        p99: median(list.map((t) => t.p99)),
      },
    ]),
  );
}

const GOALS = {
  cpu: (subscribers: number, transport: "sse" | "websocket") => (subscribers === 1 ? 1.5 : transport === "websocket" ? 1.1 : 1.3),
  eventsPerSecond: 0.97,
  p99: 1.2,
};

/** The phase's table: each engine stream beside the peer (ratios and goals), the raw floor for scale. */
export function peerStreamReport(results: Map<string, PeerTrial>, load: { before: string; after: string }): string {
  const peer = STREAMS.find((s) => s.name === PEER_NAME)!;
  const lines = [
    "",
    `## 18. The stream beside the Agents SDK (issue 33): ${PEER_EVENTS} events ${PEER_GAP_MS} ms apart, median of ${PEER_TRIALS} trials`,
    "",
    `load average before/after: ${load.before}/${load.after} (a shared 2-core machine: ratios are the figures to read)`,
    "",
    "| stream | subscribers | server CPU s | vs peer (goal) | events/s | vs peer (goal) | p50 ms | vs peer | p99 ms | vs peer (goal) |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  const f = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : "n/a");
  for (const subscribers of PEER_SUBSCRIBER_COUNTS) {
    const p = results.get(`${peer.name}@${subscribers}`);
    for (const stream of STREAMS) {
      const r = results.get(`${stream.name}@${subscribers}`);
      if (!r || !p) continue;
      if (stream === peer) {
        lines.push(
          `| ${stream.name} | ${subscribers} | ${f(r.cpuS)} | 1x | ${f(r.eventsPerSecond, 1)} | 1x | ${f(r.p50)} | 1x | ${f(r.p99)} | 1x |`,
        );
        continue;
      }
      const engine = stream.name.startsWith("engine");
      const cpu = r.cpuS / p.cpuS;
      const eps = r.eventsPerSecond / p.eventsPerSecond;
      const p99 = r.p99 / p.p99;
      const goal = (ratio: number, bound: number, atMost: boolean) =>
        engine ? ` (${atMost ? "≤" : "≥"} ${bound}x ${(atMost ? ratio <= bound : ratio >= bound) ? "met" : "missed"})` : "";
      lines.push(
        `| ${stream.name} | ${subscribers} | ${f(r.cpuS)} | ${f(cpu)}x${goal(cpu, GOALS.cpu(subscribers, stream.transport), true)} | ${f(r.eventsPerSecond, 1)} | ${f(eps)}x${goal(eps, GOALS.eventsPerSecond, false)} | ${f(r.p50)} | ${f(r.p50 / p.p50)}x | ${f(r.p99)} | ${f(p99)}x${goal(p99, GOALS.p99, true)} |`,
      );
    }
  }
  return `${lines.join("\n")}\n`;
}
