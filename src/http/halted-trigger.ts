// A trigger under a halt (contract section 23): a halt of `all`, or of the
// run's principal (its requester, its on_behalf_of, or their person), refuses
// the trigger with 409 {"error":"halted","halt_id"} (the oldest such halt).
// The active halts are read from D1 within STORAGE_WAIT_MS, else 503
// storage_timeout; nothing is claimed or started either way.
import { readActiveHalts } from "../outcomes/halts";
import { coveringHalt, type HaltSubject } from "../policy/halt-scope";
import { apiError } from "../base/api-error";

/** The oldest active halt covering a trigger by `subject`, or null; "unavailable" when D1 did not answer in time. */
async function haltOfTrigger(
  db: D1Database,
  waitMs: number,
  subject: Omit<HaltSubject, "call">,
): Promise<{ halt_id: string } | null | "unavailable"> {
  const halts = await readActiveHalts(db, waitMs);
  if (halts === "unavailable") return "unavailable";
  return coveringHalt(halts, subject);
}

/** Throws the 409 (or the 503) for a trigger a halt covers. */
export async function refuseIfHalted(db: D1Database, waitMs: number, subject: Omit<HaltSubject, "call">): Promise<void> {
  const halt = await haltOfTrigger(db, waitMs, subject);
  if (halt === "unavailable") {
    throw apiError(503, {
      error: "storage_timeout",
      message: `Storage did not answer within ${waitMs} ms while checking for halts; nothing was started. Try again shortly.`,
      retry_after_seconds: 1,
    });
  }
  if (halt !== null) {
    throw apiError(409, {
      error: "halted",
      halt_id: halt.halt_id,
      message: `Runs in this scope are halted (${halt.halt_id}); nothing was started. An admin releases the halt (DELETE /api/halts/${halt.halt_id}).`,
    });
  }
}
