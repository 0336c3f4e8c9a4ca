// The mutation outcomes waiting for reconciliation (contract sections 8, 15),
// each with its reconcile form.
import type { MutationOutcome } from "../../../client/types";
import { ErrorLine } from "../components/error-line";
import { ReconcileForm } from "../components/reconcile-form";
import { href } from "../router";

export function OutcomesPage({ mutations, error, reload }: { mutations?: MutationOutcome[]; error?: string; reload: () => void }) {
  return (
    <section aria-labelledby="outcomes-title">
      <h2 id="outcomes-title">Outcomes waiting for reconciliation</h2>
      <ErrorLine message={error} />
      {mutations && mutations.length === 0 ? <p class="empty">No outcome is unknown.</p> : null}
      <ul class="inbox">
        {(mutations ?? []).map((row) => (
          <li key={row.mutation_id} class="card" data-tone="warn" data-mutation-id={row.mutation_id}>
            <h3>
              <code>{row.tool_name}</code> <span class="state tone-warn">outcome unknown</span>
            </h3>
            <p class="meta">
              <a href={href.run(row.run_id)}>{row.run_id}</a> · call {row.tool_call_id}
              {row.approved_by ? ` · approved by ${row.approved_by}` : ""}
              {row.error ? ` · ${row.error.code}: ${row.error.message}` : ""}
            </p>
            <p class="meta">
              digest <code>{row.arguments_digest}</code>
            </p>
            <ReconcileForm row={row} onDone={reload} />
          </li>
        ))}
      </ul>
    </section>
  );
}
