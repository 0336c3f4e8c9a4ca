// A run's life in the logs (contract section 22): at `info`, one line when
// it starts, for each approval asked and resolved, for each call's
// execution (with `mutation_id` and the outcome) and when it ends, each with
// `run_id`, so an incident can be followed in Workers Logs alone. Read off
// the events the run appends (src/agent/run-outputs.ts calls it for each),
// never off the engine's path. Only ids, names and outcomes: no arguments,
// results, questions or answers (the logger redacts every line anyway).
import { type LogFields, logger } from "./logger";

/** The line an event of the run gets, or null for one the lifecycle does not name. */
export function lifecycleLine(type: string, fields: Record<string, unknown>, runId: string): { msg: string; fields: LogFields } | null {
  const pick = (...names: string[]) => {
    const out: LogFields = { run_id: runId };
    for (const name of names) if (fields[name] !== undefined && fields[name] !== null) out[name] = fields[name];
    return out;
  };
  switch (type) {
    case "run_started":
      return { msg: "run started", fields: pick("channel_id", "requested_by", "on_behalf_of") };
    case "approval_requested":
      return { msg: "approval asked", fields: pick("tool_call_id", "approval_id", "tool_name", "level", "required", "expires_at") };
    case "approval_resolved":
      return { msg: "approval resolved", fields: pick("tool_call_id", "approval_id", "tool_name", "decision", "decided_by") };
    case "tool_execution": {
      const error = fields.error as { code?: unknown } | undefined;
      const result = fields.result as { is_error?: unknown } | undefined;
      const outcome =
        fields.execution_status === "not_executed"
          ? (fields.reason ?? "not_executed")
          : typeof error?.code === "string"
            ? error.code
            : result?.is_error === true
              ? "tool_error"
              : "ok";
      return {
        msg: fields.execution_status === "executed" ? "tool call executed" : "tool call not executed",
        fields: { ...pick("tool_call_id", "approval_id", "tool_name", "execution_status", "mutation_id"), outcome },
      };
    }
    case "run_completed":
      return { msg: "run ended", fields: { ...pick("tool_calls"), status: "completed" } };
    case "run_failed": {
      const error = fields.error as { code?: unknown } | undefined;
      return { msg: "run ended", fields: { run_id: runId, status: "failed", error_code: error?.code } };
    }
    default:
      return null;
  }
}

/** Logs the lifecycle line of an appended event, if it has one (at `info`: LOG_LEVEL decides whether it is written). */
export function logLifecycle(type: string, fields: Record<string, unknown>, runId: string): void {
  const line = lifecycleLine(type, fields, runId);
  if (line !== null) logger.info(line.msg, line.fields);
}
