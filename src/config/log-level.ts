// The deployment's LOG_LEVEL (contract sections 13 and 22) as the process
// holds it: set when the host config is read (config.ts), read by the logger
// (src/operate/logger.ts) on every line. Kept here, on the configuration's
// floor, so reading the config never imports the operating room above it.
export type LogLevel = "debug" | "info" | "warn" | "error";

/** The least level written; `info` until the host config says otherwise. */
let threshold: LogLevel = "info";

/** Lines below `level` are not written: `warn` keeps only problems, `info` adds a run's life (section 22). */
export function setLogLevel(level: LogLevel): void {
  threshold = level;
}

export function logLevel(): LogLevel {
  return threshold;
}
