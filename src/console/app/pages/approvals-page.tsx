// The approvals waiting across runs (contract sections 15, 16), polled, each
// with its decision form.
import type { ComponentChildren } from "preact";
import type { ApprovalListItem } from "../../../client/types";
import { secondsLeft } from "../call-cards";
import { ApprovalForm } from "../components/approval-form";
import { ErrorLine } from "../components/error-line";
import { useActedOn } from "../hooks";
import { href } from "../router";

const approvalKey = (a: { approval_id: string }) => a.approval_id;

/** The pending approvals with their forms; a decided one stays (with its confirmation) until the page is left. */
export function ApprovalItems({
  approvals,
  now,
  reload,
  empty,
}: {
  approvals: ApprovalListItem[];
  now: number;
  reload: () => void;
  /** Shown when nothing waits. */
  empty: ComponentChildren;
}) {
  const pending = approvals.filter((a) => secondsLeft(a.expires_at, now) > 0);
  const { shown, actedOn } = useActedOn(pending, approvalKey);
  if (shown.length === 0) return <>{empty}</>;
  return (
    <ul class="inbox">
      {shown.map((a) => (
        <li key={a.approval_id} class="card" data-approval-id={a.approval_id}>
          <h3>
            <code>{a.tool_name}</code> <span class="level">{a.level === "confirm" ? "confirm by typing the tool name" : "approve"}</span>
          </h3>
          <p class="meta">
            <a href={href.run(a.run_id)}>{a.run_id}</a> · channel {a.channel_id} · call {a.tool_call_id}
          </p>
          <ApprovalForm
            runId={a.run_id}
            toolName={a.tool_name}
            approval={{ ...a, required: a.required ?? 1, approvers: a.approvers ?? null, votes: a.approvals ?? [] }}
            now={now}
            onDone={() => {
              actedOn(a);
              reload();
            }}
          />
        </li>
      ))}
    </ul>
  );
}

export function ApprovalsPage({
  approvals,
  error,
  now,
  reload,
}: {
  approvals?: ApprovalListItem[];
  error?: string;
  now: number;
  reload: () => void;
}) {
  return (
    <section aria-labelledby="approvals-title">
      <h2 id="approvals-title">Approvals waiting</h2>
      <ErrorLine message={error} />
      {approvals ? (
        <ApprovalItems
          approvals={approvals}
          now={now}
          reload={reload}
          empty={
            <p class="empty">
              Nothing waits for approval (the index may lag a moment behind a new request; a run's own page shows it at once).
            </p>
          }
        />
      ) : null}
    </section>
  );
}
