// One approval's decision form (contract section 6): approve, deny with an
// optional reason, and for a `confirm`-level tool the tool's name typed; a
// tool its server calls destructive is marked so (section 21); the votes so
// far and who may still decide under the tool's approval policy (section 19).
import { useState } from "preact/hooks";
import { engine, errorCode, errorText } from "../api";
import type { PendingApproval } from "../call-cards";
import { ApprovalFacts } from "./approval-facts";
import { DecidedOutcome } from "./decided-outcome";
import { ErrorLine } from "./error-line";

export function ApprovalForm({
  runId,
  toolName,
  approval,
  now,
  onDone,
  followUp,
}: {
  runId: string;
  toolName: string;
  approval: PendingApproval;
  now: number;
  onDone?: () => void;
  /**
   * In an inbox (where no run's card takes over once decided): the call and
   * who is deciding, so the decided card keeps the arguments decided on, names
   * every person who approved, and follows whether the call ran.
   */
  followUp?: { toolCallId: string; viewer: string | undefined };
}) {
  const [confirmation, setConfirmation] = useState("");
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const [decided, setDecided] = useState<{ decision: "approved" | "denied" | "pending"; voters: string[] }>();
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
      const me = followUp?.viewer;
      const earlier = approval.votes.map((v) => v.by);
      // Who approved: every earlier vote and this one; a deny names its decider alone.
      const voters =
        decision === "deny" ? (me !== undefined ? [me] : []) : [...earlier, ...(me !== undefined && !earlier.includes(me) ? [me] : [])];
      setDecided({ decision: answer.status === "pending" ? "pending" : answer.decision, voters });
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
  if (decided && followUp) {
    const approvedBy = decided.decision === "denied" ? approval.votes : decided.voters.map((by) => ({ by, at: "" }));
    return (
      <>
        <ApprovalFacts approval={{ ...approval, votes: approvedBy }} decided />
        <DecidedOutcome runId={runId} toolCallId={followUp.toolCallId} decision={decided.decision} voters={decided.voters} />
      </>
    );
  }
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
      <ApprovalFacts approval={approval} now={now} />
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
