// One run (contract sections 3-8, 16) as one timeline in event order: the
// person's request, each assistant message and each call card where its first
// event stood, the final answer once, and how the run ended. Live over the
// page's one SSE stream (the client resumes after a drop from the last
// sequence it yielded). A run id the engine does not know is "not found":
// no status, no stream, no Cancel.
import { useEffect, useState } from "preact/hooks";
import type { RunSummary } from "../../../client/types";
import { engine, errorStatus, errorText } from "../api";
import { applyEvent, emptyRun, type RunView } from "../call-cards";
import { AskedBy, type Asker } from "../components/asked-by";
import { CallCard } from "../components/call-card";
import { ErrorLine } from "../components/error-line";
import { href } from "../router";
import { useRunOutcomes } from "../run-outcomes";
import { runVerdict } from "../verdicts";

type SummaryState =
  | { kind: "loading" }
  | { kind: "found"; summary: RunSummary }
  | { kind: "not_found" }
  | { kind: "error"; message: string };

/** Who asked: from run_started, else the summary. */
function askerOf(view: RunView, summary: RunSummary): Asker {
  return view.requester ?? { by: summary.requested_by ?? summary.user_id, on_behalf_of: summary.on_behalf_of };
}

function NotFound({ runId }: { runId: string }) {
  return (
    <section aria-labelledby="run-title" data-run-state="not_found">
      <h2 id="run-title">
        Run <code>{runId}</code> <span class="status tone-neutral">not found</span>
      </h2>
      <p>
        The engine keeps no run with this id: check the id, or it ended long enough ago that retention removed it (it may still be listed on{" "}
        <a href={href.runs}>the runs page</a>).
      </p>
    </section>
  );
}

function CancelButton({ runId }: { runId: string }) {
  const [said, setSaid] = useState<string>();
  return (
    <p>
      <button
        type="button"
        class="deny"
        onClick={async () => {
          try {
            const answer = await engine.cancel(runId);
            setSaid(`Cancel: ${answer.status}`);
          } catch (err) {
            setSaid(errorText(err));
          }
        }}
      >
        Cancel run
      </button>{" "}
      <span role="status">{said}</span>
    </p>
  );
}

export function RunPage({ runId, focusApproval, now }: { runId: string; focusApproval?: string; now: number }) {
  const [view, setView] = useState<RunView>(() => emptyRun(runId));
  const [summary, setSummary] = useState<SummaryState>({ kind: "loading" });
  const [streamError, setStreamError] = useState<string>();

  useEffect(() => {
    const stop = new AbortController();
    engine.summary(runId, { signal: stop.signal }).then(
      (s) => setSummary({ kind: "found", summary: s }),
      (err: unknown) => {
        if (stop.signal.aborted) return;
        setSummary(errorStatus(err) === 404 ? { kind: "not_found" } : { kind: "error", message: errorText(err) });
        if (errorStatus(err) === 404) stop.abort(); // nothing to stream
      },
    );
    (async () => {
      try {
        for await (const event of engine.events(runId, { signal: stop.signal })) {
          setView((v) => applyEvent(v, event));
        }
      } catch (err) {
        if (!stop.signal.aborted && errorStatus(err) !== 404) setStreamError(`The event stream stopped: ${errorText(err)}`);
      }
    })();
    return () => stop.abort();
  }, [runId]);

  const mutationIds = view.cards.flatMap((c) => (c.mutation_id ? [c.mutation_id] : []));
  const outcomes = useRunOutcomes(runId, mutationIds);

  if (summary.kind === "not_found") return <NotFound runId={runId} />;
  const known = summary.kind === "found" || view.last_sequence > 0;
  const running = view.status === "running";
  const waits = {
    approval: view.cards.some((c) => c.stage === "waiting_for_approval"),
    answer: view.cards.some((c) => c.stage === "waiting_for_answer"),
  };
  const unknownOutcome = [...outcomes.values()].some((o) => o.state === "outcome_unknown");
  const verdict = runVerdict(view.status, waits, unknownOutcome);
  const cards = new Map(view.cards.map((c) => [c.tool_call_id, c]));
  const s = summary.kind === "found" ? summary.summary : undefined;
  return (
    <section aria-labelledby="run-title" data-run-state={known ? view.status : "loading"}>
      <h2 id="run-title">
        Run <code>{runId}</code>{" "}
        {known ? <span class={`status tone-${verdict.tone}`}>{verdict.words}</span> : <span class="status tone-neutral">loading…</span>}
      </h2>
      <p class="meta">
        {s ? `channel ${s.channel_id} · started ${new Date(s.created_at).toLocaleString()} · ` : ""}
        <span data-last-sequence={view.last_sequence}>event {view.last_sequence}</span>
      </p>
      {s && running ? <CancelButton runId={runId} /> : null}
      <ErrorLine message={summary.kind === "error" ? summary.message : undefined} />
      <ErrorLine message={streamError} />
      <ol class="timeline" aria-label="Timeline">
        {s ? (
          <li class="request" data-kind="request" data-sequence={0}>
            <AskedBy asker={askerOf(view, s)} request={s.request} />
          </li>
        ) : null}
        {view.timeline.map((entry) => {
          if (entry.kind === "message") {
            return (
              <li
                key={`m${entry.sequence}`}
                class={entry.final ? "message final" : "message"}
                data-kind={entry.final ? "final" : "message"}
                data-sequence={entry.sequence}
              >
                <p class="who-said">{entry.final ? "Final answer" : "Assistant"}</p>
                <p class="said">{entry.text}</p>
              </li>
            );
          }
          const card = cards.get(entry.tool_call_id);
          if (!card) return null;
          return (
            <CallCard
              key={card.tool_call_id}
              card={card}
              outcome={card.mutation_id ? outcomes.get(card.mutation_id) : undefined}
              runId={runId}
              now={now}
              running={running}
              sequence={entry.sequence}
              focused={focusApproval !== undefined && card.approval?.approval_id === focusApproval}
            />
          );
        })}
        {view.error ? (
          <li class="ended" data-tone={view.status === "cancelled" ? "stopped" : "bad"} data-kind="ended">
            {view.status === "cancelled" ? "The run was cancelled." : `Run failed: ${view.error.code} — ${view.error.message}`}
          </li>
        ) : null}
      </ol>
    </section>
  );
}
