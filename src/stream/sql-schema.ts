// A Durable Object's SQLite schema as data: each module that owns a table
// declares it (its name and the statements that create it and its indexes,
// each IF NOT EXISTS), and each object lists its tables in one ordered list
// (src/agent/run-schema.ts for the RunObject, the object's own file for the
// others) that creates them, in order, in one place. Modules' constructors
// create nothing.

interface SqlCursorLike<T> {
  toArray(): T[];
}
/** The part of a Durable Object's SQLite storage every table's module uses (anything with `exec` in tests). */
export interface SqlLike {
  exec<T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]): SqlCursorLike<T>;
}

export interface SqlTable {
  name: string;
  /** CREATE TABLE / CREATE INDEX statements, each IF NOT EXISTS, run in order. */
  ddl: readonly string[];
}

/** Creates every table of the list not there yet (a table added by a later version included). */
export function createTables(sql: SqlLike, tables: readonly SqlTable[]): void {
  for (const table of tables) for (const statement of table.ddl) sql.exec(statement);
}
