// The bounded, slot-holding wrapper every mutation-outcome storage call goes
// through (contract sections 8 and 9):
//
//   1. take a slot of the storage pool; none free (or the pool unreachable)
//      → "unavailable", and `work` never runs (fail closed);
//   2. run `work` and wait for it at most `waitMs`, counted from the call
//      (taking the slot included), so a stuck pool or a stuck write never
//      stalls the caller beyond its bound;
//   3. past the bound → "timeout" at once, with `late`: the still-running
//      work, which settles only after the slot was given back;
//   4. the slot is released when `work` finally settles, whether or not
//      anyone is still waiting ("late cleanup").
//
// Storage work never dispatches anything: `work` is a D1 call, nothing else.
// No Cloudflare imports: the pool is any object with acquire/release (the
// StoragePool stub in production and in-runtime tests).

/** What the guard needs of the pool; a DurableObjectStub<StoragePool> fits. */
export interface SlotPool {
  acquire(holder: string): Promise<{ ok: true; lease_id: string } | { ok: false }>;
  release(leaseId: string): Promise<unknown>;
}

export type GuardedResult<T> =
  | { status: "ok"; value: T }
  /** No slot free (fail closed) or the pool could not be reached in time; `work` did not run. */
  | { status: "unavailable" }
  /** `work` is still running; `late` settles like it, after its slot was released. */
  | { status: "timeout"; late: Promise<T> };

export interface GuardOptions {
  /**
   * Receives every promise that outlives the call (the late work and its slot
   * release, a slot acquired after the caller gave up). In a Worker handler
   * pass `ctx.waitUntil.bind(ctx)` so cleanup is not cut off when the
   * response is sent; a Durable Object may leave it out.
   */
  waitUntil?: (promise: Promise<unknown>) => void;
}

/**
 * Runs `work` holding a storage-pool slot, bounded by `waitMs`. An error
 * thrown by `work` within the bound is rethrown (after the slot is released);
 * one thrown after the bound rejects `late`.
 */
export async function guardedStorage<T>(
  pool: SlotPool,
  waitMs: number,
  holder: string,
  work: () => Promise<T>,
  options: GuardOptions = {},
): Promise<GuardedResult<T>> {
  const keepAlive = (p: Promise<unknown>) => {
    // Handled here whether or not anyone keeps it alive: nothing outliving the call may reject unhandled.
    const quiet = p.catch(() => undefined);
    options.waitUntil?.(quiet);
  };
  const deadline = boundary(waitMs);
  try {
    // ---- 1. a slot, within the bound -------------------------------------
    const acquiring = Promise.resolve().then(() => pool.acquire(holder));
    const acquired = await Promise.race([
      acquiring.then(
        (r) => ({ r }),
        () => ({ r: { ok: false as const } }),
      ),
      deadline.passed,
    ]);
    if (acquired === TIMED_OUT) {
      // The pool did not answer in time: nothing runs. A slot granted after we
      // gave up is handed straight back.
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
          console.error(`storage slot ${leaseId} (${holder}) was not released`, err);
        });
    const running = Promise.resolve().then(work);
    // Settles like `work`, once the slot has been given back.
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
    // Nobody may be listening any more; an error of late work must not be unhandled.
    settled.catch(() => undefined);

    const first = await Promise.race([
      running.then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
      deadline.passed,
    ]);
    if (first === TIMED_OUT) {
      keepAlive(settled);
      return { status: "timeout", late: settled };
    }
    // Within the bound: wait for the release too (so the slot is free when the
    // caller goes on), but never past the bound.
    const released = await Promise.race([
      settled.then(
        () => true,
        () => true,
      ),
      deadline.passed,
    ]);
    if (released === TIMED_OUT) keepAlive(settled);
    if (!first.ok) throw first.error;
    return { status: "ok", value: first.value };
  } finally {
    deadline.clear();
  }
}

const TIMED_OUT = Symbol("timed out");

function boundary(waitMs: number): { passed: Promise<typeof TIMED_OUT>; clear(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const passed = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), waitMs);
  });
  return { passed, clear: () => (timer === null ? undefined : clearTimeout(timer)) };
}
