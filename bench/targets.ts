// The two targets every stream phase measures side by side: the engine (a
// run kept running by a long scripted turn, its events appended through the
// bench Worker's append route) and the raw floor (a Durable Object that
// inserts into SQLite and enqueues, nothing else).
import { type Client, type Frame, mapLimit, range, type Subscription, Waiter } from "./http-client";
import { ATTACH_CONCURRENCY, KEEP_RUNNING_DELAY_MS, TEXT_BYTES } from "./settings";

export interface Target {
  name: string;
  /** A fresh stream: an engine run kept running, or a raw-floor object that exists. */
  create(client: Client): Promise<string>;
  eventsPath(id: string): string;
  /** Frames a new subscriber receives before it is live (the engine replays run_started). */
  initialFrames: number;
  append(client: Client, id: string, count: number, label: string): Promise<void>;
  /** Subscribers the stream itself has registered. */
  subscribers(client: Client, id: string): Promise<number>;
  /** Ends the stream where the target can (the engine: cancel the run, which ends its responses). */
  finish(client: Client, id: string): Promise<void>;
}

export async function createRun(client: Client): Promise<string> {
  const receipt = await client.engine.trigger({ message: "bench", script: [{ delay_ms: KEEP_RUNNING_DELAY_MS }] });
  if (receipt.status !== "accepted") throw new Error(`trigger: expected a new run, got ${JSON.stringify(receipt)}`);
  return receipt.run_id;
}

async function checkedAppend(client: Client, path: string, count: number): Promise<void> {
  const body = await client.expect<{ appended: number }>(200, "POST", path);
  if (body.appended !== count) throw new Error(`POST ${path}: appended ${body.appended} of ${count}`);
}

const appendQuery = (count: number, label: string) => `count=${count}&bytes=${TEXT_BYTES}&label=${label}`;

export const engine: Target = {
  name: "engine",
  create: createRun,
  eventsPath: (id) => `/api/runs/${id}/events?after=0`,
  initialFrames: 1,
  append: (client, id, count, label) => checkedAppend(client, `/bench/runs/${id}/append?${appendQuery(count, label)}`, count),
  subscribers: async (client, id) => (await client.engine.summary(id)).subscribers,
  finish: async (client, id) => {
    const answer = await client.engine.cancel(id);
    if (answer.status !== "cancelling") throw new Error(`cancel ${id}: expected cancelling, got ${answer.status}`);
  },
};

let rawNames = 0;
export const rawFloor: Target = {
  name: "raw floor",
  create: async (client) => {
    const name = `raw-${++rawNames}`;
    // Reading its stats instantiates the object (and its table), as a trigger does for a run.
    await client.expect(200, "GET", `/bench/raw/${name}/stats`);
    return name;
  },
  eventsPath: (id) => `/bench/raw/${id}/events`,
  initialFrames: 0,
  append: (client, id, count, label) => checkedAppend(client, `/bench/raw/${id}/append?${appendQuery(count, label)}`, count),
  subscribers: async (client, id) => (await client.expect<{ subscribers: number }>(200, "GET", `/bench/raw/${id}/stats`)).subscribers,
  finish: async () => {},
};

/** Opens `count` subscribers and resolves once each one is live. */
export async function attach(
  client: Client,
  target: Target,
  id: string,
  count: number,
  onFrame: (frame: Frame, at: number) => void,
): Promise<Subscription[]> {
  const waiter = new Waiter();
  const seen = new Array<number>(count).fill(0);
  const subs = await mapLimit(range(count), ATTACH_CONCURRENCY, (i) =>
    client.subscribe(target.eventsPath(id), (frame, at) => {
      seen[i]!++;
      onFrame(frame, at);
      waiter.notify();
    }),
  );
  await waiter.until(() => seen.every((n) => n >= target.initialFrames), `${count} ${target.name} subscribers to go live`);
  return subs;
}
