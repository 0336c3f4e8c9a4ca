// EventLog and SubscriberStream over a real Durable Object SQLite storage.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EventLog } from "../../src/stream/event-log";
import { encodeSseFrame } from "../../src/stream/sse";
import { SubscriberStream } from "../../src/stream/subscriber-stream";
import { runTablesOf } from "./helpers";

const envelope = { run_id: "run-1", channel_id: "C1", at: "2026-11-29T10:00:00.000Z" };

function withSql<T>(fn: (sql: SqlStorage) => T | Promise<T>): Promise<T> {
  const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.newUniqueId());
  return runInDurableObject(stub, (_instance, state) => fn(runTablesOf(state)));
}

describe("EventLog", () => {
  it("numbers events contiguously from 1 and keeps the exact JSON", () =>
    withSql((sql) => {
      const log = new EventLog(sql, 100);
      const a = log.append(envelope, "run_started", { user_id: "U1" });
      const b = log.append(envelope, "heartbeat", {});
      expect([a.sequence, b.sequence]).toEqual([1, 2]);
      expect(a.json).toBe(
        '{"protocol_version":"v2","sequence":1,"run_id":"run-1","channel_id":"C1","type":"run_started","at":"2026-11-29T10:00:00.000Z","user_id":"U1"}',
      );
      expect(log.readAfter(0)).toEqual([a, b]);
      expect(new EventLog(sql, 100).lastSequence).toBe(2); // reloaded from storage
    }));

  it("keeps at most maxEvents, reports the gap, and never reuses sequences after a purge", () =>
    withSql((sql) => {
      const log = new EventLog(sql, 3);
      for (let i = 0; i < 5; i++) log.append(envelope, "heartbeat", {});
      expect(log.earliestSequence).toBe(3);
      expect(log.readAfter(0).map((e) => e.sequence)).toEqual([3, 4, 5]);
      expect(log.hasGapAfter(1)).toBe(true);
      expect(log.hasGapAfter(2)).toBe(false);
      log.purge();
      const reloaded = new EventLog(sql, 3);
      expect([reloaded.lastSequence, reloaded.earliestSequence]).toEqual([5, 6]);
      expect(reloaded.append(envelope, "heartbeat", {}).sequence).toBe(6);
    }));
});

describe("EventLog pruning", () => {
  it("drops the oldest events a batch at a time past the cap, never keeping more than the cap", () =>
    withSql((sql) => {
      const log = new EventLog(sql, 20); // batch of 2
      const retained = () => log.lastSequence - log.earliestSequence + 1;
      for (let i = 0; i < 20; i++) log.append(envelope, "heartbeat", {});
      expect([log.earliestSequence, retained()]).toEqual([1, 20]);
      log.append(envelope, "heartbeat", {});
      expect([log.earliestSequence, retained()]).toEqual([3, 19]);
      log.append(envelope, "heartbeat", {});
      expect([log.earliestSequence, retained()]).toEqual([3, 20]);
      expect(log.readAfter(0, 100).map((e) => e.sequence)[0]).toBe(3);
    }));
});

describe("SubscriberStream", () => {
  it("delivers each live event once to a consumer already waiting for it", () =>
    withSql(async (sql) => {
      const log = new EventLog(sql, 100);
      let terminal = false;
      let closed = 0;
      const stream = new SubscriberStream({ log, after: 0, isTerminal: () => terminal, onClosed: () => closed++ });
      // The runtime consumes the body as it would a response's: it waits for data before any exists.
      const text = new Response(stream.body).text();
      await new Promise((r) => setTimeout(r, 10));
      expect(stream.mode).toBe("live");
      for (let i = 0; i < 3; i++) {
        const e = log.append(envelope, "heartbeat", {});
        stream.push(e, encodeSseFrame(e.sequence, e.type, e.json));
        await new Promise((r) => setTimeout(r, 5));
      }
      terminal = true;
      const last = log.append(envelope, "run_completed", { tool_calls: 0 });
      stream.push(last, encodeSseFrame(last.sequence, last.type, last.json));
      const ids = [...(await text).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect(ids).toEqual([1, 2, 3, 4]);
      expect(closed).toBe(1);
    }));

  it("replays large logs in batches as the reader pulls", () =>
    withSql(async (sql) => {
      const log = new EventLog(sql, 10_000);
      for (let i = 0; i < 1_000; i++) log.append(envelope, "heartbeat", {});
      log.append(envelope, "run_completed", { tool_calls: 0 });
      const stream = new SubscriberStream({ log, after: 10, isTerminal: () => true, onClosed: () => {} });
      const text = await new Response(stream.body).text();
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect(ids).toEqual(Array.from({ length: 991 }, (_, i) => i + 11));
    }));
});
