// The operator console's application (contract section 16), rendered with
// Preact (3 KB; hooks, no build-time framework) into the page /console serves.
// Pages, chosen by the URL's hash: runs (polled listing), one run (its
// timeline live over one SSE stream, resumed by the consumer client), the
// approvals inbox and the questions (polled listings), outcomes waiting for
// reconciliation, and the storage pool. Everything shown comes from the API
// as the engine sent it (arguments already redacted); Preact escapes all text.
import { render } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type {
  ApprovalsPage as ApprovalListing,
  InputsPage as InputListing,
  MutationOutcome,
  RunSummary,
  RunsPage as RunListing,
  StoragePoolStats,
} from "../../client/types";
import { api, type ConsoleApiError, enc, engine } from "./api";
import {
  applyEvent,
  type CallCard,
  emptyRun,
  formatTimeLeft,
  type PendingApproval,
  type RunView,
  STAGE_LABELS,
  secondsLeft,
} from "./call-cards";

/** Listings and the pool are polled this often (the index may lag a moment anyway). */
const POLL_INTERVAL_MS = 2_000;
/** A durable outcome still `unresolved` is read again this often, until it settles. */
const OUTCOME_RETRY_MS = 1_500;

type Route =
  | { page: "runs" }
  | { page: "run"; runId: string }
  | { page: "approvals" }
  | { page: "questions" }
  | { page: "outcomes" }
  | { page: "pool" };

function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  switch (parts[0]) {
    case "runs":
      return parts[1] ? { page: "run", runId: parts[1] } : { page: "runs" };
    case "approvals":
      return { page: "approvals" };
    case "questions":
      return { page: "questions" };
    case "outcomes":
      return { page: "outcomes" };
    case "pool":
      return { page: "pool" };
    default:
      return { page: "runs" };
  }
}

const runHref = (runId: string) => `#/runs/${enc(runId)}`;

// ---- shared hooks ------------------------------------------------------------

/** The current time, ticking every second: countdowns. */
function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

/** A GET polled every POLL_INTERVAL_MS; `reload` fetches at once (after an action). */
function usePolled<T>(path: string): { data?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let stopped = false;
    const load = () =>
      api<T>("GET", path).then(
        (data) => !stopped && setState({ data }),
        (err: Error) => !stopped && setState((s) => ({ data: s.data, error: err.message })),
      );
    void load();
    const timer = setInterval(load, POLL_INTERVAL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [path, tick]);
  return { ...state, reload: useCallback(() => setTick((t) => t + 1), []) };
}

/**
 * The inboxes' items a person has acted on in this view. The listing drops an
 * item once its decision reaches the index, which may be before or after the
 * person has read "Decision sent" and followed the run's link; kept here, the
 * item stays (with its own confirmation) until the page is left.
 */
function useActedOn<T>(listed: T[], keyOf: (item: T) => string): { shown: T[]; actedOn: (item: T) => void } {
  const [kept, setKept] = useState<T[]>([]);
  const actedOn = useCallback((item: T) => setKept((k) => (k.some((i) => keyOf(i) === keyOf(item)) ? k : [...k, item])), [keyOf]);
  const listedKeys = new Set(listed.map(keyOf));
  return { shown: [...listed, ...kept.filter((i) => !listedKeys.has(keyOf(i)))], actedOn };
}

// ---- pieces --------------------------------------------------------------------

function ErrorLine({ message }: { message?: string }) {
  return message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null;
}

function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <figure class="json">
      <figcaption>{label}</figcaption>
      <pre>{JSON.stringify(value, null, 2)}</pre>
    </figure>
  );
}

function TimeLeft({ expiresAt, now }: { expiresAt: string; now: number }) {
  const left = secondsLeft(expiresAt, now);
  return (
    <span class={left <= 30 ? "time-left urgent" : "time-left"}>
      <span class="visually-hidden">Time left: </span>
      {formatTimeLeft(left)}
    </span>
  );
}

function ApprovalForm({
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
      const body: Record<string, string> = { decision };
      if (decision === "approve" && approval.level === "confirm") body.confirmation = confirmation;
      if (reason !== "") body.reason = reason;
      const answer = await api<{ decision: string }>("POST", `/api/runs/${enc(runId)}/approvals/${enc(approval.approval_id)}`, body);
      setDone(answer.decision);
      onDone?.();
    } catch (err) {
      const e = err as ConsoleApiError;
      setError(
        e.code === "confirmation_mismatch"
          ? `The confirmation does not match: type ${toolName} exactly.`
          : e.code === "expired"
            ? "Too late: this approval expired."
            : e.message,
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
      <p>
        {approval.description} <TimeLeft expiresAt={approval.expires_at} now={now} />
      </p>
      <Json value={approval.arguments} label="Arguments (secret-looking values redacted)" />
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

function AnswerForm({
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
          await api("POST", `/api/runs/${enc(runId)}/inputs/${enc(toolCallId)}`, { answer });
          setDone(true);
          onDone?.();
        } catch (err) {
          setError((err as Error).message);
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

function OutcomeLine({ mutationId, completed }: { mutationId: string; completed: boolean }) {
  const [outcome, setOutcome] = useState<MutationOutcome>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const row = await api<MutationOutcome>("GET", `/api/mutations/${enc(mutationId)}`);
        if (stopped) return;
        setOutcome(row);
        if (row.state === "unresolved") timer = setTimeout(load, OUTCOME_RETRY_MS);
      } catch (err) {
        if (!stopped) setError((err as Error).message);
      }
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [mutationId, completed]);
  if (error) return <ErrorLine message={`Durable outcome: ${error}`} />;
  if (!outcome) return <p class="outcome">Durable outcome: reading…</p>;
  return (
    <p class="outcome">
      Durable outcome: <strong class={`state state-${outcome.state}`}>{outcome.state.replace(/_/g, " ")}</strong>
      {outcome.approved_by ? ` · approved by ${outcome.approved_by}` : ""}
      {outcome.state === "outcome_unknown" ? (
        <>
          {" "}
          · <a href="#/outcomes">reconcile</a>
        </>
      ) : null}
    </p>
  );
}

function Card({ card, runId, now, running }: { card: CallCard; runId: string; now: number; running: boolean }) {
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

// ---- pages ---------------------------------------------------------------------

function OpenRunForm() {
  const [runId, setRunId] = useState("");
  return (
    <form
      class="inline"
      aria-label="Open a run by id"
      onSubmit={(e) => {
        e.preventDefault();
        if (runId.trim() !== "") location.hash = runHref(runId.trim());
      }}
    >
      <label for="open-run">Open a run by id</label> <input id="open-run" value={runId} onInput={(e) => setRunId(e.currentTarget.value)} />{" "}
      <button type="submit">Open</button>
    </form>
  );
}

function RunsPage() {
  const { data, error } = usePolled<RunListing>("/api/runs?limit=50");
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      <OpenRunForm />
      <ErrorLine message={error} />
      {data && data.runs.length === 0 ? (
        <p class="empty">No runs indexed yet. The index fills when runs start and may lag a moment; open a run by id meanwhile.</p>
      ) : null}
      <table class="runs">
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Status</th>
            <th scope="col">Channel</th>
            <th scope="col">Started</th>
          </tr>
        </thead>
        <tbody>
          {(data?.runs ?? []).map((r) => (
            <tr key={r.run_id} data-run-id={r.run_id}>
              <td>
                <a href={runHref(r.run_id)}>{r.run_id}</a>
              </td>
              <td class={`status-${r.status}`}>{r.status}</td>
              <td>{r.channel_id}</td>
              <td>
                <time dateTime={r.created_at}>{new Date(r.created_at).toLocaleString()}</time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function RunPage({ runId, now }: { runId: string; now: number }) {
  const [view, setView] = useState<RunView>(() => emptyRun(runId));
  const [summary, setSummary] = useState<RunSummary>();
  const [error, setError] = useState<string>();
  const [cancel, setCancel] = useState<string>();
  const viewRef = useRef(view);
  viewRef.current = view;

  useEffect(() => {
    // The page's one SSE stream: the client resumes after a drop from the last sequence it yielded.
    const stop = new AbortController();
    setView(emptyRun(runId));
    setError(undefined);
    api<RunSummary>("GET", `/api/runs/${enc(runId)}`).then(setSummary, (e: Error) => setError(e.message));
    (async () => {
      try {
        for await (const event of engine.events(runId, { signal: stop.signal })) {
          setView((v) => applyEvent(v, event));
        }
      } catch (err) {
        if (!stop.signal.aborted) setError(`The event stream stopped: ${(err as Error).message}`);
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
                const answer = await api<{ status: string }>("POST", `/api/runs/${enc(runId)}/cancel`);
                setCancel(`Cancel: ${answer.status}`);
              } catch (err) {
                setCancel((err as Error).message);
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
          <Card key={c.tool_call_id} card={c} runId={runId} now={now} running={running} />
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

const approvalKey = (a: { approval_id: string }) => a.approval_id;

function ApprovalsPage({ now }: { now: number }) {
  const { data, error, reload } = usePolled<ApprovalListing>("/api/approvals?status=pending&limit=100");
  const pending = (data?.approvals ?? []).filter((a) => secondsLeft(a.expires_at, now) > 0);
  const { shown, actedOn } = useActedOn(pending, approvalKey);
  return (
    <section aria-labelledby="approvals-title">
      <h2 id="approvals-title">Approvals waiting</h2>
      <ErrorLine message={error} />
      {data && shown.length === 0 ? (
        <p class="empty">
          Nothing waits for approval (the index may lag a moment behind a new request; a run's own page shows it at once).
        </p>
      ) : null}
      <ul class="inbox">
        {shown.map((a) => (
          <li key={a.approval_id} class="card" data-approval-id={a.approval_id}>
            <h3>
              <code>{a.tool_name}</code> <span class="level">{a.level === "confirm" ? "confirm by typing the tool name" : "approve"}</span>
            </h3>
            <p class="meta">
              <a href={runHref(a.run_id)}>{a.run_id}</a> · channel {a.channel_id} · call {a.tool_call_id}
            </p>
            <ApprovalForm
              runId={a.run_id}
              toolName={a.tool_name}
              approval={a}
              now={now}
              onDone={() => {
                actedOn(a);
                reload();
              }}
            />
          </li>
        ))}
      </ul>
    </section>
  );
}

const questionKey = (q: { run_id: string; tool_call_id: string }) => `${q.run_id}/${q.tool_call_id}`;

function QuestionsPage({ now }: { now: number }) {
  const { data, error, reload } = usePolled<InputListing>("/api/inputs?status=pending&limit=100");
  const pending = (data?.inputs ?? []).filter((q) => secondsLeft(q.expires_at, now) > 0);
  const { shown, actedOn } = useActedOn(pending, questionKey);
  return (
    <section aria-labelledby="questions-title">
      <h2 id="questions-title">Questions waiting</h2>
      <ErrorLine message={error} />
      {data && shown.length === 0 ? <p class="empty">No question waits for an answer.</p> : null}
      <ul class="inbox">
        {shown.map((q) => (
          <li key={questionKey(q)} class="card" data-tool-call-id={q.tool_call_id}>
            <p class="meta">
              <a href={runHref(q.run_id)}>{q.run_id}</a> · channel {q.channel_id}
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
    </section>
  );
}

function ReconcileForm({ row, onDone }: { row: MutationOutcome; onDone: () => void }) {
  const [outcome, setOutcome] = useState<"completed" | "not_executed">("completed");
  const [evidence, setEvidence] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const id = `r-${row.mutation_id}`;
  return (
    <form
      class="reconcile"
      aria-label={`Reconcile ${row.mutation_id}`}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          await api("POST", `/api/mutations/${enc(row.mutation_id)}/reconcile`, { outcome, evidence });
          onDone();
        } catch (err) {
          setError((err as Error).message);
        } finally {
          setBusy(false);
        }
      }}
    >
      <fieldset>
        <legend>What happened?</legend>
        <label>
          <input
            type="radio"
            name={`${id}-outcome`}
            value="completed"
            checked={outcome === "completed"}
            onChange={() => setOutcome("completed")}
          />{" "}
          It completed
        </label>{" "}
        <label>
          <input
            type="radio"
            name={`${id}-outcome`}
            value="not_executed"
            checked={outcome === "not_executed"}
            onChange={() => setOutcome("not_executed")}
          />{" "}
          It did not happen
        </label>
      </fieldset>
      <p>
        <label for={`${id}-evidence`}>Evidence (what you checked)</label>
        <textarea
          id={`${id}-evidence`}
          rows={2}
          required
          maxLength={4_000}
          value={evidence}
          onInput={(e) => setEvidence(e.currentTarget.value)}
        />
      </p>
      <p class="actions">
        <button type="submit" disabled={busy}>
          Reconcile
        </button>
      </p>
      <ErrorLine message={error} />
    </form>
  );
}

function OutcomesPage() {
  const { data, error, reload } = usePolled<{ mutations: MutationOutcome[] }>("/api/mutations?state=outcome_unknown&limit=100");
  return (
    <section aria-labelledby="outcomes-title">
      <h2 id="outcomes-title">Outcomes waiting for reconciliation</h2>
      <ErrorLine message={error} />
      {data && data.mutations.length === 0 ? <p class="empty">No outcome is unknown.</p> : null}
      <ul class="inbox">
        {(data?.mutations ?? []).map((row) => (
          <li key={row.mutation_id} class="card" data-mutation-id={row.mutation_id}>
            <h3>
              <code>{row.tool_name}</code> <span class="state state-outcome_unknown">outcome unknown</span>
            </h3>
            <p class="meta">
              <a href={runHref(row.run_id)}>{row.run_id}</a> · call {row.tool_call_id}
              {row.approved_by ? ` · approved by ${row.approved_by}` : ""}
              {row.error ? ` · ${row.error.code}: ${row.error.message}` : ""}
            </p>
            <p class="meta">
              digest <code>{row.arguments_digest}</code>
            </p>
            <ReconcileForm row={row} onDone={reload} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function PoolPage() {
  const { data, error } = usePolled<StoragePoolStats>("/api/storage-pool");
  return (
    <section aria-labelledby="pool-title">
      <h2 id="pool-title">Storage pool</h2>
      <ErrorLine message={error} />
      {data ? (
        <>
          <p>
            <strong>{data.in_use}</strong> of {data.capacity} slots in use · <strong>{data.waiting}</strong> waiting in line
          </p>
          <ol class="slots" aria-label={`${data.in_use} of ${data.capacity} slots in use`}>
            {Array.from({ length: data.capacity }, (_, i) => (
              <li key={i} class={i < data.in_use ? "slot held" : "slot"} title={i < data.in_use ? "held" : "free"} />
            ))}
          </ol>
          <dl class="counters">
            <dt>acquired</dt>
            <dd>{data.acquired_total}</dd>
            <dt>had to wait</dt>
            <dd>{data.waited_total}</dd>
            <dt>refused</dt>
            <dd>{data.rejected_total}</dd>
            <dt>reclaimed</dt>
            <dd>{data.reclaimed_total}</dd>
          </dl>
        </>
      ) : null}
    </section>
  );
}

// ---- the shell -------------------------------------------------------------------

const NAV: { href: string; label: string; page: Route["page"] }[] = [
  { href: "#/runs", label: "Runs", page: "runs" },
  { href: "#/approvals", label: "Approvals", page: "approvals" },
  { href: "#/questions", label: "Questions", page: "questions" },
  { href: "#/outcomes", label: "Outcomes", page: "outcomes" },
  { href: "#/pool", label: "Storage pool", page: "pool" },
];

function App() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  const [who, setWho] = useState<{ principal: string }>();
  const now = useNow();
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", onHash);
    api<{ principal: string }>("GET", "/console/session").then(setWho, () => undefined);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  const active = route.page === "run" ? "runs" : route.page;
  return (
    <>
      <header>
        <h1>
          <a href="#/runs">Approved execution</a>
        </h1>
        <nav aria-label="Console pages">
          {NAV.map((n) => (
            <a key={n.page} href={n.href} aria-current={n.page === active ? "page" : undefined}>
              {n.label}
            </a>
          ))}
        </nav>
        <p class="who">
          {who ? <span>signed in as {who.principal}</span> : null}{" "}
          <button
            type="button"
            onClick={async () => {
              await api("DELETE", "/console/session").catch(() => undefined);
              location.assign("/console");
            }}
          >
            Sign out
          </button>
        </p>
      </header>
      <main>
        {route.page === "runs" ? <RunsPage /> : null}
        {route.page === "run" ? <RunPage runId={route.runId} now={now} /> : null}
        {route.page === "approvals" ? <ApprovalsPage now={now} /> : null}
        {route.page === "questions" ? <QuestionsPage now={now} /> : null}
        {route.page === "outcomes" ? <OutcomesPage /> : null}
        {route.page === "pool" ? <PoolPage /> : null}
      </main>
    </>
  );
}

const root = document.getElementById("app");
if (root) {
  root.replaceChildren();
  render(<App />, root);
}
