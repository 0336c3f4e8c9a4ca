// The alarm schedule (src/schedule/alarm-schedule.ts) over a fresh Durable
// Object's SQLite and a fake alarm: deadlines and heartbeat share one alarm,
// which only ever moves earlier.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AlarmSchedule, type AlarmStorage } from "../../src/schedule/alarm-schedule";
import { runTablesOf } from "../runtime/helpers";

function fakeAlarm() {
  const set: number[] = [];
  const storage: AlarmStorage = {
    getAlarm: async () => set.at(-1) ?? null,
    setAlarm: async (t) => {
      set.push(t);
    },
  };
  return { storage, set };
}

function withSql<T>(fn: (sql: SqlStorage) => T): Promise<T> {
  return runInDurableObject(env.RUN_OBJECT.get(env.RUN_OBJECT.newUniqueId()), (_i, state) => fn(runTablesOf(state)));
}

describe("AlarmSchedule", () => {
  it("arms for the earliest deadline or heartbeat and only ever moves the alarm earlier", async () => {
    await withSql((sql) => {
      const alarm = fakeAlarm();
      let heartbeat: number | undefined;
      const schedule = new AlarmSchedule(sql, alarm.storage, null, () => heartbeat);
      schedule.set("retention", 5_000);
      schedule.set("turn", 9_000); // later: the alarm stays
      schedule.set("calls", 2_000); // earlier: it moves
      expect(alarm.set).toEqual([5_000, 2_000]);
      heartbeat = 1_500;
      schedule.rearm();
      expect(alarm.set).toEqual([5_000, 2_000, 1_500]);
      // Fired early (the heartbeat): nothing due, re-armed for what is.
      expect(schedule.fired(1_500)).toEqual([]);
      heartbeat = undefined;
      schedule.rearm();
      expect(alarm.set.at(-1)).toBe(2_000);
      expect(schedule.fired(5_000)).toEqual(["calls", "retention"]);
      schedule.rearm();
      expect(alarm.set.at(-1)).toBe(9_000);
      schedule.clear("turn");
      expect(schedule.fired(10_000)).toEqual([]);
    });
  });

  it("keeps its deadlines in storage: a new instance over the same storage sees them", async () => {
    await withSql((sql) => {
      new AlarmSchedule(sql, fakeAlarm().storage, null).set("turn", 7_000);
      const again = fakeAlarm();
      const restored = new AlarmSchedule(sql, again.storage, 7_000);
      restored.rearm();
      expect(again.set).toEqual([]); // already armed at that time
      expect(restored.fired(7_000)).toEqual(["turn"]);
    });
  });
});
