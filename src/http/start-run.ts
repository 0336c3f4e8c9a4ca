// Starting a run, shared by every entry point (POST /api/trigger and the
// Slack app): claim the delivery identity in D1, then start the run in its
// RunObject. A repeated delivery identity gets the first run's input back and
// only finishes a start the first request may not have reached.
import type { StartRunInput } from "../agent/run-record";
import type { Env } from "../config/env";
import { claimDelivery } from "./deliveries";

export interface StartedRun {
  /** The run that owns this delivery: the new one, or the first one for a duplicate. */
  input: StartRunInput;
  duplicate: boolean;
}

/** Claims `input.delivery_id` (when set) and starts the run; never waits for the run itself. */
export async function startRun(env: Env, input: StartRunInput): Promise<StartedRun> {
  let started = input;
  let duplicate = false;
  if (input.delivery_id !== null) {
    const claim = await claimDelivery(env.DB, input.delivery_id, input, new Date().toISOString());
    if (!claim.claimed) {
      duplicate = true;
      started = claim.start_input;
    }
  }
  // Idempotent in the object: for a duplicate this only finishes a start that
  // the first request may not have reached (it died after the receipt).
  await runStubFor(env, started.run_id).start(started);
  return { input: started, duplicate };
}

export function runStubFor(env: Env, runId: string) {
  return env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(runId));
}
