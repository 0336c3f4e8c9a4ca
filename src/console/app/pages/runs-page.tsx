// The runs across runs (contract section 15), newest first and polled, led by
// what waits on a person (as Temporal's and Inngest's run lists lead with
// status and filters, not ids): each run's status in its own words (waiting
// for approval or an answer, from the listings of what waits; cancelled apart
// from failed; an unknown mutation outcome never a green "completed"), the
// first words of its request, who asked, how long it took and its mutations'
// outcomes. Filters by status, channel and requester live in the fragment's
// query, so a filtered list is a link.
import { useState } from "preact/hooks";
import type { MutationOutcome, RunListItem, RunsQuery } from "../../../client/types";
import { engine } from "../api";
import type { RunViewStatus } from "../call-cards";
import { RunLink } from "../components/run-link";
import { ErrorLine } from "../components/error-line";
import { OutcomeCounts } from "../components/outcome-counts";
import { FilterForm } from "../components/run-filters";
import { formatDuration } from "../format";
import { usePolled } from "../hooks";
import { href, type RunFilters } from "../router";
import { runVerdict } from "../verdicts";
import type { Waiting } from "../waiting";

/** Runs shown per page. */
const RUNS_PAGE_SIZE = 50;
/** Recent mutation rows read for the outcomes column (the unknown ones come from the listing of what waits). */
const RECENT_MUTATIONS = 200;

/** The listing's own query for the filters; what it cannot filter (waiting, cancelled) is narrowed on the page. */
function listingQuery(filters: RunFilters): RunsQuery {
  const status = filters.status === "waiting" ? "running" : filters.status === "cancelled" ? "failed" : filters.status;
  return {
    limit: RUNS_PAGE_SIZE,
    ...(status ? { status } : {}),
    ...(filters.channel_id ? { channel_id: filters.channel_id } : {}),
    ...(filters.user_id ? { user_id: filters.user_id } : {}),
  };
}

const statusOf = (r: RunListItem): RunViewStatus => (r.status === "failed" && r.error_code === "cancelled" ? "cancelled" : r.status);

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

export function RunsPage({ waiting, filters, now }: { waiting: Waiting; filters: RunFilters; now: number }) {
  const query = listingQuery(filters);
  const runs = usePolled(`runs ${JSON.stringify(query)}`, (signal) => engine.listRuns(query, { signal }));
  const recent = usePolled("recent mutations", (signal) => engine.listMutations({ limit: RECENT_MUTATIONS }, { signal }));
  const waitsApproval = new Set((waiting.approvals ?? []).map((a) => a.run_id));
  const waitsAnswer = new Set((waiting.inputs ?? []).map((q) => q.run_id));
  const byRun = new Map<string, Map<string, MutationOutcome>>();
  for (const row of [...(recent.data?.mutations ?? []), ...(waiting.unknown ?? [])]) {
    const rows = byRun.get(row.run_id) ?? new Map<string, MutationOutcome>();
    // The outcome_unknown listing is read separately and may be newer: a reconciled row stays settled.
    if (!rows.has(row.mutation_id) || row.state !== "outcome_unknown") rows.set(row.mutation_id, row);
    byRun.set(row.run_id, rows);
  }
  const shown = (runs.data?.runs ?? []).filter((r) => {
    const status = statusOf(r);
    if (filters.status === "waiting") return waitsApproval.has(r.run_id) || waitsAnswer.has(r.run_id);
    if (filters.status === "cancelled") return status === "cancelled";
    if (filters.status === "failed") return status === "failed";
    return true;
  });
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      <FilterForm key={JSON.stringify(filters)} filters={filters} />
      <OpenRunForm />
      <ErrorLine message={runs.error} />
      {runs.data && shown.length === 0 ? (
        <p class="empty">
          {filters.status || filters.channel_id || filters.user_id
            ? "No run matches these filters."
            : "No runs indexed yet. The index fills when runs start and may lag a moment; open a run by id meanwhile."}
        </p>
      ) : null}
      <table class="runs">
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col">Request</th>
            <th scope="col">Asked by</th>
            <th scope="col">Channel</th>
            <th scope="col">Started</th>
            <th scope="col">Duration</th>
            <th scope="col">Mutations</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => {
            const rows = [...(byRun.get(r.run_id)?.values() ?? [])];
            const verdict = runVerdict(
              statusOf(r),
              { approval: waitsApproval.has(r.run_id), answer: waitsAnswer.has(r.run_id) },
              rows.some((m) => m.state === "outcome_unknown"),
            );
            const took = (r.ended_at ? Date.parse(r.ended_at) : now) - Date.parse(r.created_at);
            return (
              <tr key={r.run_id} data-run-id={r.run_id} data-tone={verdict.tone}>
                <td data-label="Status">
                  <span class={`status tone-${verdict.tone}`}>{verdict.words}</span>
                </td>
                <td data-label="Request" class="request-cell">
                  <span class="said">{r.request ?? "(request not kept)"}</span>
                  <RunLink runId={r.run_id} />
                </td>
                <td data-label="Asked by">
                  <a href={href.runsWith({ ...filters, user_id: r.user_id })} title={`Only runs ${r.user_id} started`}>
                    {r.user_id}
                  </a>
                  {r.source === "slack" ? <span class="meta"> (Slack)</span> : null}
                </td>
                <td data-label="Channel">
                  <a href={href.runsWith({ ...filters, channel_id: r.channel_id })} title={`Only runs in ${r.channel_id}`}>
                    {r.channel_id}
                  </a>
                </td>
                <td data-label="Started">
                  <time dateTime={r.created_at}>{new Date(r.created_at).toLocaleString()}</time>
                </td>
                <td data-label="Duration">
                  {formatDuration(Math.max(0, took))}
                  {r.ended_at ? "" : " so far"}
                </td>
                <td data-label="Mutations">
                  <OutcomeCounts rows={rows} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
