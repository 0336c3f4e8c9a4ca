// Phase 4, memory: VmRSS of the workerd processes before and after attaching
// MEMORY_STREAMS x MEMORY_SUBSCRIBERS_PER_STREAM idle subscribers, each
// target in a fresh server so neither inherits the other's heap.
import { mapLimit, range, sleep } from "../http-client";
import { isProxyProcess, type ProcessInfo, workerdProcesses } from "../processes";
import { withServer } from "../servers";
import { API_CONCURRENCY, ATTACH_CONCURRENCY, MEMORY_SETTLE_MS, MEMORY_STREAMS, MEMORY_SUBSCRIBERS_PER_STREAM } from "../settings";
import { attach, type Target } from "../targets";

export interface ProcessMemory {
  role: string;
  beforeKiB: number;
  attachedKiB: number;
  releasedKiB: number;
}

export interface Memory {
  processes: ProcessMemory[];
  registered: number;
}

/** In its own fresh server, so the figure starts from a heap that no other phase grew. */
export async function memoryPhase(target: Target): Promise<Memory> {
  return withServer(async (server, client) => {
    const ids = await mapLimit(range(MEMORY_STREAMS), API_CONCURRENCY, () => target.create(client));
    await sleep(MEMORY_SETTLE_MS);
    const before = await workerdProcesses(server);
    const subs = (
      await mapLimit(ids, ATTACH_CONCURRENCY / MEMORY_SUBSCRIBERS_PER_STREAM, (id) =>
        attach(client, target, id, MEMORY_SUBSCRIBERS_PER_STREAM, () => {}),
      )
    ).flat();
    // The streams' own count, not just our sockets: every subscriber is registered.
    const counts = await mapLimit(ids, API_CONCURRENCY, (id) => target.subscribers(client, id));
    await sleep(MEMORY_SETTLE_MS);
    const attached = await workerdProcesses(server);
    for (const sub of subs) sub.close();
    await mapLimit(ids, API_CONCURRENCY, (id) => target.finish(client, id));
    await sleep(MEMORY_SETTLE_MS);
    const released = await workerdProcesses(server);
    const rssOf = (list: ProcessInfo[], pid: number) => list.find((p) => p.pid === pid)?.rssKiB ?? NaN;
    return {
      registered: counts.reduce((a, b) => a + b, 0),
      processes: before.map((p) => ({
        role: isProxyProcess(server, p) ? "wrangler dev proxy" : "worker runtime",
        beforeKiB: p.rssKiB,
        attachedKiB: rssOf(attached, p.pid),
        releasedKiB: rssOf(released, p.pid),
      })),
    };
  });
}
