// The questions waiting across runs (contract sections 15, 16): a
// `human__ask`'s with its answer form, an MCP server's (section 21) with the
// form built from its requested_schema.
import type { ComponentChildren } from "preact";
import { secondsLeft } from "../call-cards";
import { AnswerForm } from "../components/answer-form";
import { AskedBy } from "../components/asked-by";
import { ErrorLine } from "../components/error-line";
import { QuestionForm } from "../components/question-form";
import { RunLink } from "../components/run-link";
import { useActedOn } from "../hooks";
import type { WaitingInput } from "../waiting";

const questionKey = (q: WaitingInput) => `${q.run_id}/${q.input_id ?? q.tool_call_id}`;

/** The pending questions with their forms; an answered one stays (with its confirmation) until the page is left. */
export function QuestionItems({
  inputs,
  now,
  reload,
  empty,
}: {
  inputs: WaitingInput[];
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
        <li key={questionKey(q)} class="card" data-tool-call-id={q.tool_call_id} data-input-id={q.input_id}>
          <h3>
            <code data-asking-tool>{q.tool_name ?? "a tool"}</code> <span class="level">asks</span>
          </h3>
          <div class="request">
            <AskedBy asker={{ by: q.requested_by ?? q.user_id, on_behalf_of: q.on_behalf_of }} request={q.request} />
          </div>
          <p class="meta">
            run <RunLink runId={q.run_id} /> · channel {q.channel_id} · call {q.tool_call_id}
          </p>
          {q.input_id !== undefined ? (
            <QuestionForm
              runId={q.run_id}
              question={{ input_id: q.input_id, question: q.question, requested_schema: q.requested_schema, expires_at: q.expires_at }}
              now={now}
              onSending={() => actedOn(q)}
              onDone={() => {
                actedOn(q);
                reload();
              }}
            />
          ) : (
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
          )}
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
  inputs?: WaitingInput[];
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
