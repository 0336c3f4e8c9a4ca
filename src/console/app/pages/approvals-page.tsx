// The approvals waiting across runs (contract sections 15, 16), polled, each
// with its decision form.
import type { ComponentChildren } from "preact";
import type { ApprovalListItem } from "../../../client/types";
import { secondsLeft } from "../call-cards";
import { ApprovalForm } from "../components/approval-form";
import { AskedBy } from "../components/asked-by";
import { ErrorLine } from "../components/error-line";
import { RunLink } from "../components/run-link";
import { useActedOn } from "../hooks";

const approvalKey = (a: { approval_id: string }) => a.approval_id;

/** The pending approvals with their forms; a decided one stays (with its confirmation) until the page is left. */
export function ApprovalItems({
  approvals,
  now,
  reload,
  empty,
  viewer,
}: {
  approvals: ApprovalListItem[];
  now: number;
  reload: () => void;
  /** Who is signed in: a decided card names them among those who approved. */
  viewer: string | undefined;
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
          <div class="request">
            <AskedBy asker={{ by: a.requested_by ?? a.user_id, on_behalf_of: a.on_behalf_of }} request={a.request} />
          </div>
          <p class="meta">
            run <RunLink runId={a.run_id} /> · channel {a.channel_id} · call {a.tool_call_id}
          </p>
          <ApprovalForm
            runId={a.run_id}
            toolName={a.tool_name}
            approval={{ ...a, required: a.required ?? 1, approvers: a.approvers ?? null, votes: a.approvals ?? [] }}
            now={now}
            followUp={{ toolCallId: a.tool_call_id, viewer }}
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
  viewer,
}: {
  approvals?: ApprovalListItem[];
  error?: string;
  now: number;
  reload: () => void;
  viewer: string | undefined;
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
          viewer={viewer}
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
