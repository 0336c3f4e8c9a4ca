// The run's durable state in its Durable Object's SQLite storage: the run
// record (header and script) in one row, each call in a row of its own,
// written only when that call changed (transitions replace a call's record,
// so a changed call is a different object). Nothing is created until the run
// starts: a request for a run that never existed creates no storage.
import type { SqlLike } from "../stream/event-log";
import type { ScriptTurn } from "../http/trigger-request";
import type { ToolCall } from "../execution/tool-calls";
import { type RunRecord, storedRunRecord } from "./run-record";
import { createPurgedRunTables, createRunTables, dropAtRetention, keptAtRetention } from "./run-schema";

export interface StoredRun {
  run: RunRecord;
  script: ScriptTurn[];
  calls: ToolCall[];
}

export class RunStore {
  readonly #sql: SqlLike;
  /** The call records as last written, by position. */
  readonly #written: ToolCall[] = [];

  private constructor(sql: SqlLike) {
    this.#sql = sql;
  }

  /** The stored run, or null (and nothing created) when this object holds none. */
  static load(sql: SqlLike): { store: RunStore; stored: StoredRun } | null {
    const exists = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'run'`).toArray()[0];
    if (!exists?.n) return null;
    const row = sql.exec<{ record: string; script: string }>(`SELECT record, script FROM run WHERE id = 1`).toArray()[0];
    if (!row) return null;
    // A table a later version added appears now (every statement is IF NOT EXISTS).
    createRunTables(sql);
    const store = new RunStore(sql);
    const calls = sql
      .exec<{ record: string }>(`SELECT record FROM calls ORDER BY position`)
      .toArray()
      .map((r) => JSON.parse(r.record) as ToolCall);
    store.#written.push(...calls);
    return {
      store,
      stored: { run: storedRunRecord(JSON.parse(row.record) as RunRecord), script: JSON.parse(row.script) as ScriptTurn[], calls },
    };
  }

  /** Creates the object's tables (src/agent/run-schema.ts) and the run's first row. */
  static create(sql: SqlLike, run: RunRecord, script: readonly ScriptTurn[]): RunStore {
    createRunTables(sql);
    sql.exec(`INSERT INTO run (id, record, script) VALUES (1, ?, ?)`, JSON.stringify(run), JSON.stringify(script));
    return new RunStore(sql);
  }

  /**
   * Retention ended: the record, the script, the calls (their real arguments)
   * and the conversation are dropped. What stays is the event log's purge
   * marker (the last sequence, so a returning reader gets 410 replay_gap or
   * 204, never a silent restart) and the run's identity, nothing else.
   */
  static purge(sql: SqlLike, identity: { run_id: string; channel_id: string }): void {
    dropAtRetention(sql);
    createPurgedRunTables(sql);
    sql.exec(`INSERT OR REPLACE INTO purged_run (id, run_id, channel_id) VALUES (1, ?, ?)`, identity.run_id, identity.channel_id);
  }

  /**
   * After purge(): rebuilds the object's SQLite storage with only the tables
   * retention keeps (src/agent/run-schema.ts: the purge marker, the identity,
   * the index marks not yet written), rows included, and those it empties.
   * Dropped rows stay in SQLite's freed pages and write-ahead log until
   * overwritten, so the kept rows are copied out, the whole storage is deleted
   * (deleteAll discards the database file, log included) and they are written
   * back: no byte of the run's input survives retention.
   */
  static async scrub(sql: SqlLike, storage: { deleteAll(): Promise<void> }): Promise<void> {
    const saved = keptAtRetention().map(({ name }) => ({
      table: name,
      rows: sql.exec<Record<string, SqlStorageValue>>(`SELECT * FROM ${name}`).toArray(),
    }));
    await storage.deleteAll();
    createPurgedRunTables(sql);
    for (const { table, rows } of saved) {
      for (const row of rows) {
        const columns = Object.keys(row);
        sql.exec(
          `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
          ...columns.map((c) => row[c]),
        );
      }
    }
  }

  /** The identity of a run whose retention ended, or null. */
  static purged(sql: SqlLike): { run_id: string; channel_id: string } | null {
    const exists = sql
      .exec<{ n: number }>(`SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'purged_run'`)
      .toArray()[0];
    if (!exists?.n) return null;
    const identity =
      sql.exec<{ run_id: string; channel_id: string }>(`SELECT run_id, channel_id FROM purged_run WHERE id = 1`).toArray()[0] ?? null;
    // What a purged object reads and writes, also for one purged by a version that left a table out.
    if (identity) createPurgedRunTables(sql);
    return identity;
  }

  /** Writes the run record and every call that changed since the last save. */
  save(run: RunRecord, calls: readonly ToolCall[]): void {
    this.#sql.exec(`UPDATE run SET record = ? WHERE id = 1`, JSON.stringify(run));
    for (const [position, call] of calls.entries()) {
      if (this.#written[position] === call) continue;
      this.#sql.exec(`INSERT OR REPLACE INTO calls (position, record) VALUES (?, ?)`, position, JSON.stringify(call));
      this.#written[position] = call;
    }
  }
}
