// The Worker's bindings. Vars and secrets are read through loadConfig(), never directly.
import type { RunObject } from "../../durable-objects/run-object";
import type { StoragePool } from "../../durable-objects/storage-pool";
import type { AuditQueue } from "../../durable-objects/audit-queue";
import type { RateLimiter } from "../../durable-objects/rate-limiter";

export interface Env {
  RUN_OBJECT: DurableObjectNamespace<RunObject>;
  STORAGE_POOL: DurableObjectNamespace<StoragePool>;
  /** The Worker's refusals, queued durably before each 403 is answered (contract section 18). */
  AUDIT_QUEUE: DurableObjectNamespace<AuditQueue>;
  /** One object per rate-limited key: failed authentications per address, triggers per principal (contract section 18). */
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  DB: D1Database;
}
