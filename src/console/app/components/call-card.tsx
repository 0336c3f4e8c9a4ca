// One tool call's card on a run's timeline (contract section 16): its state
// in its own words and colour (verdicts.ts), who decided or answered and why,
// the decision or answer form while it waits, its error or result, and for a
// mutation its durable outcome.
import type { MutationOutcome } from "../../../client/types";
import { useEffect, useRef } from "preact/hooks";
import type { CallCard as Card } from "../call-cards";
import { cardVerdict } from "../verdicts";
import { AnswerForm } from "./answer-form";
import { ApprovalFacts } from "./approval-facts";
import { ApprovalForm } from "./approval-form";
import { OutcomeLine } from "./outcome-line";
import { QuestionForm } from "./question-form";

/** " by ann, bo": every person who approved (a two-person approval names both), else the one who decided. */
function deciders(decision: NonNullable<Card["decision"]>): string {
  const names =
    decision.approved_by && decision.approved_by.length > 0 ? decision.approved_by : decision.decided_by ? [decision.decided_by] : [];
  return names.length > 0 ? ` by ${names.join(", ")}` : "";
}

export function CallCard({
  card,
  outcome,
  runId,
  now,
  running,
  sequence,
  focused = false,
}: {
  card: Card;
  outcome: MutationOutcome | undefined;
  runId: string;
  now: number;
  running: boolean;
  sequence: number;
  /** The approval a link named (from Slack): marked and scrolled to. */
  focused?: boolean;
}) {
  const verdict = cardVerdict(card, outcome);
  const ref = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (focused) ref.current?.scrollIntoView({ block: "start" });
  }, [focused]);
  const decision = card.decision;
  return (
    <li
      ref={ref}
      class={focused ? "card focused" : "card"}
      data-focused={focused ? "true" : undefined}
      data-kind="call"
      data-sequence={sequence}
      data-tool-call-id={card.tool_call_id}
      data-stage={card.stage}
      data-tone={verdict.tone}
    >
      <h3>
        <code>{card.tool_name}</code> <span class={`stage tone-${verdict.tone}`}>{verdict.words}</span>
      </h3>
      <p class="meta">
        call {card.tool_call_id}
        {card.approval_required ? "" : " · no approval needed"}
        {decision ? ` · ${decision.decision}${deciders(decision)}` : ""}
        {card.answered_by ? ` · answered by ${card.answered_by}` : ""}
        {card.duration_ms !== undefined ? ` · ${card.duration_ms} ms` : ""}
      </p>
      {decision?.reason ? (
        <p class="decision-reason">
          Reason: <q>{decision.reason}</q>
        </p>
      ) : null}
      {card.stage === "waiting_for_approval" && card.approval && running ? (
        <ApprovalForm runId={runId} toolName={card.tool_name} approval={card.approval} now={now} />
      ) : card.approval ? (
        // Decided (or no longer open): the arguments it was decided on stay on the card.
        <ApprovalFacts
          approval={decision?.approved_by ? { ...card.approval, votes: decision.approved_by.map((by) => ({ by, at: "" })) } : card.approval}
          decided
        />
      ) : null}
      {card.stage === "waiting_for_answer" && card.question && running ? (
        <AnswerForm
          runId={runId}
          toolCallId={card.tool_call_id}
          question={card.question.text}
          expiresAt={card.question.expires_at}
          now={now}
        />
      ) : null}
      {(card.form_questions ?? []).map((q) =>
        q.answered_by === undefined ? (
          running ? (
            <QuestionForm key={q.input_id} runId={runId} question={q} now={now} />
          ) : null
        ) : (
          <p key={q.input_id} class="meta" data-input-id={q.input_id}>
            <q>{q.question}</q> {q.action === "decline" ? "declined" : q.action === "cancel" ? "cancelled" : "answered"} by {q.answered_by}
          </p>
        ),
      )}
      {card.error ? (
        <p class="error-facts">
          Error: {card.error.code} — {card.error.message}
        </p>
      ) : null}
      {card.result ? <pre class="result">{card.result.summary}</pre> : null}
      {card.mutation_id ? <OutcomeLine outcome={outcome} /> : null}
    </li>
  );
}
