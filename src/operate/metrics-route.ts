// GET /api/metrics (contract section 22, viewer): the scrape, bounded by
// STORAGE_WAIT_MS like the listings (503 storage_timeout past it, so a stalled
// D1 never hangs a Prometheus scrape), answered as Prometheus text 0.0.4.
import type { HostConfig } from "../config/config";
import type { Env } from "../config/env";
import { errorJson } from "../base/api-error";
import { boundedStorage } from "../outcomes/storage-guard";
import { globalStoragePool } from "../outcomes/storage-pool-rpc";
import { readMetrics, renderMetrics } from "./metrics-scrape";
import { PROMETHEUS_CONTENT_TYPE } from "./prometheus-text";

/** Seconds a scraper should wait before asking again when D1 is slow. */
const STORAGE_RETRY_AFTER_SECONDS = 1;

export async function handleMetrics(env: Env, config: Pick<HostConfig, "STORAGE_WAIT_MS">): Promise<Response> {
  const pool = globalStoragePool(env.STORAGE_POOL);
  const result = await boundedStorage(config.STORAGE_WAIT_MS, () => readMetrics(env.DB, () => pool.stats()));
  if (result.status === "timeout") {
    return errorJson(
      503,
      { error: "storage_timeout", message: `Storage did not answer within ${config.STORAGE_WAIT_MS} ms; try the scrape again shortly.` },
      { "retry-after": String(STORAGE_RETRY_AFTER_SECONDS) },
    );
  }
  return new Response(renderMetrics(result.value, Date.now()), { status: 200, headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
}
