// What the rest of the engine knows of the StoragePool Durable Object
// (contract section 9): its capacity, the answers of its RPC methods and how
// to reach the one global instance. The class itself lives in
// durable-objects/storage-pool.ts and implements StoragePoolRpc; src/ reaches
// it only through this module, which names no class above it.
import type { StoragePoolStats } from "../client/types";

/** Contract section 9: one global pool of 16 slots. */
export const POOL_CAPACITY_SLOTS = 16;
/** The name of the one global instance (contract section 9: "one global pool"). */
export const STORAGE_POOL_NAME = "global";

export type AcquireResult = { ok: true; lease_id: string } | { ok: false };

/** GET /api/storage-pool, keys in the contract's order (section 9): declared once, in the client's wire types. */
export type { StoragePoolStats };

/** The pool's RPC methods, as durable-objects/storage-pool.ts implements them. */
export interface StoragePoolRpc {
  /** A slot for `holder`, waiting up to `waitMs` for one to free (0: answer at once). */
  acquire(holder: string, waitMs?: number): AcquireResult | Promise<AcquireResult>;
  release(leaseId: string): { released: boolean };
  stats(): StoragePoolStats;
}

/** The global pool's stub: every caller (Worker or Run object) shares this one instance. */
export function globalStoragePool<Pool extends Rpc.DurableObjectBranded & StoragePoolRpc>(
  ns: DurableObjectNamespace<Pool>,
): DurableObjectStub<Pool> {
  return ns.get(ns.idFromName(STORAGE_POOL_NAME));
}
