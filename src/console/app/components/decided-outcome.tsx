// What became of a call decided from the inbox (contract sections 8, 16): the
// decision and every person who approved it, then whether the call ran, from
// its durable outcome (read again while it settles), so a decided card says
// more than "Decision sent".
import { useEffect, useState } from "preact/hooks";
import type { MutationOutcome } from "../../../client/types";
import { engine } from "../api";
import { OutcomeLine } from "./outcome-line";

/** A row still settling (or not written yet) is read again this soon. */
const FOLLOW_RETRY_MS = 1_500;
/** Reads before the card gives up following and points at the run's page. */
const FOLLOW_READS = 40;

type Follow = { kind: "waiting" } | { kind: "row"; row: MutationOutcome } | { kind: "no_row"; runEnded: boolean };

function useCallOutcome(runId: string, toolCallId: string, follow: boolean): Follow {
  const [state, setState] = useState<Follow>({ kind: "waiting" });
  useEffect(() => {
    if (!follow) return;
    const stop = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let reads = 0;
    const load = async () => {
      reads++;
      let again = reads < FOLLOW_READS;
      try {
        const { mutations } = await engine.runMutations(runId, { signal: stop.signal });
        const row = mutations.find((m) => m.tool_call_id === toolCallId);
        if (row) {
          setState({ kind: "row", row });
          again &&= row.state === "unresolved";
        } else {
          const summary = await engine.summary(runId, { signal: stop.signal });
          if (summary.status !== "running") {
            setState({ kind: "no_row", runEnded: true });
            again = false;
          } else if (!again) setState({ kind: "no_row", runEnded: false });
        }
      } catch {
        if (stop.signal.aborted) return;
      }
      if (again && !stop.signal.aborted) timer = setTimeout(load, FOLLOW_RETRY_MS);
    };
    void load();
    return () => {
      stop.abort();
      clearTimeout(timer);
    };
  }, [runId, toolCallId, follow]);
  return state;
}

export function DecidedOutcome({
  runId,
  toolCallId,
  decision,
  voters,
}: {
  runId: string;
  toolCallId: string;
  /** `pending`: an approve was counted, others must still approve. */
  decision: "approved" | "denied" | "pending";
  voters: string[];
}) {
  const follow = useCallOutcome(runId, toolCallId, decision === "approved");
  const by = voters.length > 0 ? ` by ${voters.join(", ")}` : "";
  return (
    <div class="decided" data-decision={decision}>
      <p>
        Decision sent:{" "}
        {decision === "pending"
          ? `your approve counted (approved so far${voters.length > 0 ? `: ${voters.join(", ")}` : ""}); another person must approve`
          : `${decision}${by}`}
        .
      </p>
      {decision === "denied" ? (
        <p class="ran" data-ran="no">
          It did not run: denied.
        </p>
      ) : null}
      {decision === "approved" ? (
        follow.kind === "row" ? (
          <OutcomeLine outcome={follow.row} />
        ) : follow.kind === "no_row" ? (
          <p class="ran" data-ran="unknown">
            {follow.runEnded ? "It left no durable record (not a mutation): " : "Not run yet: "}the run's page shows what it did.
          </p>
        ) : (
          <p class="ran" data-ran="waiting">
            Approved: waiting for it to run…
          </p>
        )
      ) : null}
    </div>
  );
}
