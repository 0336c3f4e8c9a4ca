// The bounded wrappers every mutation-outcome storage call goes through
// (contract sections 8 and 9).
//
// guardedStorage: the execution path and reconcile, holding a pool slot.
//   1. ask the pool for a slot, passing the time left of the bound (a
//      duration: the pool cannot see a caller that went away, only how long
//      it said it would wait). When all slots are held the pool keeps the
//      caller in its first-come line for at most that long. No slot within
//      the bound (line full, time passed, pool unreachable) → "unavailable",
//      and `work` never runs (fail closed). A slot granted after the caller
//      gave up is handed straight back.
//   2. run `work` and wait for it until the SAME bound, counted from the call:
//      `waitMs` covers the wait in line and the storage call together, so a
//      full pool or a stuck write never stalls the caller beyond its bound;
//   3. past the bound → "timeout" at once, with `late`: the still-running
//      work, which settles only after the slot was given back;
//   4. the slot is released when `work` settles, whether or not anyone still
//      waits ("late cleanup"). The release is off the caller's path: the
//      caller goes on as soon as `work` answered, and the release is always
//      sent, kept alive through `waitUntil` when one is given.
//
// boundedStorage: the read routes, which take no slot (section 9): only the
// bound of step 2.
//
// Storage work never dispatches anything: `work` is a D1 call, nothing else.
// No Cloudflare imports: the pool is any object with acquire/release (the
// StoragePool stub in production and in-runtime tests).
import { logger } from "../operate/logger";
import { DEADLINE_PASSED, deadline } from "../schedule/deadline";

/** What the guard needs of the pool; a DurableObjectStub<StoragePool> fits. */
export interface SlotPool {
  /** `waitMs`: how long the caller may wait in line for a slot (the time left of its bound). */
  acquire(holder: string, waitMs: number): Promise<{ ok: true; lease_id: string } | { ok: false }>;
  release(leaseId: string): Promise<unknown>;
}

export type GuardedResult<T> =
  | { status: "ok"; value: T }
  /** No slot within the bound (line full, time passed) or the pool could not be reached; `work` did not run. */
  | { status: "unavailable" }
  /** `work` is still running; `late` settles like it, after its slot was released. */
  | { status: "timeout"; late: Promise<T> };

export type BoundedResult<T> = { status: "ok"; value: T } | { status: "timeout"; late: Promise<T> };

export interface GuardOptions {
  /**
   * Receives every promise that outlives the call (the slot release, late
   * work, a slot granted after the caller gave up). In a Worker handler pass
   * `ctx.waitUntil.bind(ctx)` so cleanup is not cut off when the response is
   * sent; a Durable Object may leave it out (its promises run on).
   */
  waitUntil?: (promise: Promise<unknown>) => void;
}

/**
 * Runs `work` holding a storage-pool slot, the wait for the slot and the work
 * together bounded by `waitMs`. An error thrown by `work` within the bound is
 * rethrown; one thrown after the bound rejects `late`.
 */
export async function guardedStorage<T>(
  pool: SlotPool,
  waitMs: number,
  holder: string,
  work: () => Promise<T>,
  options: GuardOptions = {},
): Promise<GuardedResult<T>> {
  const keepAlive = keeper(options);
  const bound = deadline(waitMs);
  try {
    // ---- 1. a slot, within the bound (waiting in line included) ---------------
    const acquiring = Promise.resolve().then(() => pool.acquire(holder, bound.remainingMs()));
    const acquired = await Promise.race([
      acquiring.then(
        (r) => ({ r }),
        () => ({ r: { ok: false as const } }),
      ),
      bound.passed,
    ]);
    if (acquired === DEADLINE_PASSED) {
      // No slot in time: nothing runs. A slot granted after we gave up is handed straight back.
      keepAlive(acquiring.then((r) => (r.ok ? pool.release(r.lease_id) : undefined)));
      return { status: "unavailable" };
    }
    if (!acquired.r.ok) return { status: "unavailable" };
    const leaseId = acquired.r.lease_id;

    // ---- 2. the work, holding the slot until it settles --------------------
    const releaseSlot = () =>
      Promise.resolve()
        .then(() => pool.release(leaseId))
        .catch((err: unknown) => {
          // The lease expires and the pool's alarm reclaims it; nothing else to do.
          logger.error("storage pool: a slot was not released (its lease expires and is reclaimed)", {
            lease_id: leaseId,
            holder,
            error: String(err),
          });
        });
    const running = Promise.resolve().then(work);
    // Settles like `work`, once the slot has been given back (late cleanup).
    const settled = running.then(
      async (value) => {
        await releaseSlot();
        return value;
      },
      async (err: unknown) => {
        await releaseSlot();
        throw err;
      },
    );
    // The release is always sent, but nobody waits for it on the caller's path.
    keepAlive(settled);

    const first = await Promise.race([settle(running), bound.passed]);
    if (first === DEADLINE_PASSED) return { status: "timeout", late: settled };
    if (!first.ok) throw first.error;
    return { status: "ok", value: first.value };
  } finally {
    bound.clear();
  }
}

/**
 * Runs `work` (a D1 read) without a slot, bounded by `waitMs`: the read
 * routes of section 9. An error within the bound is rethrown; past the bound
 * → "timeout", with the still-running work as `late`.
 */
export async function boundedStorage<T>(waitMs: number, work: () => Promise<T>, options: GuardOptions = {}): Promise<BoundedResult<T>> {
  const bound = deadline(waitMs);
  try {
    const running = Promise.resolve().then(work);
    const first = await Promise.race([settle(running), bound.passed]);
    if (first === DEADLINE_PASSED) {
      keeper(options)(running);
      return { status: "timeout", late: running };
    }
    if (!first.ok) throw first.error;
    return { status: "ok", value: first.value };
  } finally {
    bound.clear();
  }
}

/** Handles a promise that outlives the call, whether or not anyone keeps it alive: nothing may reject unhandled. */
function keeper(options: GuardOptions): (p: Promise<unknown>) => void {
  return (p) => {
    const quiet = p.catch(() => undefined);
    options.waitUntil?.(quiet);
  };
}

function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}
