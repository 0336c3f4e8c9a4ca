// The `human__ask` questions waiting across runs (contract sections 15, 16),
// each with its answer form.
import type { ComponentChildren } from "preact";
import type { InputListItem } from "../../../client/types";
import { secondsLeft } from "../call-cards";
import { AnswerForm } from "../components/answer-form";
import { ErrorLine } from "../components/error-line";
import { useActedOn } from "../hooks";
import { href } from "../router";

const questionKey = (q: { run_id: string; tool_call_id: string }) => `${q.run_id}/${q.tool_call_id}`;

/** The pending questions with their forms; an answered one stays (with its confirmation) until the page is left. */
export function QuestionItems({
  inputs,
  now,
  reload,
  empty,
}: {
  inputs: InputListItem[];
  now: number;
  reload: () => void;
  /** Shown when nothing waits. */
  empty: ComponentChildren;
}) {
  const pending = inputs.filter((q) => secondsLeft(q.expires_at, now) > 0);
  const { shown, actedOn } = useActedOn(pending, questionKey);
  if (shown.length === 0) return <>{empty}</>;
  return (
    <ul class="inbox">
      {shown.map((q) => (
        <li key={questionKey(q)} class="card" data-tool-call-id={q.tool_call_id}>
          <p class="meta">
            <a href={href.run(q.run_id)}>{q.run_id}</a> · channel {q.channel_id}
          </p>
          <AnswerForm
            runId={q.run_id}
            toolCallId={q.tool_call_id}
            question={q.question}
            expiresAt={q.expires_at}
            now={now}
            onDone={() => {
              actedOn(q);
              reload();
            }}
          />
        </li>
      ))}
    </ul>
  );
}

export function QuestionsPage({
  inputs,
  error,
  now,
  reload,
}: {
  inputs?: InputListItem[];
  error?: string;
  now: number;
  reload: () => void;
}) {
  return (
    <section aria-labelledby="questions-title">
      <h2 id="questions-title">Questions waiting</h2>
      <ErrorLine message={error} />
      {inputs ? (
        <QuestionItems inputs={inputs} now={now} reload={reload} empty={<p class="empty">No question waits for an answer.</p>} />
      ) : null}
    </section>
  );
}
