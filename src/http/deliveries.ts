// Delivery receipts in D1. Claiming a delivery identity is one INSERT that
// does nothing on conflict: D1 serialises writes, so of two identical
// triggers arriving together exactly one claims it and the other reads the
// winner's receipt. A receipt holds names and a time, never the input
// (contract section 17). A claim whose run could not be started is released,
// so the identity stays usable.
export interface DeliveryReceipt {
  delivery_id: string;
  run_id: string;
  channel_id: string;
  accepted_at: string;
}

export type ClaimResult = { claimed: true; receipt: DeliveryReceipt } | { claimed: false; receipt: DeliveryReceipt };

/** A receipt released between our INSERT and our read is claimed again, this many times at most. */
const CLAIM_ATTEMPTS = 3;

export async function claimDelivery(db: D1Database, wanted: DeliveryReceipt): Promise<ClaimResult> {
  for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
    const insert = await db
      .prepare(
        `INSERT INTO deliveries (delivery_id, run_id, channel_id, accepted_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (delivery_id) DO NOTHING`,
      )
      .bind(wanted.delivery_id, wanted.run_id, wanted.channel_id, wanted.accepted_at)
      .run();
    if (insert.meta.changes === 1) return { claimed: true, receipt: wanted };
    const receipt = await getDelivery(db, wanted.delivery_id);
    if (receipt) return { claimed: false, receipt };
    // Released between the INSERT and the read (the other claimer's start failed): try again.
  }
  throw new Error(`delivery ${wanted.delivery_id} was claimed and released ${CLAIM_ATTEMPTS} times while this trigger tried to claim it`);
}

/** Frees a delivery identity whose run never started; only the receipt naming `runId`. */
export async function releaseDelivery(db: D1Database, deliveryId: string, runId: string): Promise<void> {
  await db.prepare(`DELETE FROM deliveries WHERE delivery_id = ? AND run_id = ?`).bind(deliveryId, runId).run();
}

export async function getDelivery(db: D1Database, deliveryId: string): Promise<DeliveryReceipt | null> {
  return db
    .prepare(`SELECT delivery_id, run_id, channel_id, accepted_at FROM deliveries WHERE delivery_id = ?`)
    .bind(deliveryId)
    .first<DeliveryReceipt>();
}
