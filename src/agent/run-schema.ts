// The RunObject's SQLite schema: every table of a run's object, in creation
// order, each with what the run's retention does to it. The one place the
// object's tables are listed: the object creates them from here when the run
// starts (and when it loads, so a table a later version added appears), and
// retention takes from here which to drop, which to keep with their rows and
// which to recreate empty. Each table's columns stay with the module that
// owns it (its exported SqlTable).
import { CONVERSATION_TABLE } from "./conversation-log";
import { RUN_INDEX_MARKS_TABLE } from "../listings/run-index";
import { METRIC_BATCH_TABLE, METRIC_DELTAS_TABLE, METRIC_SLACK_SEEN_TABLE, METRIC_TIMERS_TABLE } from "../operate/run-metrics";
import { TRACE_SPANS_TABLE } from "../operate/trace-spans";
import { DEADLINES_TABLE } from "../schedule/deadlines";
import { ROW_OUTBOX_TABLE } from "../outcomes/row-outbox";
import { SLACK_OUTBOX_RUN_TABLE, SLACK_OUTBOX_TABLE } from "../slack/outbox";
import { WEBHOOK_QUEUE_TABLE } from "../webhooks/run-webhooks";
import { EVENT_LOG_PURGED_TABLE, EVENTS_TABLE, type SqlLike } from "../stream/event-log";
import { createTables, type SqlTable } from "../stream/sql-schema";

/**
 * At retention: "drop" goes with the run (its input, its outputs' queues);
 * "keep" stays with its rows (the purge marker, the identity, index marks and
 * metric deltas D1 has not taken yet); "empty" stays as an empty table (what
 * the purged object still reads or writes).
 */
type AtRetention = "drop" | "keep" | "empty";

interface RunTable {
  table: SqlTable;
  atRetention: AtRetention;
}

/** The run's own tables (its record, its calls, its identity after retention), kept by src/agent/run-store.ts. */
const RUN_TABLE: SqlTable = {
  name: "run",
  ddl: [`CREATE TABLE IF NOT EXISTS run (id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL, script TEXT NOT NULL)`],
};

const CALLS_TABLE: SqlTable = {
  name: "calls",
  ddl: [`CREATE TABLE IF NOT EXISTS calls (position INTEGER PRIMARY KEY, record TEXT NOT NULL)`],
};

/** After retention: the run's identity, nothing else. */
const PURGED_RUN_TABLE: SqlTable = {
  name: "purged_run",
  ddl: [`CREATE TABLE IF NOT EXISTS purged_run (id INTEGER PRIMARY KEY CHECK (id = 1), run_id TEXT NOT NULL, channel_id TEXT NOT NULL)`],
};

const runObjectTables = (): readonly RunTable[] => [
  { table: RUN_TABLE, atRetention: "drop" },
  { table: CALLS_TABLE, atRetention: "drop" },
  { table: CONVERSATION_TABLE, atRetention: "drop" },
  { table: DEADLINES_TABLE, atRetention: "drop" },
  // Row writes D1 has not taken: retried until retention (days after the run ended), then dropped with the run.
  { table: ROW_OUTBOX_TABLE, atRetention: "drop" },
  { table: EVENTS_TABLE, atRetention: "empty" },
  { table: EVENT_LOG_PURGED_TABLE, atRetention: "keep" },
  { table: PURGED_RUN_TABLE, atRetention: "keep" },
  { table: SLACK_OUTBOX_RUN_TABLE, atRetention: "drop" },
  { table: SLACK_OUTBOX_TABLE, atRetention: "drop" },
  { table: TRACE_SPANS_TABLE, atRetention: "drop" },
  // Contract section 26: retention waits until it is empty or given up, then it goes with the run.
  { table: WEBHOOK_QUEUE_TABLE, atRetention: "drop" },
  { table: RUN_INDEX_MARKS_TABLE, atRetention: "keep" },
  { table: METRIC_DELTAS_TABLE, atRetention: "keep" },
  { table: METRIC_BATCH_TABLE, atRetention: "keep" },
  { table: METRIC_TIMERS_TABLE, atRetention: "empty" },
  { table: METRIC_SLACK_SEEN_TABLE, atRetention: "empty" },
];

const tablesWhere = (keep: (at: AtRetention) => boolean): SqlTable[] =>
  runObjectTables()
    .filter((t) => keep(t.atRetention))
    .map((t) => t.table);

/** Every table of a live run's object. */
export function createRunTables(sql: SqlLike): void {
  createTables(
    sql,
    runObjectTables().map((t) => t.table),
  );
}

/** The tables of a purged run's object (what retention leaves). */
export function createPurgedRunTables(sql: SqlLike): void {
  createTables(
    sql,
    tablesWhere((at) => at !== "drop"),
  );
}

/** Retention, step one: the tables that go with the run are dropped. */
export function dropAtRetention(sql: SqlLike): void {
  for (const { name } of tablesWhere((at) => at === "drop")) sql.exec(`DROP TABLE IF EXISTS ${name}`);
}

/** Retention keeps these with their rows (through the scrub of src/agent/run-store.ts). */
export function keptAtRetention(): SqlTable[] {
  return tablesWhere((at) => at === "keep");
}
