// The run's sequenced event log over a minimal SQL interface (the Durable
// Object's SQLite storage in production, anything with `exec` in tests).
// Responsible for: contiguous sequences from 1, storing each event's JSON
// exactly once so replays are byte-for-byte identical, the per-run event cap,
// and purging by retention. It knows nothing about subscribers or HTTP.
import { PROTOCOL_VERSION, type EventType, type StoredEvent } from "../wire/events";
import type { EventFields, RunEvent } from "../wire/event-schemas";
import type { SqlLike, SqlTable } from "./sql-schema";

export type { SqlLike } from "./sql-schema";

/** Rows read per replay batch: large enough to amortise the query, small enough to keep a slow client's queue short. */
const REPLAY_BATCH_EVENTS = 256;
/**
 * Past the cap, the oldest events are deleted this many at a time (at most a
 * tenth of the cap), so a run at its cap pays for a DELETE once per batch,
 * not on every append.
 */
const PRUNE_BATCH_MAX_EVENTS = 512;

export const EVENTS_TABLE: SqlTable = {
  name: "events",
  ddl: [`CREATE TABLE IF NOT EXISTS events (sequence INTEGER PRIMARY KEY, type TEXT NOT NULL, json TEXT NOT NULL)`],
};

/**
 * Only a purge needs remembering: while events exist, the bounds are derived
 * from them, so the append path writes one row and nothing else.
 */
export const EVENT_LOG_PURGED_TABLE: SqlTable = {
  name: "event_log_purged",
  ddl: [`CREATE TABLE IF NOT EXISTS event_log_purged (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL)`],
};

/** An event just appended: as stored, and as the typed event the observers read. */
export interface AppendedEvent extends StoredEvent {
  event: RunEvent;
}

export class EventLog {
  readonly #sql: SqlLike;
  readonly #maxEvents: number;
  readonly #pruneBatch: number;
  #last = 0;
  #earliest = 1;

  constructor(sql: SqlLike, maxEvents: number) {
    this.#sql = sql;
    this.#maxEvents = maxEvents;
    this.#pruneBatch = Math.max(1, Math.min(PRUNE_BATCH_MAX_EVENTS, Math.floor(maxEvents / 10)));
    const bounds = sql
      .exec<{ first: number | null; last: number | null }>(`SELECT MIN(sequence) AS first, MAX(sequence) AS last FROM events`)
      .toArray()[0];
    if (bounds?.last != null && bounds.first != null) {
      this.#last = bounds.last;
      this.#earliest = bounds.first;
    } else {
      const purged = sql.exec<{ last: number }>(`SELECT last FROM event_log_purged WHERE id = 1`).toArray()[0];
      this.#last = purged?.last ?? 0;
      this.#earliest = this.#last + 1;
    }
  }

  /** Sequence of the last event appended, 0 before the first. */
  get lastSequence(): number {
    return this.#last;
  }

  /** Lowest sequence still retained; lastSequence + 1 once everything was purged. */
  get earliestSequence(): number {
    return this.#earliest;
  }

  /**
   * Appends one event. The envelope fields come first, in the contract's order,
   * then the event's own fields; the JSON string built here is the one every
   * subscriber and every later replay receives.
   */
  append<T extends EventType>(envelope: { run_id: string; channel_id: string; at: string }, type: T, fields: EventFields<T>): StoredEvent {
    const { event: _typed, ...stored } = this.appendEvent(envelope, type, fields);
    return stored;
  }

  /** `append`, also handing back the typed event (the run's stream, for the observers on its append path). */
  appendEvent<T extends EventType>(
    envelope: { run_id: string; channel_id: string; at: string },
    type: T,
    fields: EventFields<T>,
  ): AppendedEvent {
    const sequence = this.#last + 1;
    // The one place an event is assembled: its own fields were typed by its type's schema where it
    // was emitted (EventFields<T>), so the whole is that type's event. The object is the one
    // stringified: handing it on to the observers costs nothing.
    const event = {
      protocol_version: PROTOCOL_VERSION,
      sequence,
      run_id: envelope.run_id,
      channel_id: envelope.channel_id,
      type,
      at: envelope.at,
      ...fields,
    } as RunEvent;
    const json = JSON.stringify(event);
    this.#sql.exec(`INSERT INTO events (sequence, type, json) VALUES (?, ?, ?)`, sequence, type, json);
    this.#last = sequence;
    if (sequence - this.#earliest + 1 > this.#maxEvents) {
      // Cap reached: drop the oldest batch so the log holds at most maxEvents.
      // Readers that still needed them get 410 replay_gap, never a silent gap.
      this.#earliest = sequence - this.#maxEvents + this.#pruneBatch;
      this.#sql.exec(`DELETE FROM events WHERE sequence < ?`, this.#earliest);
    }
    return { sequence, type, json, event };
  }

  /** Up to `limit` retained events with sequence > after, in order. */
  readAfter(after: number, limit = REPLAY_BATCH_EVENTS): StoredEvent[] {
    return this.#sql
      .exec<{ sequence: number; type: string; json: string }>(
        `SELECT sequence, type, json FROM events WHERE sequence > ? ORDER BY sequence LIMIT ?`,
        after,
        limit,
      )
      .toArray() as StoredEvent[];
  }

  /** True when a reader resuming after `after` would miss events that retention dropped. */
  hasGapAfter(after: number): boolean {
    return after + 1 < this.#earliest;
  }

  /** Deletes every event (retention expired); sequences are never reused. */
  purge(): void {
    this.#sql.exec(`INSERT OR REPLACE INTO event_log_purged (id, last) VALUES (1, ?)`, this.#last);
    this.#sql.exec(`DELETE FROM events`);
    this.#earliest = this.#last + 1;
  }
}
