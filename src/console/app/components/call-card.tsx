// One tool call's card on a run's timeline (contract section 16): its stage,
// who decided or answered, the decision or answer form while it waits, its
// error or result, and for a mutation its durable outcome.
import { type CallCard as Card, STAGE_LABELS } from "../call-cards";
import { AnswerForm } from "./answer-form";
import { ApprovalForm } from "./approval-form";
import { OutcomeLine } from "./outcome-line";

export function CallCard({ card, runId, now, running }: { card: Card; runId: string; now: number; running: boolean }) {
  return (
    <li class={`card stage-${card.stage}`} data-tool-call-id={card.tool_call_id} data-stage={card.stage}>
      <h3>
        <code>{card.tool_name}</code> <span class="stage">{STAGE_LABELS[card.stage]}</span>
        {card.reason ? <span class="reason"> ({card.reason.replace(/_/g, " ")})</span> : null}
      </h3>
      <p class="meta">
        call {card.tool_call_id}
        {card.approval_required ? "" : " · no approval needed"}
        {card.decision ? ` · ${card.decision.decision}${card.decision.decided_by ? ` by ${card.decision.decided_by}` : ""}` : ""}
        {card.answered_by ? ` · answered by ${card.answered_by}` : ""}
        {card.duration_ms !== undefined ? ` · ${card.duration_ms} ms` : ""}
      </p>
      {card.stage === "waiting_for_approval" && card.approval && running ? (
        <ApprovalForm runId={runId} toolName={card.tool_name} approval={card.approval} now={now} />
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
      {card.error ? (
        <p class="error-facts">
          Error: {card.error.code} — {card.error.message}
        </p>
      ) : null}
      {card.result ? <p class="result">{card.result.summary}</p> : null}
      {card.mutation_id ? <OutcomeLine mutationId={card.mutation_id} completed={card.completed} /> : null}
    </li>
  );
}
