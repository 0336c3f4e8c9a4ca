// The replay form on the Policy page (contract section 24, admin): a
// candidate document (JSON, the active one to start from), a window (since,
// until) and POST /api/policy/replay; the calls the candidate judges otherwise
// are listed, and "More" continues with the answer's cursor. A refusal is
// shown with its code and details; a server without the route (404) is said
// so plainly.
import { useState } from "preact/hooks";
import { errorCode, errorText } from "../api";
import { absent, type ReplayChange, replayPolicy } from "../policy-api";
import { RunLink } from "./run-link";

/** The window's default start: this long ago. */
const DEFAULT_WINDOW_MS = 7 * 24 * 60 * 60 * 1_000;

/** A datetime-local input's value for a moment, in this browser's zone. */
function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/** A datetime-local value as ISO-8601 UTC; undefined when empty or not a time. */
function utc(value: string): string | undefined {
  if (value.trim() === "") return undefined;
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

interface Result {
  examined: number;
  skipped: number;
  changed: ReplayChange[];
  next_cursor: string | null;
}

export function PolicyReplay({ active }: { active?: unknown }) {
  const [text, setText] = useState<string>();
  const [since, setSince] = useState(() => localInput(Date.now() - DEFAULT_WINDOW_MS));
  const [until, setUntil] = useState("");
  const [result, setResult] = useState<Result>();
  const [error, setError] = useState<{ text: string; code?: string }>();
  const [busy, setBusy] = useState(false);
  const candidateText = text ?? (active === undefined ? "" : JSON.stringify(active, null, 2));

  const run = async (cursor?: string) => {
    let policy: unknown;
    try {
      policy = JSON.parse(candidateText);
    } catch (err) {
      setError({ text: `The candidate is not JSON: ${err instanceof Error ? err.message : String(err)}` });
      return;
    }
    const from = utc(since);
    if (from === undefined) {
      setError({ text: "Give the window's start (since)." });
      return;
    }
    const to = utc(until);
    setBusy(true);
    try {
      const page = await replayPolicy({ policy, since: from, ...(to ? { until: to } : {}), ...(cursor ? { cursor } : {}) });
      setError(undefined);
      setResult((r) =>
        cursor && r
          ? {
              examined: r.examined + page.examined,
              skipped: r.skipped + page.skipped,
              changed: [...r.changed, ...page.changed],
              next_cursor: page.next_cursor,
            }
          : page,
      );
    } catch (err) {
      const code = errorCode(err);
      setResult(undefined);
      setError(
        absent(err)
          ? { text: "This server cannot replay yet: POST /api/policy/replay answered 404.", code: "absent" }
          : { text: `${code ? `Refused (${code}): ` : ""}${errorText(err)}`, ...(code ? { code } : {}) },
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="policy-replay-title">
      <h3 id="policy-replay-title">Replay a candidate</h3>
      <p class="meta">How a candidate policy would have judged the calls recorded in a window, against what was recorded.</p>
      <form
        aria-label="Replay a candidate policy"
        class="policy-replay"
        onSubmit={(e) => {
          e.preventDefault();
          void run();
        }}
      >
        <p>
          <label for="replay-policy">Candidate policy (JSON)</label>
          <textarea id="replay-policy" rows={10} spellcheck={false} value={candidateText} onInput={(e) => setText(e.currentTarget.value)} />
        </p>
        <div class="filters">
          <p>
            <label for="replay-since">Since</label>
            <input id="replay-since" type="datetime-local" required value={since} onInput={(e) => setSince(e.currentTarget.value)} />
          </p>
          <p>
            <label for="replay-until">Until (optional)</label>
            <input id="replay-until" type="datetime-local" value={until} onInput={(e) => setUntil(e.currentTarget.value)} />
          </p>
        </div>
        <p class="actions">
          <button type="submit" disabled={busy}>
            Replay
          </button>
        </p>
      </form>
      {error ? (
        <p class="error" role="alert" data-refusal={error.code}>
          {error.text}
        </p>
      ) : null}
      {result ? (
        <>
          <p class="meta" data-replay-examined={result.examined} data-replay-changed={result.changed.length}>
            Examined {result.examined} calls, skipped {result.skipped} (recorded before replay's rows existed); the candidate judges{" "}
            {result.changed.length} otherwise.
          </p>
          {result.changed.length > 0 ? (
            <table class="runs policy-replay-changes">
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Check</th>
                  <th scope="col">Recorded</th>
                  <th scope="col">Candidate</th>
                  <th scope="col">Principal</th>
                </tr>
              </thead>
              <tbody>
                {result.changed.map((c, i) => (
                  <tr key={`${c.run_id} ${c.tool_call_id} ${c.check} ${i}`}>
                    <td data-label="Run" class="request-cell">
                      <RunLink runId={c.run_id} />
                    </td>
                    <td data-label="Tool">
                      <code>{c.tool_name}</code>
                    </td>
                    <td data-label="Check">{c.check}</td>
                    <td data-label="Recorded">{c.recorded}</td>
                    <td data-label="Candidate">{c.candidate}</td>
                    <td data-label="Principal">{c.principal ?? ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          {result.next_cursor !== null ? (
            <p class="actions">
              <button type="button" class="secondary" disabled={busy} onClick={() => void run(result.next_cursor ?? undefined)}>
                More
              </button>
            </p>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
