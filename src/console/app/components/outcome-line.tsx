// A mutation's durable outcome on its card (contract section 8): the row's
// state in its own words, who approved it, and once reconciled, who
// reconciled it, what they found and on what evidence.
import type { MutationOutcome } from "../../../client/types";
import { href } from "../router";
import { outcomeVerdict } from "../verdicts";

export function OutcomeLine({ outcome }: { outcome: MutationOutcome | undefined }) {
  if (!outcome) return <p class="outcome">Durable outcome: reading…</p>;
  const verdict = outcomeVerdict(outcome);
  const r = outcome.reconciliation;
  return (
    <div class="outcome" data-outcome={outcome.state}>
      <p>
        Durable outcome: <strong class={`state tone-${verdict.tone}`}>{verdict.words}</strong>
        {outcome.approved_by ? ` · approved by ${outcome.approved_by}` : ""}
        {outcome.state === "outcome_unknown" ? (
          <>
            {" "}
            · the call was sent and no answer came back, so nobody knows whether it happened: check the system it acts on, then{" "}
            <a href={href.outcomes}>reconcile it</a>
          </>
        ) : null}
      </p>
      {r ? (
        <p class="reconciliation">
          Reconciled by <strong>{r.reconciled_by}</strong> at <time dateTime={r.at}>{new Date(r.at).toLocaleString()}</time>:{" "}
          {r.outcome === "completed" ? "it completed" : "it did not happen"}. Evidence: <q class="evidence">{r.evidence}</q>
        </p>
      ) : null}
    </div>
  );
}
