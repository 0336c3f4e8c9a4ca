// The audit chain's health (contract section 22's `audit` component, section
// 25): `degraded` when an entry that could be sealed has waited over 5
// minutes or a checkpoint's R2 copy has been missing over a minute,
// `unsigned` without AUDIT_SIGNING_KEY (which does not degrade the status),
// else `ok`.
const SEALING_LAG_MS = 5 * 60_000;
const COPY_GRACE_MS = 60_000;

export type AuditHealth = "ok" | "degraded" | "unsigned";

export async function auditHealth(db: D1Database, options: { signed: boolean; bucket: boolean; now: number }): Promise<AuditHealth> {
  const lagging = await db
    .prepare("SELECT MIN(at) AS at FROM audit_log WHERE seq IS NULL AND (coalesce_key IS NULL OR closed = 1)")
    .first<{ at: string | null }>();
  if (lagging?.at != null && options.now - Date.parse(lagging.at) > SEALING_LAG_MS) return "degraded";
  if (options.bucket) {
    const missing = await db
      .prepare("SELECT COUNT(*) AS n FROM audit_checkpoints WHERE r2_key IS NULL AND at < ?")
      .bind(new Date(options.now - COPY_GRACE_MS).toISOString())
      .first<{ n: number }>();
    if ((missing?.n ?? 0) > 0) return "degraded";
  }
  return options.signed ? "ok" : "unsigned";
}
