// A CPU profile of the append path (issue 33), to repeat by hand:
//   npm run bench:profile                      # engine SSE + WebSocket, 1 subscriber
//   PROFILE_SUBSCRIBERS=50 PROFILE_OUT=/tmp/a.cpuprofile npm run bench:profile
// It starts the bench Worker under `wrangler dev` (the same bundle as
// `npm run bench`), attaches to the Worker's V8 inspector (wrangler dev's
// --inspector-port; the run objects share the Worker's isolate), samples the
// CPU with the DevTools protocol's Profiler while phase 18's trial runs
// (PEER_EVENTS events PEER_GAP_MS apart, one append request each), writes the
// .cpuprofile (open it in Chrome DevTools' Performance panel or
// https://www.speedscope.app) and prints the functions with the most self
// time and, for the engine's own modules, the most total time.
import { writeFileSync } from "node:fs";
import { log } from "./http-client";
import { STREAMS, trial } from "./phases/peer-stream";
import { buildBenchBundle, shutdown, withServer } from "./servers";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** One DevTools protocol session over the inspector's WebSocket. */
async function connect(port: number): Promise<{ send: (method: string, params?: object) => Promise<unknown>; close: () => void }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl?: string; title?: string }[];
  const target = targets.find((t) => t.webSocketDebuggerUrl !== undefined);
  if (!target?.webSocketDebuggerUrl) throw new Error(`no inspector target on port ${port}: ${JSON.stringify(targets)}`);
  log(`profiling ${target.title ?? target.webSocketDebuggerUrl}`);
  // The inspector takes DevTools from a few origins only; loopback is one.
  const ws = new WebSocket(target.webSocketDebuggerUrl, { headers: { origin: "http://127.0.0.1" } } as never);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", reject, { once: true });
  });
  let next = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  ws.addEventListener("message", (e: MessageEvent) => {
    const message = JSON.parse(String(e.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  });
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const id = ++next;
        waiting.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/** Self and total time per function (ms), from the samples. */
function summarise(profile: Profile): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfMs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // Each sample counts as one interval: on a busy machine the sampler thread itself is late, and
  // weighting by timeDeltas would charge that lateness to whatever ran next.
  for (const id of samples) selfMs.set(id, (selfMs.get(id) ?? 0) + SAMPLING_INTERVAL_US / 1000);
  const wall = deltas.reduce((a, b) => a + b, 0) / 1000;
  const name = (n: ProfileNode) =>
    `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber + 1}`;
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  for (const [id, ms] of selfMs) {
    all += ms;
    const node = byId.get(id)!;
    self.set(name(node), (self.get(name(node)) ?? 0) + ms);
    // Total: each function on the stack once per sample.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = name(byId.get(at)!);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + ms);
    }
  }
  const top = (m: Map<string, number>, n: number, keep: (k: string) => boolean = () => true) =>
    [...m]
      .filter(([k]) => keep(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, ms]) => `  ${ms.toFixed(1).padStart(8)} ms  ${k}`)
      .join("\n");
  const idle = self.get("(idle) :0") ?? 0;
  return [
    `${samples.length} samples every ${SAMPLING_INTERVAL_US} µs over ${wall.toFixed(0)} ms of wall time: ${all.toFixed(0)} ms, of which idle ${idle.toFixed(0)} ms`,
    "self time, top 25:",
    top(self, 25, (k) => !k.startsWith("(idle)")),
    "total time, top 30 (functions with a name):",
    top(total, 30, (k) => !k.startsWith("(") && !k.startsWith("(anonymous)")),
  ].join("\n");
}

const SAMPLING_INTERVAL_US = 100;
const subscribers = Number(process.env.PROFILE_SUBSCRIBERS ?? "1");
const out = process.env.PROFILE_OUT ?? "/tmp/append.cpuprofile";
try {
  await buildBenchBundle();
  await withServer(async (server, client, direct) => {
    const path = direct ?? client;
    for (const stream of STREAMS.slice(0, 2)) await trial(path, stream, 1); // warm-up
    const session = await connect(server.inspectorPort);
    await session.send("Profiler.enable");
    await session.send("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
    await session.send("Profiler.start");
    for (const stream of STREAMS.slice(0, 2)) {
      const r = await trial(path, stream, subscribers);
      log(
        `${stream.name} at ${subscribers}: server CPU ${r.cpuS.toFixed(2)} s, ${r.eventsPerSecond.toFixed(1)} events/s, p99 ${r.p99.toFixed(1)} ms`,
      );
    }
    const { profile } = (await session.send("Profiler.stop")) as { profile: Profile };
    session.close();
    writeFileSync(out, JSON.stringify(profile));
    process.stdout.write(`${summarise(profile)}\nwritten: ${out}\n`);
  });
} finally {
  await shutdown();
}
