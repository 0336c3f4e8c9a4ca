// The run's stream (src/stream/run-stream.ts) on its own, over a bare SQLite
// handle (a fresh Durable Object's storage with the run object's tables):
// sequences, fan-out to live subscribers, a slow subscriber's fall back to
// the log, terminal fencing, 204 and 410.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { RunStream } from "../../src/stream/run-stream";
import { SseReader, runTablesOf, sequences, types } from "../runtime/helpers";

const identity = { run_id: "run-x", channel_id: "C1" };

/** Runs `fn` with the SQL storage of a Durable Object nobody else uses. */
function withSql<T>(fn: (sql: SqlStorage) => Promise<T> | T): Promise<T> {
  const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.newUniqueId());
  return runInDurableObject(stub, (_instance, state) => fn(runTablesOf(state)));
}

describe("RunStream", () => {
  it("appends contiguous sequences and fans each frame out to live subscribers, ending them after the terminal event", async () => {
    await withSql(async (sql) => {
      const stream = new RunStream(sql, 100, identity, false, 0);
      expect(stream.append("run_started", { user_id: "U1" }, 1_000)?.sequence).toBe(1);
      const reader = new SseReader(stream.subscribe(0, undefined));
      await reader.readUntil(1);
      expect(stream.subscriberCount).toBe(1);
      stream.append("assistant_message", { text: "hi" }, 2_000);
      expect(stream.lastAppendAt).toBe(2_000);
      const done = stream.append("run_completed", { tool_calls: 0 }, 3_000);
      expect(done?.json).toBe(
        '{"protocol_version":"v2","sequence":3,"run_id":"run-x","channel_id":"C1","type":"run_completed","at":"1970-01-01T00:00:03.000Z","tool_calls":0}',
      );
      expect(types(await reader.readToEnd())).toEqual(["run_started", "assistant_message", "run_completed"]);
      expect(stream.subscriberCount).toBe(0);
      // Terminal fencing: nothing more, whoever asks.
      expect(stream.append("heartbeat", {})).toBeNull();
      expect(stream.lastSequence).toBe(3);
      // Nothing will ever follow: 204; an earlier point still replays.
      expect(stream.subscribe(3, undefined).status).toBe(204);
      expect(types(await new SseReader(stream.subscribe(1, undefined)).readToEnd())).toEqual(["assistant_message", "run_completed"]);
    });
  });

  it("answers 410 replay_gap for a reader who needs events retention dropped", async () => {
    await withSql(async (sql) => {
      const stream = new RunStream(sql, 10, identity, false);
      for (let i = 0; i < 15; i++) stream.append("assistant_message", { text: `${i}` });
      expect(stream.earliestSequence).toBeGreaterThan(1);
      const gap = stream.subscribe(0, undefined);
      expect(gap.status).toBe(410);
      expect(await gap.json()).toMatchObject({ error: "replay_gap", earliest_sequence: stream.earliestSequence });
      stream.purge();
      expect(stream.subscribe(14, undefined).status).toBe(410);
    });
  });

  it("replaces a subscriber that reattaches under the same client key and closes the old response", async () => {
    await withSql(async (sql) => {
      const stream = new RunStream(sql, 100, identity, false);
      stream.append("run_started", { user_id: "U1" });
      const first = new SseReader(stream.subscribe(0, "k"));
      await first.readUntil(1);
      const second = new SseReader(stream.subscribe(1, "k"));
      await first.readToEnd();
      expect(first.done).toBe(true);
      expect(stream.subscriberCount).toBe(1);
      stream.append("assistant_message", { text: "late" });
      expect(types(await second.readUntil(1))).toEqual(["assistant_message"]);
    });
  });

  it("a live subscriber that stops reading falls back to the log and still gets every event once, in order", async () => {
    await withSql(async (sql) => {
      const stream = new RunStream(sql, 5_000, identity, false);
      stream.append("run_started", { user_id: "U1" });
      const reader = new SseReader(stream.subscribe(0, undefined));
      await reader.readUntil(1); // live now: its pull waits until a fall back wakes it
      // Past the live queue's limit (1,024 frames) unread: the subscriber stops taking pushes.
      for (let i = 0; i < 1_500; i++) stream.append("assistant_message", { text: `m${i}` });
      stream.append("run_completed", { tool_calls: 0 });
      const events = await reader.readToEnd();
      expect(sequences(events)).toEqual(Array.from({ length: 1_502 }, (_, i) => i + 1));
      expect(events.at(-2)?.data).toContain('"text":"m1499"');
      expect(events.at(-1)?.event).toBe("run_completed");
      expect(stream.subscriberCount).toBe(0);
    });
  });

  it("restored as terminal, it appends nothing", async () => {
    await withSql((sql) => {
      const stream = new RunStream(sql, 100, identity, true);
      expect(stream.append("heartbeat", {})).toBeNull();
      expect(stream.lastSequence).toBe(0);
    });
  });
});
