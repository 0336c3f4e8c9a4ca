// The reconcile form of one `outcome_unknown` row (contract section 8): what
// happened (nothing preselected: the person says which), and the evidence a
// person checked.
import { useState } from "preact/hooks";
import type { MutationOutcome } from "../../../client/types";
import { engine, errorText } from "../api";
import { ErrorLine } from "./error-line";

/** The contract's bound on evidence text. */
const EVIDENCE_MAX_CHARS = 4_000;

export function ReconcileForm({ row, onDone }: { row: MutationOutcome; onDone: () => void }) {
  const [outcome, setOutcome] = useState<"completed" | "not_executed">();
  const [evidence, setEvidence] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const id = `r-${row.mutation_id}`;
  return (
    <form
      class="reconcile"
      aria-label={`Reconcile ${row.mutation_id}`}
      onSubmit={async (e) => {
        e.preventDefault();
        if (outcome === undefined) {
          setError("Say what happened: it completed, or it did not happen.");
          return;
        }
        setBusy(true);
        setError(undefined);
        try {
          await engine.reconcile(row.mutation_id, { outcome, evidence });
          onDone();
        } catch (err) {
          setError(errorText(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <fieldset>
        <legend>What happened?</legend>
        <label>
          <input
            type="radio"
            name={`${id}-outcome`}
            value="completed"
            required
            checked={outcome === "completed"}
            onChange={() => setOutcome("completed")}
          />{" "}
          It completed
        </label>{" "}
        <label>
          <input
            type="radio"
            name={`${id}-outcome`}
            value="not_executed"
            required
            checked={outcome === "not_executed"}
            onChange={() => setOutcome("not_executed")}
          />{" "}
          It did not happen
        </label>
      </fieldset>
      <p>
        <label for={`${id}-evidence`}>Evidence (what you checked)</label>
        <textarea
          id={`${id}-evidence`}
          rows={2}
          required
          maxLength={EVIDENCE_MAX_CHARS}
          value={evidence}
          onInput={(e) => setEvidence(e.currentTarget.value)}
        />
      </p>
      <p class="actions">
        <button type="submit" disabled={busy}>
          Reconcile
        </button>
      </p>
      <ErrorLine message={error} />
    </form>
  );
}
