// One approval's decision form (contract section 6): approve, deny with an
// optional reason, and for a `confirm`-level tool the tool's name typed; a
// tool its server calls destructive is marked so (section 21); the votes so
// far and who may still decide under the tool's approval policy (section 19).
import { useState } from "preact/hooks";
import { engine, errorCode, errorText } from "../api";
import type { PendingApproval } from "../call-cards";
import { ErrorLine } from "./error-line";
import { JsonView } from "./json-view";
import { TimeLeft } from "./time-left";

/** Contract section 19: how many persons must approve, who did, and who may still decide. */
function Votes({ approval }: { approval: PendingApproval }) {
  const { required, votes, approvers } = approval;
  const who = approvers === null ? "anyone with the approver role" : approvers.join(", ");
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
      May decide: <span class="approvers">{who}</span>
      {required > 1 && votes.length > 0 ? " (not those who already voted)" : ""}.
    </p>
  );
}

export function ApprovalForm({
  runId,
  toolName,
  approval,
  now,
  onDone,
}: {
  runId: string;
  toolName: string;
  approval: PendingApproval;
  now: number;
  onDone?: () => void;
}) {
  const [confirmation, setConfirmation] = useState("");
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const id = `a-${approval.approval_id}`;
  const decide = async (decision: "approve" | "deny") => {
    setBusy(true);
    setError(undefined);
    try {
      const answer = await engine.decideApproval(runId, approval.approval_id, {
        decision,
        ...(decision === "approve" && approval.level === "confirm" ? { confirmation } : {}),
        ...(reason !== "" ? { reason } : {}),
      });
      setDone(
        answer.status === "pending"
          ? `your approve counted, ${answer.votes} of ${answer.required}; another person must approve`
          : answer.decision,
      );
      onDone?.();
    } catch (err) {
      const code = errorCode(err);
      setError(
        code === "confirmation_mismatch"
          ? `The confirmation does not match: type ${toolName} exactly.`
          : code === "expired"
            ? "Too late: this approval expired."
            : errorText(err),
      );
    } finally {
      setBusy(false);
    }
  };
  if (done) return <p class="decided">Decision sent: {done}.</p>;
  return (
    <form
      class="approval"
      aria-label={`Decide ${toolName}`}
      onSubmit={(e) => {
        e.preventDefault();
        void decide("approve");
      }}
    >
      {approval.destructive ? (
        <p class="destructive" data-destructive="true">
          <strong>Destructive</strong>: its server says this tool may destroy or overwrite data.
        </p>
      ) : null}
      <p>
        {approval.description} <TimeLeft expiresAt={approval.expires_at} now={now} />
      </p>
      <JsonView value={approval.arguments} label="Arguments, whole (nothing cut but secrets)" />
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
      <Votes approval={approval} />
      {approval.level === "confirm" ? (
        <p>
          <label for={`${id}-confirm`}>
            Type <code>{toolName}</code> to confirm
          </label>
          <input
            id={`${id}-confirm`}
            value={confirmation}
            autocomplete="off"
            spellcheck={false}
            onInput={(e) => setConfirmation(e.currentTarget.value)}
          />
        </p>
      ) : null}
      <p>
        <label for={`${id}-reason`}>Reason (optional)</label>
        <input id={`${id}-reason`} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </p>
      <p class="actions">
        <button type="submit" disabled={busy}>
          Approve
        </button>
        <button type="button" class="deny" disabled={busy} onClick={() => void decide("deny")}>
          Deny
        </button>
      </p>
      <ErrorLine message={error} />
    </form>
  );
}
