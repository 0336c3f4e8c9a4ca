// One Durable Object's alarm schedule: its named deadlines (persisted, so
// they survive eviction) plus an optional heartbeat, all served by the
// object's single alarm. It only ever moves the alarm earlier: an alarm that
// fires too soon (a heartbeat made unnecessary by newer events, say) finds
// nothing due and re-arms, which keeps setAlarm off the append path.
// Used by the RunObject; the StoragePool can use it with its own deadline names.
import type { SqlLike } from "../stream/event-log";
import { Deadlines, type DeadlineName } from "./deadlines";

/** The part of DurableObjectStorage the schedule needs. */
export interface AlarmStorage {
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number): Promise<void>;
}

/** When the next heartbeat is due, or undefined when none should be sent. */
export type HeartbeatSource = () => number | undefined;

export class AlarmSchedule {
  readonly #deadlines: Deadlines;
  readonly #storage: AlarmStorage;
  readonly #heartbeat: HeartbeatSource;
  /** The alarm time as last set by this instance (null: none armed). */
  #armedAt: number | null;

  /** `armedAt`: what storage.getAlarm() answered when the object started. */
  constructor(sql: SqlLike, storage: AlarmStorage, armedAt: number | null, heartbeat: HeartbeatSource = () => undefined) {
    this.#deadlines = new Deadlines(sql);
    this.#storage = storage;
    this.#armedAt = armedAt;
    this.#heartbeat = heartbeat;
  }

  /** Sets a deadline and moves the alarm earlier if it is due first. */
  set(name: DeadlineName, dueAt: number): void {
    this.#deadlines.set(name, dueAt);
    this.rearm();
  }

  clear(name: DeadlineName): void {
    this.#deadlines.clear(name);
  }

  /** The alarm fired: forgets the armed time and returns every deadline due at `now`. */
  fired(now: number): DeadlineName[] {
    this.#armedAt = null;
    return this.#deadlines.takeDue(now);
  }

  /** Arms the alarm for the earliest thing due, only ever moving it earlier. */
  rearm(): void {
    let next = this.#deadlines.earliest();
    const heartbeatAt = this.#heartbeat();
    if (heartbeatAt !== undefined) next = next === undefined ? heartbeatAt : Math.min(next, heartbeatAt);
    if (next === undefined) return;
    if (this.#armedAt !== null && this.#armedAt <= next) return;
    this.#armedAt = next;
    void this.#storage.setAlarm(next);
  }
}
