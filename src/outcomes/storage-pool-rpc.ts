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

/** GET /api/storage-pool, keys in the contract's order (section 9): declared once, in the client's wire types. */
export type { StoragePoolStats } from "../client/types";

/** The global pool's stub: every caller (Worker or Run object) shares this one instance. */
export function globalStoragePool(ns: DurableObjectNamespace<StoragePool>): DurableObjectStub<StoragePool> {
  return ns.get(ns.idFromName(STORAGE_POOL_NAME));
}
