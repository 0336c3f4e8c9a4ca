// One Durable Object's alarm schedule: its named deadlines (persisted, so
// they survive eviction) plus one computed due time (the run's next
// heartbeat, the pool's earliest lease expiry), all served by the object's
// single alarm. It only ever moves the alarm earlier: an alarm that
// fires too soon (a heartbeat made unnecessary by newer events, say) finds
// nothing due and re-arms, which keeps setAlarm off the append path.
// Used by the RunObject (deadlines "turn", "calls", "retention", "index", "slack", "rows", "webhooks" and the
// heartbeat); the StoragePool needs only the computed time (its leases).
import type { SqlLike } from "../stream/event-log";
import { Deadlines, type DeadlineName } from "./deadlines";

/** The part of DurableObjectStorage the schedule needs. */
export interface AlarmStorage {
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number): Promise<void>;
}

/** A due time worked out from the object's state (the next heartbeat, the earliest lease expiry), or undefined. */
export type ComputedDue = () => number | undefined;

export class AlarmSchedule<Name extends string = DeadlineName> {
  readonly #deadlines: Deadlines<Name>;
  readonly #storage: AlarmStorage;
  readonly #computed: ComputedDue;
  /** The alarm time as last set by this instance (null: none armed). */
  #armedAt: number | null;

  /** `armedAt`: what storage.getAlarm() answered when the object started. */
  constructor(sql: SqlLike, storage: AlarmStorage, armedAt: number | null, computed: ComputedDue = () => undefined) {
    this.#deadlines = new Deadlines<Name>(sql);
    this.#storage = storage;
    this.#armedAt = armedAt;
    this.#computed = computed;
  }

  /** Sets a deadline and moves the alarm earlier if it is due first. */
  set(name: Name, dueAt: number): void {
    this.#deadlines.set(name, dueAt);
    this.rearm();
  }

  /** Sets a deadline unless it is already due earlier, and moves the alarm earlier if needed. */
  setEarliest(name: Name, dueAt: number): void {
    this.#deadlines.setEarliest(name, dueAt);
    this.rearm();
  }

  clear(name: Name): void {
    this.#deadlines.clear(name);
  }

  /** The alarm fired: forgets the armed time and returns every deadline due at `now`. */
  fired(now: number): Name[] {
    this.#armedAt = null;
    return this.#deadlines.takeDue(now);
  }

  /** Arms the alarm for the earliest thing due, only ever moving it earlier. */
  rearm(): void {
    const deadline = this.#deadlines.earliest();
    const computed = this.#computed();
    this.armAt(deadline === undefined ? computed : computed === undefined ? deadline : Math.min(deadline, computed));
  }

  /** Moves the alarm to `at` if nothing is armed earlier (a new lease's expiry, say, without re-reading the rest). */
  armAt(at: number | undefined): void {
    if (at === undefined) return;
    if (this.#armedAt !== null && this.#armedAt <= at) return;
    this.#armedAt = at;
    void this.#storage.setAlarm(at);
  }
}
