// The Worker's bindings. Vars and secrets are read through loadConfig(), never directly.
import type { RunObject } from "../../durable-objects/run-object";
import type { StoragePool } from "../../durable-objects/storage-pool";

export interface Env {
  RUN_OBJECT: DurableObjectNamespace<RunObject>;
  STORAGE_POOL: DurableObjectNamespace<StoragePool>;
  DB: D1Database;
}
