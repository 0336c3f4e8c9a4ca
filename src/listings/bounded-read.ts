// The bound on a listing's D1 read (contract section 9): listings are not
// storage workers of the execution path, so they take no storage-pool slot
// (a flood of reads can never refuse a mutation), but each waits for D1 at
// most STORAGE_WAIT_MS. Past it the caller answers 503 storage_timeout.

export type BoundedRead<T> = { status: "ok"; value: T } | { status: "timeout" };

export async function boundedRead<T>(waitMs: number, work: () => Promise<T>): Promise<BoundedRead<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<{ status: "timeout" }>((resolve) => {
    timer = setTimeout(() => resolve({ status: "timeout" }), waitMs);
  });
  const reading = Promise.resolve().then(work);
  // A read finishing (or failing) after the bound has nobody listening; it must not reject unhandled.
  reading.catch(() => undefined);
  try {
    return await Promise.race([reading.then((value) => ({ status: "ok" as const, value })), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
