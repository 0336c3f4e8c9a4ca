// The Worker's bindings. Vars and secrets are read through loadConfig(), never directly.
import type { RunObject } from "../durable-objects/run-object";

export interface Env {
  RUN_OBJECT: DurableObjectNamespace<RunObject>;
  DB: D1Database;
}
