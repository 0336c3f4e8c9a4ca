// Delivery receipts in D1. Claiming a delivery identity is one INSERT that
// does nothing on conflict: D1 serialises writes, so of two identical
// triggers arriving together exactly one claims it and the other reads the
// winner's receipt.
import type { StartRunInput } from "../agent/run-record";

export interface DeliveryReceipt {
  delivery_id: string;
  run_id: string;
  channel_id: string;
  accepted_at: string;
}

export type ClaimResult =
  | { claimed: true; receipt: DeliveryReceipt }
  | { claimed: false; receipt: DeliveryReceipt; start_input: StartRunInput };

export async function claimDelivery(db: D1Database, deliveryId: string, input: StartRunInput, acceptedAt: string): Promise<ClaimResult> {
  const insert = await db
    .prepare(
      `INSERT INTO deliveries (delivery_id, run_id, channel_id, accepted_at, start_input) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (delivery_id) DO NOTHING`,
    )
    .bind(deliveryId, input.run_id, input.channel_id, acceptedAt, JSON.stringify(input))
    .run();
  if (insert.meta.changes === 1) {
    return {
      claimed: true,
      receipt: { delivery_id: deliveryId, run_id: input.run_id, channel_id: input.channel_id, accepted_at: acceptedAt },
    };
  }
  const row = await db
    .prepare(`SELECT delivery_id, run_id, channel_id, accepted_at, start_input FROM deliveries WHERE delivery_id = ?`)
    .bind(deliveryId)
    .first<DeliveryReceipt & { start_input: string }>();
  if (!row) throw new Error(`delivery ${deliveryId} conflicted but has no row`);
  const { start_input, ...receipt } = row;
  return { claimed: false, receipt, start_input: JSON.parse(start_input) as StartRunInput };
}

export async function getDelivery(db: D1Database, deliveryId: string): Promise<DeliveryReceipt | null> {
  return db
    .prepare(`SELECT delivery_id, run_id, channel_id, accepted_at FROM deliveries WHERE delivery_id = ?`)
    .bind(deliveryId)
    .first<DeliveryReceipt>();
}
