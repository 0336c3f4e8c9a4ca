// The run's durable list of D1 row writes nobody waits for (contract section
// 8): a settlement that outlived its wait, the row of a call that ended
// before dispatch, the outcome_unknown of a call lost to a restart. Each is
// kept in the run's SQLite storage (table `row_outbox`) from the moment it is
// due until D1 took it, so an object unloaded or restarted meanwhile still
// writes it: the ledger retries it in memory first (slots free up in
// milliseconds), and what is left is retried from the run's alarm (deadline
// "rows") by whichever instance wakes. Nothing here talks to D1: the ledger
// (mutation-ledger.ts) does the writes and says when one is done.
import type { IntentInput, Settlement } from "./mutation-outcomes";
import type { SqlLike } from "../stream/event-log";
import type { SqlTable } from "../stream/sql-schema";

export const ROW_OUTBOX_TABLE: SqlTable = {
  name: "row_outbox",
  ddl: [`CREATE TABLE IF NOT EXISTS row_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, work TEXT NOT NULL)`],
};

/** One write: a row's settlement, or an unsent call's intent and then its settlement (not_executed). */
export type RowWork =
  | { kind: "settle"; mutationId: string; settlement: Settlement }
  | { kind: "unsent"; input: IntentInput & { mutationId: string }; settlement: Omit<Settlement, "state"> };

export interface PendingRowWork {
  id: number;
  work: RowWork;
}

export class RowOutbox {
  readonly #sql: SqlLike;

  constructor(sql: SqlLike) {
    this.#sql = sql;
  }

  /** Keeps `work` until `done`; synchronous, so it is in storage before anything is sent for it. */
  add(work: RowWork): number {
    const [row] = this.#sql.exec<{ id: number }>("INSERT INTO row_outbox (work) VALUES (?) RETURNING id", JSON.stringify(work)).toArray();
    if (row === undefined) throw new Error("row_outbox: the insert returned no id");
    return row.id;
  }

  /** D1 took it (or answered that nothing is left to do). */
  done(id: number): void {
    this.#sql.exec("DELETE FROM row_outbox WHERE id = ?", id);
  }

  /** Every write still due, oldest first. */
  pending(): PendingRowWork[] {
    return this.#sql
      .exec<{ id: number; work: string }>("SELECT id, work FROM row_outbox ORDER BY id")
      .toArray()
      .map((row) => ({ id: row.id, work: JSON.parse(row.work) as RowWork }));
  }
}
