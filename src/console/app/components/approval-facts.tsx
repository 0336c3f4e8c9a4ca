// What an approval shows a person, the same while it waits and once it is
// decided (contract sections 16, 19, 21), on the run's card and in the inbox:
// the "Destructive" mark of a tool its server calls destructive, the
// description, the arguments whole, what was withheld as secrets, and the
// votes: how many persons must approve, every one who did, who may decide.
import type { PendingApproval } from "../call-cards";
import { JsonView } from "./json-view";
import { TimeLeft } from "./time-left";

/** Contract section 19: how many persons must approve, who did, and (while it waits) who may still decide. */
function Votes({ approval, decided }: { approval: PendingApproval; decided: boolean }) {
  const { required, votes, approvers, escalated_to: escalated } = approval;
  const inForce = approvers === null ? "anyone with the approver role" : approvers.join(", ");
  // Contract section 24: once escalated, the escalate_to patterns may decide beside the rule in force.
  const who = escalated === undefined || escalated.length === 0 ? inForce : `${inForce}, or (escalated) ${escalated.join(", ")}`;
  if (decided) {
    if (required <= 1 && votes.length === 0) return null;
    return (
      <p class="votes" data-votes={votes.length} data-required={required}>
        <strong>
          {votes.length} of {required}
        </strong>{" "}
        distinct persons approved{votes.length > 0 ? `: ${votes.map((v) => v.by).join(", ")}` : ""}.
      </p>
    );
  }
  return (
    <p class="votes" data-votes={votes.length} data-required={required}>
      {required > 1 ? (
        <>
          <strong>
            {votes.length} of {required}
          </strong>{" "}
          distinct persons approved{votes.length > 0 ? `: ${votes.map((v) => v.by).join(", ")}` : ""}.{" "}
        </>
      ) : null}
      {escalated !== undefined ? <strong data-escalated="true">Escalated. </strong> : null}
      May decide: <span class="approvers">{who}</span>
      {required > 1 && votes.length > 0 ? " (not those who already voted)" : ""}.
    </p>
  );
}

export function ApprovalFacts({
  approval,
  now,
  decided = false,
}: {
  approval: PendingApproval;
  /** While it waits: the time left is shown. */
  now?: number;
  decided?: boolean;
}) {
  return (
    <div class="approval-facts">
      {approval.destructive ? (
        <p class="destructive" data-destructive="true">
          <strong>Destructive</strong>: its server says this tool may destroy or overwrite data.
        </p>
      ) : null}
      <p>
        {approval.description} {now !== undefined && !decided ? <TimeLeft expiresAt={approval.expires_at} now={now} /> : null}
      </p>
      <JsonView
        value={approval.arguments}
        label={decided ? "Arguments decided on, whole (nothing cut but secrets)" : "Arguments, whole (nothing cut but secrets)"}
      />
      {approval.hidden && approval.hidden.length > 0 ? (
        <div class="hidden-values">
          <p>Withheld as secrets (the tool gets them):</p>
          <ul aria-label="Withheld values">
            {approval.hidden.map((h) => (
              <li key={h.path} data-hidden-path={h.path}>
                <code>{h.path === "" ? "(all arguments)" : h.path}</code> ({h.chars} characters)
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      <Votes approval={approval} decided={decided} />
    </div>
  );
}
