// The Cron Trigger's job (wrangler.toml [triggers] crons, contract section
// 22): loads the host configuration, runs one firing of retention and logs
// what it deleted as one JSON line. A bad configuration deletes nothing.
import { loadConfig } from "../config/config";
import type { Env } from "../config/env";
import { logger } from "./logger";
import { type RetentionBounds, type RetentionReport, runRetention } from "./retention";

export async function scheduledRetention(env: Env, scheduledTime: number, bounds?: RetentionBounds): Promise<RetentionReport | null> {
  const loaded = loadConfig(env);
  if (loaded.state === "bad_config") {
    logger.error("retention: skipped, the host configuration is invalid", { details: loaded.details });
    return null;
  }
  try {
    const report = await runRetention(env.DB, loaded.config, scheduledTime, bounds);
    logger.info("retention: done", { deleted: report.deleted, more: report.more });
    return report;
  } catch (err) {
    // The next firing tries again; what was deleted stays deleted (every batch is complete or not at all).
    logger.error("retention: stopped on a D1 error; the next firing goes on", { error: err });
    return null;
  }
}
