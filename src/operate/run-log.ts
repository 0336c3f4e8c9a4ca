// A run's life in the logs (contract section 22): at `info`, one line when
// it starts, for each approval asked and resolved, for each call's
// execution (with `mutation_id` and the outcome) and when it ends, each with
// `run_id`, so an incident can be followed in Workers Logs alone. Read off
// the events the run appends (src/agent/run-outputs.ts calls it for each),
// never off the engine's path. Only ids, names and outcomes: no arguments,
// results, questions or answers (the logger redacts every line anyway).
import type { RunEvent } from "../wire/event-schemas";
import { type LogFields, logger } from "./logger";

/** `run_id`, then the fields that have a value. */
function definedFields(run_id: string, fields: LogFields): LogFields {
  const out: LogFields = { run_id };
  for (const [name, value] of Object.entries(fields)) if (value !== undefined && value !== null) out[name] = value;
  return out;
}

/** The line an event of the run gets, or null for one the lifecycle does not name. */
export function lifecycleLine(event: RunEvent): { msg: string; fields: LogFields } | null {
  const run_id = event.run_id;
  const defined = (fields: LogFields): LogFields => definedFields(run_id, fields);
  switch (event.type) {
    case "run_started":
      return {
        msg: "run started",
        fields: defined({ channel_id: event.channel_id, requested_by: event.requested_by, on_behalf_of: event.on_behalf_of }),
      };
    case "approval_requested": {
      const { tool_call_id, approval_id, tool_name, level, required, expires_at } = event;
      return { msg: "approval asked", fields: defined({ tool_call_id, approval_id, tool_name, level, required, expires_at }) };
    }
    case "approval_resolved": {
      const { tool_call_id, approval_id, tool_name, decision, decided_by } = event;
      return { msg: "approval resolved", fields: defined({ tool_call_id, approval_id, tool_name, decision, decided_by }) };
    }
    case "tool_execution": {
      const { tool_call_id, approval_id, tool_name, execution_status, mutation_id } = event;
      const outcome =
        execution_status === "not_executed"
          ? (event.reason ?? "not_executed")
          : event.error !== undefined
            ? event.error.code
            : event.result?.is_error === true
              ? "tool_error"
              : "ok";
      return {
        msg: execution_status === "executed" ? "tool call executed" : "tool call not executed",
        fields: { ...defined({ tool_call_id, approval_id, tool_name, execution_status, mutation_id }), outcome },
      };
    }
    case "run_completed":
      return { msg: "run ended", fields: { ...defined({ tool_calls: event.tool_calls }), status: "completed" } };
    case "run_failed":
      return { msg: "run ended", fields: { run_id, status: "failed", error_code: event.error.code } };
    default:
      return null;
  }
}

/** Logs the lifecycle line of an appended event, if it has one (at `info`: LOG_LEVEL decides whether it is written). */
export function logLifecycle(event: RunEvent): void {
  const line = lifecycleLine(event);
  if (line !== null) logger.info(line.msg, line.fields);
}
