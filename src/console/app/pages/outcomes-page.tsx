// The mutation outcomes waiting for reconciliation (contract sections 8, 15),
// each with its reconcile form for a person holding the `reconciler` role
// (section 18); anyone else reads them with a clear refusal instead of a
// form the API would refuse.
import type { MutationOutcome } from "../../../client/types";
import { ErrorLine } from "../components/error-line";
import { ReconcileForm } from "../components/reconcile-form";
import { RunLink } from "../components/run-link";
import { holds } from "../roles";
import type { Viewer } from "./audit-page";

export function OutcomesPage({
  mutations,
  error,
  reload,
  viewer,
}: {
  mutations?: MutationOutcome[];
  error?: string;
  reload: () => void;
  viewer?: Viewer;
}) {
  const may = viewer !== undefined && holds(viewer.roles, "reconciler");
  return (
    <section aria-labelledby="outcomes-title">
      <h2 id="outcomes-title">Outcomes waiting for reconciliation</h2>
      <ErrorLine message={error} />
      {viewer !== undefined && !may ? (
        <p class="error" role="alert" data-refusal="reconciler">
          Reconciling is for the reconciler role: {viewer.name} lacks it. Ask an admin for it, or sign in with a token that has it.
        </p>
      ) : null}
      {mutations && mutations.length === 0 ? <p class="empty">No outcome is unknown.</p> : null}
      <ul class="inbox">
        {(mutations ?? []).map((row) => (
          <li key={row.mutation_id} class="card" data-tone="warn" data-mutation-id={row.mutation_id}>
            <h3>
              <code>{row.tool_name}</code> <span class="state tone-warn">outcome unknown</span>
            </h3>
            <p class="meta">
              run <RunLink runId={row.run_id} /> · call {row.tool_call_id}
              {row.approved_by ? ` · approved by ${row.approved_by}` : ""}
              {row.error ? ` · ${row.error.code}: ${row.error.message}` : ""}
            </p>
            <p class="meta">
              digest <code>{row.arguments_digest}</code>
            </p>
            {may ? <ReconcileForm row={row} onDone={reload} /> : null}
          </li>
        ))}
      </ul>
    </section>
  );
}
