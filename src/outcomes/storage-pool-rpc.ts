// What the rest of the engine knows of the StoragePool Durable Object
// (contract section 9): its capacity, the answers of its RPC methods and how
// to reach the one global instance. The class itself lives in
// durable-objects/storage-pool.ts; src/ reaches it only through this module.
import type { StoragePool } from "../../durable-objects/storage-pool";

/** Contract section 9: one global pool of 16 slots. */
export const POOL_CAPACITY_SLOTS = 16;
/** The name of the one global instance (contract section 9: "one global pool"). */
export const STORAGE_POOL_NAME = "global";

export type AcquireResult = { ok: true; lease_id: string } | { ok: false };

/** GET /api/storage-pool, keys in the contract's order (section 9). */
export interface StoragePoolStats {
  capacity: number;
  in_use: number;
  /** Callers in line for a slot right now. */
  waiting: number;
  acquired_total: number;
  /** Acquires that had to wait in line (whether or not they got a slot). */
  waited_total: number;
  /** Acquires refused: the line was full, or the caller's time passed before a slot freed. */
  rejected_total: number;
  reclaimed_total: number;
}

/** The global pool's stub: every caller (Worker or Run object) shares this one instance. */
export function globalStoragePool(ns: DurableObjectNamespace<StoragePool>): DurableObjectStub<StoragePool> {
  return ns.get(ns.idFromName(STORAGE_POOL_NAME));
}
