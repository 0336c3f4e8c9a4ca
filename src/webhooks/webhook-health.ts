// The `webhooks` component of GET /api/health (contract section 22): off
// without endpoints, degraded when a configured endpoint is disabled (a 410)
// or its deliveries have failed for over an hour, else ok. One D1 read.
import type { WebhookEndpoint } from "../config/webhooks-setting";
import { type EndpointDb, entryFingerprint } from "./endpoint-state";

/** Contract section 22: a delivery failing for longer than this degrades health. */
const FAILING_TOO_LONG_MS = 3_600_000;

export async function webhooksHealth(
  db: EndpointDb,
  endpoints: readonly WebhookEndpoint[],
  now: number,
): Promise<"ok" | "degraded" | "off"> {
  if (endpoints.length === 0) return "off";
  const { results } = await db
    .prepare(
      `SELECT url, disabled_entry, failing_since FROM webhook_endpoints
       WHERE url IN (SELECT value FROM json_each(?)) AND (disabled_entry IS NOT NULL OR failing_since IS NOT NULL)`,
    )
    .bind(JSON.stringify(endpoints.map((e) => e.url)))
    .all<{ url: string; disabled_entry: string | null; failing_since: string | null }>();
  for (const row of results) {
    const endpoint = endpoints.find((e) => e.url === row.url);
    if (endpoint === undefined) continue;
    if (row.disabled_entry !== null && row.disabled_entry === (await entryFingerprint(endpoint))) return "degraded";
    if (row.failing_since !== null && now - Date.parse(row.failing_since) > FAILING_TOO_LONG_MS) return "degraded";
  }
  return "ok";
}
