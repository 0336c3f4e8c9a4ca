// The questions waiting across runs (contract sections 15, 16): a
// `human__ask`'s with its answer form, an MCP server's (section 21) with the
// form built from its requested_schema.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { InputListItem } from "../../../client/types";
import { engine, errorText } from "../api";
import { secondsLeft } from "../call-cards";
import { AnswerForm } from "../components/answer-form";
import { ErrorLine } from "../components/error-line";
import { type FormQuestion, QuestionForm } from "../components/question-form";
import { useActedOn } from "../hooks";
import { href } from "../router";

/** The section 21 fields a listed question may carry: an MCP server's question has its own id (and, from newer servers, its schema). */
type ListedQuestion = InputListItem & { input_id?: string; requested_schema?: unknown };

const questionKey = (q: ListedQuestion) => `${q.run_id}/${q.input_id ?? q.tool_call_id}`;

/**
 * An MCP server's question in the inbox: its form from the listing's schema,
 * else from the run's summary (its pending questions carry the schema).
 */
function ListedQuestionForm({ item, inputId, now, onDone }: { item: ListedQuestion; inputId: string; now: number; onDone: () => void }) {
  const listed: FormQuestion | undefined =
    item.requested_schema === undefined
      ? undefined
      : { input_id: inputId, question: item.question, requested_schema: item.requested_schema, expires_at: item.expires_at };
  const [loaded, setLoaded] = useState<FormQuestion>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (listed) return;
    const abort = new AbortController();
    engine.summary(item.run_id, { signal: abort.signal }).then(
      (summary) => {
        const pending = (summary.pending_inputs as { input_id?: string; requested_schema?: unknown }[]).find((q) => q.input_id === inputId);
        if (pending?.requested_schema === undefined) setError("This question is no longer waiting, or its form is not known yet.");
        else
          setLoaded({
            input_id: inputId,
            question: item.question,
            requested_schema: pending.requested_schema,
            expires_at: item.expires_at,
          });
      },
      (err: unknown) => {
        if (!abort.signal.aborted) setError(errorText(err));
      },
    );
    return () => abort.abort();
  }, [item.run_id, inputId, listed === undefined]);
  const question = listed ?? loaded;
  if (question) return <QuestionForm runId={item.run_id} question={question} now={now} onDone={onDone} />;
  return error ? <ErrorLine message={error} /> : <p class="meta">{item.question} (loading its form…)</p>;
}

/** The pending questions with their forms; an answered one stays (with its confirmation) until the page is left. */
export function QuestionItems({
  inputs,
  now,
  reload,
  empty,
}: {
  inputs: ListedQuestion[];
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
          <p class="meta">
            <a href={href.run(q.run_id)}>{q.run_id}</a> · channel {q.channel_id}
          </p>
          {q.input_id !== undefined ? (
            <ListedQuestionForm
              item={q}
              inputId={q.input_id}
              now={now}
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
