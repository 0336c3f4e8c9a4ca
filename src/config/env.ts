// The Worker's bindings. Vars and secrets are read through loadConfig(), never directly.
import type { RunObject } from "../../durable-objects/run-object";
import type { StoragePool } from "../../durable-objects/storage-pool";
import type { AuditQueue } from "../../durable-objects/audit-queue";

export interface Env {
  RUN_OBJECT: DurableObjectNamespace<RunObject>;
  STORAGE_POOL: DurableObjectNamespace<StoragePool>;
  /** The Worker's refusals, queued durably before each 403 is answered (contract section 18). */
  AUDIT_QUEUE: DurableObjectNamespace<AuditQueue>;
  DB: D1Database;
}
