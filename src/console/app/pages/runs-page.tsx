// The runs across runs (contract section 15), newest first, polled.
import { useState } from "preact/hooks";
import { engine } from "../api";
import { ErrorLine } from "../components/error-line";
import { usePolled } from "../hooks";
import { href } from "../router";
import type { Waiting } from "../waiting";

/** Runs shown per page. */
const RUNS_PAGE_SIZE = 50;

function OpenRunForm() {
  const [runId, setRunId] = useState("");
  return (
    <form
      class="inline"
      aria-label="Open a run by id"
      onSubmit={(e) => {
        e.preventDefault();
        if (runId.trim() !== "") location.hash = href.run(runId.trim());
      }}
    >
      <label for="open-run">Open a run by id</label> <input id="open-run" value={runId} onInput={(e) => setRunId(e.currentTarget.value)} />{" "}
      <button type="submit">Open</button>
    </form>
  );
}

export function RunsPage(_props: { waiting: Waiting }) {
  const { data, error } = usePolled("runs", (signal) => engine.listRuns({ limit: RUNS_PAGE_SIZE }, { signal }));
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
                <a href={href.run(r.run_id)}>{r.run_id}</a>
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
