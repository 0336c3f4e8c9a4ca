// One run (contract sections 3-6, 16): its timeline live over the page's one
// SSE stream (the client resumes after a drop from the last sequence it
// yielded), its summary, and cancel.
import { useEffect, useState } from "preact/hooks";
import type { RunSummary } from "../../../client/types";
import { engine, errorText } from "../api";
import { applyEvent, emptyRun, type RunView } from "../call-cards";
import { CallCard } from "../components/call-card";
import { ErrorLine } from "../components/error-line";

export function RunPage({ runId, now }: { runId: string; now: number }) {
  const [view, setView] = useState<RunView>(() => emptyRun(runId));
  const [summary, setSummary] = useState<RunSummary>();
  const [error, setError] = useState<string>();
  const [cancel, setCancel] = useState<string>();

  useEffect(() => {
    const stop = new AbortController();
    setView(emptyRun(runId));
    setError(undefined);
    engine.summary(runId, { signal: stop.signal }).then(setSummary, (e: unknown) => !stop.signal.aborted && setError(errorText(e)));
    (async () => {
      try {
        for await (const event of engine.events(runId, { signal: stop.signal })) {
          setView((v) => applyEvent(v, event));
        }
      } catch (err) {
        if (!stop.signal.aborted) setError(`The event stream stopped: ${errorText(err)}`);
      }
    })();
    return () => stop.abort();
  }, [runId]);

  const running = view.status === "running";
  return (
    <section aria-labelledby="run-title">
      <h2 id="run-title">
        Run <code>{runId}</code> <span class={`status status-${view.status}`}>{view.status}</span>
      </h2>
      <p class="meta">
        {summary ? `channel ${summary.channel_id} · started ${new Date(summary.created_at).toLocaleString()} · ` : ""}
        <span data-last-sequence={view.last_sequence}>event {view.last_sequence}</span>
      </p>
      {running ? (
        <p>
          <button
            type="button"
            class="deny"
            onClick={async () => {
              try {
                const answer = await engine.cancel(runId);
                setCancel(`Cancel: ${answer.status}`);
              } catch (err) {
                setCancel(errorText(err));
              }
            }}
          >
            Cancel run
          </button>{" "}
          <span role="status">{cancel}</span>
        </p>
      ) : null}
      <ErrorLine message={error} />
      <ol class="messages" aria-label="Assistant messages">
        {view.messages.map((m) => (
          <li key={m.sequence}>{m.text}</li>
        ))}
      </ol>
      <ol class="cards" aria-label="Tool calls">
        {view.cards.map((c) => (
          <CallCard key={c.tool_call_id} card={c} runId={runId} now={now} running={running} />
        ))}
      </ol>
      {view.final_text ? <p class="final">{view.final_text}</p> : null}
      {view.error ? (
        <p class="error-facts">
          Run failed: {view.error.code} — {view.error.message}
        </p>
      ) : null}
    </section>
  );
}
