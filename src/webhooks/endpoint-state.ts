// Each webhook endpoint's state in D1 (contract section 26,
// migrations/0035_webhook_outbox.sql): its attempts (last status and time,
// failed attempts counted, which the migration's trigger adds to
// aee_webhook_failures_total), its disabling by a 410 (until its WEBHOOKS
// entry changes; audited webhook.disabled in the same batch), and the
// notifications each run's outbox holds for it (absolute counts, so a
// repeated report changes nothing; the trigger keeps aee_webhooks_pending).
import { auditStatement, newAuditId } from "../audit/audit-log";
import type { WebhookEndpoint } from "../config/webhooks-setting";
import { logger } from "../operate/logger";
import type { AttemptResult } from "./webhook-attempt";

/** The part of D1 used here; the real `env.DB` is one. */
export type EndpointDb = Pick<D1Database, "prepare" | "batch">;

/**
 * A fingerprint of one WEBHOOKS entry (its url, types and secrets): a 410
 * disables that entry, and any change to it makes it a new one. SHA-256 of
 * random secrets gives nothing of them away.
 */
export async function entryFingerprint(endpoint: WebhookEndpoint): Promise<string> {
  const text = JSON.stringify([endpoint.url, [...endpoint.events].sort(), endpoint.secrets]);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The fingerprints of the entries a 410 disabled, by url. */
async function disabledEntries(db: EndpointDb): Promise<Map<string, string>> {
  const { results } = await db
    .prepare(`SELECT url, disabled_entry FROM webhook_endpoints WHERE disabled_entry IS NOT NULL`)
    .all<{ url: string; disabled_entry: string }>();
  return new Map(results.map((r) => [r.url, r.disabled_entry]));
}

const failed = (result: AttemptResult) => (result.kind === "delivered" ? 0 : 1);

/** One attempt's statement: the endpoint's last status and time, a failure counted. */
function attemptStatement(db: EndpointDb, url: string, result: AttemptResult, at: string): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO webhook_endpoints (url, failed_total, last_attempt_at, last_status, failing_since)
       VALUES (?1, ?2, ?3, ?4, CASE WHEN ?2 > 0 THEN ?3 END)
       ON CONFLICT (url) DO UPDATE SET failed_total = failed_total + ?2, last_attempt_at = ?3, last_status = ?4,
         failing_since = CASE WHEN ?2 > 0 THEN COALESCE(failing_since, ?3) ELSE NULL END`,
    )
    .bind(url, failed(result), at, result.status);
}

/** A 410: the entry is disabled (audited once, in the same batch, only when this changed it). */
function disableStatements(db: EndpointDb, url: string, fingerprint: string, at: string): D1PreparedStatement[] {
  const origin = urlWithoutQuery(url);
  return [
    db
      .prepare(`UPDATE webhook_endpoints SET disabled_entry = ?2, disabled_at = ?3 WHERE url = ?1 AND disabled_entry IS NOT ?2`)
      .bind(url, fingerprint, at),
    auditStatement(
      db,
      {
        id: newAuditId(),
        at,
        principal: "system",
        action: "webhook.disabled",
        target: `webhook ${origin}`,
        result: "ok",
        details: { status: 410 },
      },
      { onlyIfPreviousChanged: true },
    ),
  ];
}

/** One run's pending notifications per url, as absolute counts (0 deletes its row). */
export function pendingStatements(db: EndpointDb, source: string, counts: ReadonlyMap<string, number>): D1PreparedStatement[] {
  return [...counts].map(([url, pending]) =>
    pending === 0
      ? db.prepare(`DELETE FROM webhook_pending WHERE source = ? AND url = ?`).bind(source, url)
      : db
          .prepare(
            `INSERT INTO webhook_pending (source, url, pending) VALUES (?, ?, ?)
             ON CONFLICT (source, url) DO UPDATE SET pending = excluded.pending WHERE pending <> excluded.pending`,
          )
          .bind(source, url, pending),
  );
}

/** The url as GET /api/webhooks shows it: without its query (which may hold a credential). */
export function urlWithoutQuery(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/** Records one attempt in D1 (a 410 also disables the entry, audited); never throws. `auditWritten`: wake the sealer. */
export function recordAttemptIn(db: EndpointDb, auditWritten?: () => void) {
  return async (url: string, result: AttemptResult, fingerprint: string, at: number): Promise<void> => {
    const iso = new Date(at).toISOString();
    try {
      await db.batch([
        attemptStatement(db, url, result, iso),
        ...(result.kind === "gone" ? disableStatements(db, url, fingerprint, iso) : []),
      ]);
      if (result.kind === "gone") auditWritten?.();
    } catch (err) {
      logger.warn("webhooks: an attempt could not be recorded in D1", { error: err instanceof Error ? err.message : String(err) });
    }
  };
}

/** The disabled entries, or none when D1 cannot say (delivery goes on; a 410 disables again). */
export async function disabledEntriesOrNone(db: EndpointDb): Promise<Map<string, string>> {
  try {
    return await disabledEntries(db);
  } catch (err) {
    logger.warn("webhooks: the disabled endpoints could not be read; delivering", {
      error: err instanceof Error ? err.message : String(err),
    });
    return new Map();
  }
}
