// Delivery receipts in D1. Claiming a delivery identity is one INSERT that
// does nothing on conflict: D1 serialises writes, so of two identical
// triggers arriving together exactly one claims it and the other reads the
// winner's receipt. A receipt holds names and a time, never the input
// (contract section 17). A claim whose run could not be started is released,
// so the identity stays usable.
// Identities belong to their source (contract section 3): Slack's event ids
// and each principal's own ids are separate namespaces, so nobody can claim
// an id in advance and swallow another's delivery. D1 keys a receipt by
// `<namespace>\n<id>` (no namespace holds a line break); the receipt shows
// the id as its caller gave it. A receipt written before namespaces (a bare
// id) still answers for the id until retention deletes it, so a retry across
// the upgrade starts no second run.
export interface DeliveryReceipt {
  delivery_id: string;
  run_id: string;
  channel_id: string;
  accepted_at: string;
}

/** Whose identities: Slack's event ids, or one principal's own. */
export type DeliveryNamespace = "slack" | `principal:${string}`;

export function slackNamespace(): DeliveryNamespace {
  return "slack";
}

export function principalNamespace(principalId: string): DeliveryNamespace {
  return `principal:${principalId}`;
}

const keyOf = (namespace: DeliveryNamespace, deliveryId: string) => `${namespace}\n${deliveryId}`;

export type ClaimResult = { claimed: true; receipt: DeliveryReceipt } | { claimed: false; receipt: DeliveryReceipt };

/** A receipt released between our INSERT and our read is claimed again, this many times at most. */
const CLAIM_ATTEMPTS = 3;

export async function claimDelivery(db: D1Database, namespace: DeliveryNamespace, wanted: DeliveryReceipt): Promise<ClaimResult> {
  const legacy = await legacyReceipt(db, wanted.delivery_id);
  if (legacy) return { claimed: false, receipt: legacy };
  for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
    const insert = await db
      .prepare(
        `INSERT INTO deliveries (delivery_id, run_id, channel_id, accepted_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (delivery_id) DO NOTHING`,
      )
      .bind(keyOf(namespace, wanted.delivery_id), wanted.run_id, wanted.channel_id, wanted.accepted_at)
      .run();
    if (insert.meta.changes === 1) return { claimed: true, receipt: wanted };
    const receipt = await getDelivery(db, namespace, wanted.delivery_id);
    if (receipt) return { claimed: false, receipt };
    // Released between the INSERT and the read (the other claimer's start failed): try again.
  }
  throw new Error(`delivery ${wanted.delivery_id} was claimed and released ${CLAIM_ATTEMPTS} times while this trigger tried to claim it`);
}

/** Frees a delivery identity whose run never started; only the receipt naming `runId`. */
export async function releaseDelivery(db: D1Database, namespace: DeliveryNamespace, deliveryId: string, runId: string): Promise<void> {
  await db.prepare(`DELETE FROM deliveries WHERE delivery_id = ? AND run_id = ?`).bind(keyOf(namespace, deliveryId), runId).run();
}

/** The receipt of `deliveryId` in `namespace` (or written before namespaces), shown with the id as given. */
export async function getDelivery(db: D1Database, namespace: DeliveryNamespace, deliveryId: string): Promise<DeliveryReceipt | null> {
  const row = await db
    .prepare(`SELECT run_id, channel_id, accepted_at FROM deliveries WHERE delivery_id = ?`)
    .bind(keyOf(namespace, deliveryId))
    .first<Omit<DeliveryReceipt, "delivery_id">>();
  if (row) return { delivery_id: deliveryId, ...row };
  return legacyReceipt(db, deliveryId);
}

/** A receipt keyed by the bare id (written before namespaces; none is written now). */
async function legacyReceipt(db: D1Database, deliveryId: string): Promise<DeliveryReceipt | null> {
  if (deliveryId.includes("\n")) return null;
  return db
    .prepare(`SELECT delivery_id, run_id, channel_id, accepted_at FROM deliveries WHERE delivery_id = ?`)
    .bind(deliveryId)
    .first<DeliveryReceipt>();
}
