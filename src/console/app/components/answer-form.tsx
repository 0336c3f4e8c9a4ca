// The answer form of one `human__ask` question (contract section 6).
import { useState } from "preact/hooks";
import { engine, errorText } from "../api";
import { ErrorLine } from "./error-line";
import { TimeLeft } from "./time-left";

export function AnswerForm({
  runId,
  toolCallId,
  question,
  expiresAt,
  now,
  onDone,
}: {
  runId: string;
  toolCallId: string;
  question: string;
  expiresAt: string;
  now: number;
  onDone?: () => void;
}) {
  const [answer, setAnswer] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState(false);
  const id = `q-${runId}-${toolCallId}`;
  if (done) return <p class="decided">Answer sent.</p>;
  return (
    <form
      class="answer"
      aria-label="Answer the question"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          await engine.answerInput(runId, toolCallId, { answer });
          setDone(true);
          onDone?.();
        } catch (err) {
          setError(errorText(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <p>
        <label for={id}>{question}</label> <TimeLeft expiresAt={expiresAt} now={now} />
      </p>
      <textarea id={id} rows={2} required value={answer} onInput={(e) => setAnswer(e.currentTarget.value)} />
      <p class="actions">
        <button type="submit" disabled={busy}>
          Send answer
        </button>
      </p>
      <ErrorLine message={error} />
    </form>
  );
}
