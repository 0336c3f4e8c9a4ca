// Phase 1, throughput: THROUGHPUT_EVENTS events appended in batches to one
// stream with one SSE subscriber; appended/s, delivered/s and the workerd
// processes' CPU per delivered event, engine and raw floor alternating.
import { performance } from "node:perf_hooks";
import { type Client, percentile, Waiter } from "../http-client";
import { MS_PER_SECOND, NS_PER_US, THROUGHPUT_BATCH_EVENTS, THROUGHPUT_EVENTS, THROUGHPUT_TRIALS } from "../settings";
import { attach, engine, rawFloor, type Target } from "../targets";

export interface Throughput {
  appendedPerSecond: number;
  deliveredPerSecond: number;
  /** Server CPU per event delivered, µs: the cost that wall-clock figures on a shared box blur. */
  runtimeCpuUsPerEvent: number;
  proxyCpuUsPerEvent: number;
}

/** One trial (also the warm-up, with fewer events). */
export async function measureThroughput(client: Client, target: Target, events: number): Promise<Throughput> {
  const id = await target.create(client);
  let delivered = 0;
  let lastAt = 0;
  const waiter = new Waiter();
  const subs = await attach(client, target, id, 1, (frame, at) => {
    if (frame.event !== "assistant_message") return; // run_started and heartbeats are not ours
    delivered++;
    lastAt = at;
    waiter.notify();
  });
  const cpuBefore = client.cpu();
  const started = performance.now();
  for (let sent = 0; sent < events; sent += THROUGHPUT_BATCH_EVENTS) {
    await target.append(client, id, Math.min(THROUGHPUT_BATCH_EVENTS, events - sent), "t");
  }
  const appendedAt = performance.now();
  await waiter.until(() => delivered >= events, `${events} ${target.name} frames`);
  const cpuAfter = client.cpu();
  for (const sub of subs) sub.close();
  await target.finish(client, id);
  return {
    appendedPerSecond: events / ((appendedAt - started) / MS_PER_SECOND),
    deliveredPerSecond: events / ((lastAt - started) / MS_PER_SECOND),
    runtimeCpuUsPerEvent: (cpuAfter.runtime - cpuBefore.runtime) / NS_PER_US / events,
    proxyCpuUsPerEvent: (cpuAfter.proxy - cpuBefore.proxy) / NS_PER_US / events,
  };
}

/** THROUGHPUT_TRIALS per target, engine and raw floor alternating (ABAB...); the median trial of each. */
export async function throughputPhase(client: Client): Promise<Map<Target, Throughput>> {
  const trials = new Map<Target, Throughput[]>([
    [engine, []],
    [rawFloor, []],
  ]);
  for (let i = 0; i < THROUGHPUT_TRIALS; i++) {
    for (const target of [engine, rawFloor]) trials.get(target)!.push(await measureThroughput(client, target, THROUGHPUT_EVENTS));
  }
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  return new Map(
    [...trials].map(([target, list]) => [
      target,
      {
        appendedPerSecond: median(list.map((t) => t.appendedPerSecond)),
        deliveredPerSecond: median(list.map((t) => t.deliveredPerSecond)),
        runtimeCpuUsPerEvent: median(list.map((t) => t.runtimeCpuUsPerEvent)),
        proxyCpuUsPerEvent: median(list.map((t) => t.proxyCpuUsPerEvent)),
      },
    ]),
  );
}
