// Phase 2, append-to-delivery latency at 1, 50 and 100 subscribers, engine and
// raw floor probed alternately, with the workerd processes' CPU per probe;
// and the request floor (GET /healthz) of each path.
import { performance } from "node:perf_hooks";
import { type Client, type CpuSample, percentile, sleep, type Subscription, Waiter } from "../http-client";
import { FLOOR_REQUESTS, LATENCY_INTERVAL_MS, LATENCY_PROBES, LATENCY_SETTLE_MS, LATENCY_WARMUP_PROBES, NS_PER_US } from "../settings";
import { attach, engine, rawFloor, type Target } from "../targets";

export interface Latency {
  p50: number;
  p99: number;
  max: number;
  /** Round trip of the append request alone (its response, not the frame), p50. */
  appendRttP50: number;
  samples: number;
  /** Server CPU per probe (one append request, one event to every subscriber), µs, mean. */
  runtimeCpuUsPerProbe: number;
  proxyCpuUsPerProbe: number;
}

/** One target's stream during the latency phase. */
interface ProbeState {
  target: Target;
  id: string;
  subs: Subscription[];
  /** Per probe: when its append request was sent (performance.now(), ms). */
  sentAt: number[];
  /** Per probe: how many subscribers have its frame. */
  received: number[];
  /** Append-to-delivery, ms, one per (probe, subscriber), warm-up probes left out. */
  samples: number[];
  /** Append request round trips, ms. */
  rtts: number[];
  /** Server CPU over the probes' slots (send → next send), ns. */
  cpu: CpuSample;
}

/**
 * Append-to-delivery latency, measured on this process's one monotonic clock:
 * the time is taken just before each append request is written, and again in
 * each subscriber socket's `data` handler when the frame carrying that probe's
 * label arrives. Both ends are this process, so there is no clock skew, and
 * the figure is honest end to end: client → (proxy →) Worker → RPC → append +
 * fan-out → Durable Object stream → Worker → (proxy →) client. The events'
 * own `at` timestamps can't be used: workerd's clock only advances on I/O.
 * The figure overstates the server's share by the append request's way in
 * (the "GET /healthz" row is that floor), and with 100 subscribers by this
 * process's time to drain the sockets ahead of it in the same poll.
 *
 * Engine and raw floor each get a stream with `subscribers` subscribers, and
 * are probed alternately (the order flips every round), one probe in flight
 * at a time: send, wait until every subscriber has it, then wait out the rest
 * of LATENCY_INTERVAL_MS (at least LATENCY_SETTLE_MS). Alternating gives both
 * the same machine, which a shared 2-core box does not give two back-to-back
 * runs. Each probe's slot also records the server's CPU time, a cost figure
 * that scheduling noise barely moves.
 */
export async function latencyPhase(client: Client, subscribers: number): Promise<Map<Target, Latency>> {
  const total = LATENCY_WARMUP_PROBES + LATENCY_PROBES;
  const waiter = new Waiter();
  const states: ProbeState[] = [];
  for (const target of [engine, rawFloor]) {
    const id = await target.create(client);
    const sentAt = new Array<number>(total).fill(NaN);
    const received = new Array<number>(total).fill(0);
    const samples: number[] = [];
    const subs = await attach(client, target, id, subscribers, (frame, at) => {
      const probe = /"text":"p(\d+)_/.exec(frame.data);
      if (!probe) return;
      const index = Number(probe[1]);
      received[index]!++;
      if (index >= LATENCY_WARMUP_PROBES) samples.push(at - sentAt[index]!);
      waiter.notify();
    });
    states.push({ target, id, subs, sentAt, received, samples, rtts: [], cpu: { runtime: 0, proxy: 0 } });
  }
  for (let i = 0; i < total; i++) {
    for (const state of i % 2 === 0 ? states : [...states].reverse()) {
      const cpuBefore = client.cpu();
      const start = performance.now();
      state.sentAt[i] = start;
      await state.target.append(client, state.id, 1, `p${i}_`);
      const rtt = performance.now() - start;
      await waiter.until(() => state.received[i]! >= subscribers, `probe ${i} at ${subscribers} ${state.target.name} subscribers`);
      await sleep(Math.max(LATENCY_SETTLE_MS, start + LATENCY_INTERVAL_MS - performance.now()));
      if (i >= LATENCY_WARMUP_PROBES) {
        const cpuAfter = client.cpu();
        state.rtts.push(rtt);
        state.cpu.runtime += cpuAfter.runtime - cpuBefore.runtime;
        state.cpu.proxy += cpuAfter.proxy - cpuBefore.proxy;
      }
    }
  }
  const results = new Map<Target, Latency>();
  for (const { target, id, subs, samples, rtts, cpu } of states) {
    for (const sub of subs) sub.close();
    await target.finish(client, id);
    samples.sort((a, b) => a - b);
    rtts.sort((a, b) => a - b);
    results.set(target, {
      p50: percentile(samples, 50),
      p99: percentile(samples, 99),
      max: samples[samples.length - 1] ?? NaN,
      appendRttP50: percentile(rtts, 50),
      samples: samples.length,
      runtimeCpuUsPerProbe: cpu.runtime / NS_PER_US / LATENCY_PROBES,
      proxyCpuUsPerProbe: cpu.proxy / NS_PER_US / LATENCY_PROBES,
    });
  }
  return results;
}

/** GET /healthz round trips: the Worker alone, no Durable Object, no storage. */
export async function requestFloor(client: Client): Promise<{ p50: number; p99: number }> {
  const rtts: number[] = [];
  for (let i = 0; i < FLOOR_REQUESTS; i++) {
    const start = performance.now();
    // Raw node:http, like the append requests it is the floor of (not the engine client, whose Response adds client work).
    await client.expect(200, "GET", "/healthz");
    rtts.push(performance.now() - start);
  }
  rtts.sort((a, b) => a - b);
  return { p50: percentile(rtts, 50), p99: percentile(rtts, 99) };
}
