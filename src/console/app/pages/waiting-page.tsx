// The landing page: what waits for a person, across runs (contract sections
// 15, 16): approvals to decide and questions to answer, with their forms, and
// outcomes to reconcile.
import { ErrorLine } from "../components/error-line";
import { RunLink } from "../components/run-link";
import { href } from "../router";
import type { Waiting } from "../waiting";
import { ApprovalItems } from "./approvals-page";
import { QuestionItems } from "./questions-page";

export function WaitingPage({ waiting, now, who }: { waiting: Waiting; now: number; who?: string }) {
  return (
    <section aria-labelledby="waiting-title">
      <h2 id="waiting-title">Waiting for {who ?? "you"}</h2>
      <h3 id="waiting-approvals">Approvals to decide</h3>
      <ErrorLine message={waiting.errors.approvals} />
      {waiting.approvals ? (
        <ApprovalItems
          approvals={waiting.approvals}
          now={now}
          reload={waiting.reload.approvals}
          viewer={who}
          empty={<p class="empty">No approval waits.</p>}
        />
      ) : null}
      <h3 id="waiting-questions">Questions to answer</h3>
      <ErrorLine message={waiting.errors.inputs} />
      {waiting.inputs ? (
        <QuestionItems inputs={waiting.inputs} now={now} reload={waiting.reload.inputs} empty={<p class="empty">No question waits.</p>} />
      ) : null}
      <h3 id="waiting-outcomes">Outcomes to reconcile</h3>
      <ErrorLine message={waiting.errors.unknown} />
      {waiting.unknown && waiting.unknown.length === 0 ? <p class="empty">No outcome is unknown.</p> : null}
      {waiting.unknown && waiting.unknown.length > 0 ? (
        <ul class="inbox">
          {waiting.unknown.map((row) => (
            <li key={row.mutation_id} class="card" data-tone="warn" data-mutation-id={row.mutation_id}>
              <code>{row.tool_name}</code> in <RunLink runId={row.run_id} />: the outcome is unknown · <a href={href.outcomes}>reconcile</a>
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
