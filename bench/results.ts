// What one benchmark run measured, as the report and the goals read it, and
// the figures derived from it (ratios, CPU per 1,000 delivered events).
import type { ApprovalLatency } from "./phases/approvals";
import type { ConsoleLatency } from "./phases/console";
import type { Latency } from "./phases/latency";
import type { Memory } from "./phases/memory";
import type { PoolLoad } from "./phases/pool-load";
import type { Replay } from "./phases/replay";
import type { SlackLatency } from "./phases/slack";
import type { StorageLine } from "./phases/storage-line";
import type { Throughput } from "./phases/throughput";
import { engine, rawFloor, type Target } from "./targets";

/** Phases 1-3 over one path (wrangler dev's port, or the runtime's own socket). */
export interface PathResults {
  label: string;
  floor: { p50: number; p99: number };
  throughput: Map<Target, Throughput>;
  latency: Map<string, Latency>;
  replay: Replay;
}

export interface BenchResults {
  paths: PathResults[];
  memory: Map<Target, Memory>;
  approvals: ApprovalLatency[];
  pool: PoolLoad;
  line: StorageLine;
  slack: SlackLatency;
  console: ConsoleLatency;
  load: { before: string; after: string };
}

export const latencyKey = (target: Target, subscribers: number) => `${target.name}/${subscribers}`;

/** What the server CPU figures read of one path. */
export type CpuPath = Pick<PathResults, "label" | "throughput" | "latency">;

/** Where the server-CPU-per-delivered-event figure comes from. */
export type CpuSource = { phase: "throughput" } | { phase: "latency"; subscribers: number };

export const cpuSourceLabel = (source: CpuSource) =>
  source.phase === "throughput"
    ? "phase 1 (batched appends, 1 subscriber)"
    : `phase 2 (1 event per request, ${source.subscribers} subscriber(s))`;

const US_PER_MS = 1_000;
const EVENTS_PER_FIGURE = 1_000;

/**
 * Server CPU time (both workerd processes: the runtime and wrangler dev's
 * proxy) per 1,000 events delivered to subscribers, ms. Phase 1 delivers one
 * event per appended event (one subscriber); a phase 2 probe delivers its one
 * event to every subscriber.
 */
export function serverCpuMsPer1000Delivered(p: CpuPath, target: Target, source: CpuSource): number {
  if (source.phase === "throughput") {
    const t = p.throughput.get(target);
    if (!t) return Number.NaN;
    return ((t.runtimeCpuUsPerEvent + t.proxyCpuUsPerEvent) * EVENTS_PER_FIGURE) / US_PER_MS;
  }
  const l = p.latency.get(latencyKey(target, source.subscribers));
  if (!l) return Number.NaN;
  return ((l.runtimeCpuUsPerProbe + l.proxyCpuUsPerProbe) / source.subscribers) * (EVENTS_PER_FIGURE / US_PER_MS);
}

/** The engine's server CPU per delivered event over the raw floor's. */
export function serverCpuRatio(p: CpuPath, source: CpuSource): number {
  return serverCpuMsPer1000Delivered(p, engine, source) / serverCpuMsPer1000Delivered(p, rawFloor, source);
}
