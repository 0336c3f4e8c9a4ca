// Starting a run, shared by every entry point (POST /api/trigger and the
// Slack app): claim the delivery identity in D1, then start the run in its
// RunObject. Nothing is claimed for an input that failed validation (the
// callers validate first), and a claim whose run failed to start is released,
// so a receipt never names a run that does not exist and a retry with the same
// identity works (contract section 17). A repeated delivery identity gets the
// first run's receipt and only finishes a start the first request may not have
// reached (the receipt keeps no copy of the input: the duplicate brings its own).
import type { RunStub } from "../agent/run-rpc";
import type { StartRunInput } from "../agent/run-record";
import type { Env } from "../config/env";
import type { ActionOrigin } from "../wire/run-protocol";
import { claimDelivery, type DeliveryNamespace, principalNamespace, releaseDelivery, slackNamespace } from "./deliveries";

export interface StartedRun {
  /** The run that owns this delivery: the new one, or the first one for a duplicate. */
  input: StartRunInput;
  duplicate: boolean;
}

/**
 * Claims `input.delivery_id` (when set) and starts the run; never waits for the run itself.
 * `origin`: where the trigger came from, for its run.trigger audit entry (contract section 25).
 */
export async function startRun(env: Env, input: StartRunInput, origin?: ActionOrigin): Promise<StartedRun> {
  let started = input;
  let duplicate = false;
  const namespace = deliveryNamespaceOf(input);
  if (input.delivery_id !== null) {
    const claim = await claimDelivery(env.DB, namespace, {
      delivery_id: input.delivery_id,
      run_id: input.run_id,
      channel_id: input.channel_id,
      accepted_at: new Date().toISOString(),
    });
    if (!claim.claimed) {
      duplicate = true;
      started = { ...input, run_id: claim.receipt.run_id, channel_id: claim.receipt.channel_id };
    }
  }
  const stub = runStubFor(env, started.run_id);
  try {
    // Idempotent in the object: for a duplicate this only finishes a start that
    // the first request may not have reached (it died after the receipt).
    await stub.start(started, origin);
  } catch (err) {
    // A receipt must never name a run that does not exist: free the identity, then fail.
    if (started.delivery_id !== null && !(await runExists(stub)))
      await releaseDelivery(env.DB, namespace, started.delivery_id, started.run_id);
    throw err;
  }
  return { input: started, duplicate };
}

/** Contract section 3: a Slack event's id is Slack's; any other is the requesting principal's own. */
export function deliveryNamespaceOf(input: Pick<StartRunInput, "source" | "requested_by">): DeliveryNamespace {
  // A start without requested_by comes from a record older than principals: the API's root then.
  return input.source === "slack" ? slackNamespace() : principalNamespace(input.requested_by ?? "token:root");
}

/** The run's stub, typed by its RPC surface (src/agent/run-rpc.ts): RunObject must fit it, or this fails to build. */
export function runStubFor(env: Env, runId: string): RunStub {
  return env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(runId));
}

/** Whether the run's object holds a run; a broken object counts as none (the identity is freed). */
async function runExists(stub: RunStub): Promise<boolean> {
  try {
    return (await stub.summary()) !== null;
  } catch {
    return false;
  }
}
