// GET /api/webhooks (contract section 26, admin): each configured endpoint
// with its state and counts, `url` without its query. Pending is what every
// run's outbox last reported for it plus the deployment outbox's own; one D1
// batch of three statements, whatever the number of runs waiting.
import { z } from "zod";
import type { WebhookEndpoint } from "../config/webhooks-setting";
import { WEBHOOK_TYPES } from "../wire/webhooks";
import { type EndpointDb, entryFingerprint, urlWithoutQuery } from "./endpoint-state";

export const webhookListingSchema = z
  .object({
    webhooks: z.array(
      z
        .object({
          url: z.string().meta({ description: "The endpoint's url without its query" }),
          events: z.array(z.enum(WEBHOOK_TYPES)),
          status: z.enum(["active", "disabled"]),
          disabled_at: z.string().optional().meta({ description: "When a 410 disabled it (until its WEBHOOKS entry changes)" }),
          pending: z.number().int().min(0),
          failed_total: z.number().int().min(0).meta({ description: "Attempts that failed (non-2xx or no answer)" }),
          last_attempt_at: z.string().optional(),
          last_status: z.number().int().optional().meta({ description: "The last attempt's HTTP status; absent when none came" }),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: "WebhooksListing" });

export type WebhookListing = z.output<typeof webhookListingSchema>;

interface EndpointRow {
  url: string;
  disabled_entry: string | null;
  disabled_at: string | null;
  failed_total: number;
  last_attempt_at: string | null;
  last_status: number | null;
}

/** The listing, in WEBHOOKS order. */
export async function listWebhooks(db: EndpointDb, endpoints: readonly WebhookEndpoint[]): Promise<WebhookListing> {
  if (endpoints.length === 0) return { webhooks: [] };
  const urls = JSON.stringify(endpoints.map((e) => e.url));
  const IN = "url IN (SELECT value FROM json_each(?))";
  const [states, runs, deployment] = await db.batch([
    db
      .prepare(`SELECT url, disabled_entry, disabled_at, failed_total, last_attempt_at, last_status FROM webhook_endpoints WHERE ${IN}`)
      .bind(urls),
    db.prepare(`SELECT url, SUM(pending) AS n FROM webhook_pending WHERE ${IN} GROUP BY url`).bind(urls),
    db.prepare(`SELECT url, COUNT(*) AS n FROM webhook_outbox WHERE state = 'pending' AND ${IN} GROUP BY url`).bind(urls),
  ]);
  const byUrl = new Map(((states?.results ?? []) as EndpointRow[]).map((r) => [r.url, r]));
  const count = (rows: unknown[] | undefined, url: string) =>
    Number((rows as { url: string; n: number }[] | undefined)?.find((r) => r.url === url)?.n ?? 0);
  const webhooks = await Promise.all(
    endpoints.map(async (endpoint) => {
      const row = byUrl.get(endpoint.url);
      const disabled = row?.disabled_entry != null && row.disabled_entry === (await entryFingerprint(endpoint));
      return {
        url: urlWithoutQuery(endpoint.url),
        events: endpoint.events,
        status: disabled ? ("disabled" as const) : ("active" as const),
        ...(disabled && row?.disabled_at ? { disabled_at: row.disabled_at } : {}),
        pending: count(runs?.results, endpoint.url) + count(deployment?.results, endpoint.url),
        failed_total: Number(row?.failed_total ?? 0),
        ...(row?.last_attempt_at ? { last_attempt_at: row.last_attempt_at } : {}),
        ...(row?.last_status != null ? { last_status: Number(row.last_status) } : {}),
      };
    }),
  );
  return { webhooks };
}
