// The runs list's filters (status, channel, requester): each change becomes
// the fragment's query, so a filtered list is a link (router.ts).
import { useState } from "preact/hooks";
import { href, RUN_FILTER_STATUSES, type RunFilters, type RunFilterStatus } from "../router";

const FILTER_LABELS: Record<RunFilterStatus, string> = {
  waiting: "waiting on a person",
  running: "running",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

export function FilterForm({ filters }: { filters: RunFilters }) {
  const [channel, setChannel] = useState(filters.channel_id ?? "");
  const [user, setUser] = useState(filters.user_id ?? "");
  const go = (next: RunFilters) => {
    location.hash = href.runsWith(next);
  };
  return (
    <form
      class="filters"
      aria-label="Filter the runs"
      onSubmit={(e) => {
        e.preventDefault();
        go({ ...filters, channel_id: channel.trim(), user_id: user.trim() });
      }}
    >
      <p>
        <label for="filter-status">Status</label>
        <select
          id="filter-status"
          value={filters.status ?? ""}
          onChange={(e) => go({ ...filters, status: (e.currentTarget.value || undefined) as RunFilterStatus | undefined })}
        >
          <option value="">any</option>
          {RUN_FILTER_STATUSES.map((s) => (
            <option key={s} value={s}>
              {FILTER_LABELS[s]}
            </option>
          ))}
        </select>
      </p>
      <p>
        <label for="filter-channel">Channel</label>
        <input id="filter-channel" value={channel} onInput={(e) => setChannel(e.currentTarget.value)} />
      </p>
      <p>
        <label for="filter-user">Requester</label>
        <input id="filter-user" value={user} onInput={(e) => setUser(e.currentTarget.value)} />
      </p>
      <p class="actions">
        <button type="submit">Filter</button>
        {filters.status || filters.channel_id || filters.user_id ? (
          <a class="clear" href={href.runs}>
            Clear filters
          </a>
        ) : null}
      </p>
    </form>
  );
}
