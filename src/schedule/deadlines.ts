// Named deadlines of one Durable Object, persisted so they survive eviction,
// all served by the object's single alarm. The object arms its alarm for the
// earliest deadline; when the alarm fires it takes every deadline that is due.
import type { SqlLike } from "../stream/event-log";
import type { SqlTable } from "../stream/sql-schema";

/**
 * turn: the model is ready; calls: an approval, question or admission deadline; retention: delete the events;
 * index: write the run index's pending marks to D1; slack: the Slack outbox's head post is due;
 * rows: kept D1 row writes; webhooks: the webhook outbox's earliest notification is due (contract section 26).
 */
export type DeadlineName = "turn" | "calls" | "retention" | "index" | "slack" | "rows" | "webhooks";

export const DEADLINES_TABLE: SqlTable = {
  name: "deadlines",
  ddl: [`CREATE TABLE IF NOT EXISTS deadlines (name TEXT PRIMARY KEY, due_at INTEGER NOT NULL)`],
};

export class Deadlines<Name extends string = DeadlineName> {
  readonly #sql: SqlLike;

  constructor(sql: SqlLike) {
    this.#sql = sql;
  }

  set(name: Name, dueAt: number): void {
    this.#sql.exec(`INSERT OR REPLACE INTO deadlines (name, due_at) VALUES (?, ?)`, name, dueAt);
  }

  /** Sets a deadline unless one of that name is already due earlier (a burst of marks does not keep pushing it later). */
  setEarliest(name: Name, dueAt: number): void {
    this.#sql.exec(
      `INSERT INTO deadlines (name, due_at) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET due_at = MIN(due_at, excluded.due_at)`,
      name,
      dueAt,
    );
  }

  clear(name: Name): void {
    this.#sql.exec(`DELETE FROM deadlines WHERE name = ?`, name);
  }

  /** Removes and returns every deadline due at `now`. */
  takeDue(now: number): Name[] {
    const due = this.#sql
      .exec<{ name: string }>(`SELECT name FROM deadlines WHERE due_at <= ? ORDER BY due_at`, now)
      .toArray()
      .map((r) => r.name as Name);
    if (due.length > 0) this.#sql.exec(`DELETE FROM deadlines WHERE due_at <= ?`, now);
    return due;
  }

  earliest(): number | undefined {
    const row = this.#sql.exec<{ due: number | null }>(`SELECT MIN(due_at) AS due FROM deadlines`).toArray()[0];
    return row?.due ?? undefined;
  }
}
