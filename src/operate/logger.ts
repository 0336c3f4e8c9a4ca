// The engine's log lines (contract section 22): one JSON object per line,
// `{"level","msg","run_id"?,"tool_call_id"?,...}`, for Workers Logs
// ([observability] in wrangler.toml) to index by field. Every line is
// redacted through the one redaction module (src/execution/redaction.ts):
// the message as free text, the fields as a structure (a key that names a
// credential loses its value; every string is scanned). Used by the Worker
// and both Durable Objects; slack-edge keeps its own logger (src/slack/).
// Hand-written: a logging library would add transports and levels config the
// Workers runtime already provides (console.* is what Workers Logs collects).
import { redactSecrets, redactText } from "../execution/redaction";

import { type LogLevel, logLevel } from "../config/log-level";

export type { LogLevel } from "../config/log-level";

/** Fields a line may carry; run_id and tool_call_id are the ones an incident searches by. */
export interface LogFields {
  run_id?: string;
  tool_call_id?: string;
  [field: string]: unknown;
}

const SINK: Record<LogLevel, (line: string) => void> = {
  debug: (line) => console.debug(line),
  info: (line) => console.info(line),
  warn: (line) => console.warn(line),
  error: (line) => console.error(line),
};

/** The line for `msg` and `fields`, redacted; `level` and `msg` always come first and cannot be overwritten. */
export function logLine(level: LogLevel, msg: string, fields: LogFields = {}): string {
  const { level: _level, msg: _msg, ...rest } = redactSecrets(normalise(fields)) as Record<string, unknown>;
  return JSON.stringify({ level, msg: redactText(msg), ...rest });
}

/** Errors become their message (and stack, redacted with the rest); everything else as is. */
function normalise(fields: LogFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    out[key] = value instanceof Error ? { name: value.name, message: value.message } : value;
  }
  return out;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
function write(level: LogLevel, msg: string, fields?: LogFields): void {
  if (RANK[level] < RANK[logLevel()]) return;
  SINK[level](logLine(level, msg, fields));
}

export const logger = {
  debug: (msg: string, fields?: LogFields) => write("debug", msg, fields),
  info: (msg: string, fields?: LogFields) => write("info", msg, fields),
  warn: (msg: string, fields?: LogFields) => write("warn", msg, fields),
  error: (msg: string, fields?: LogFields) => write("error", msg, fields),
};
