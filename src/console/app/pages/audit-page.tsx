// The audit log for admins (contract section 18): GET /api/audit over the
// typed client, newest first, filtered by principal and action as the API
// filters (the filters live in the fragment's query, so a filtered log is a
// link), one page at a time with its keyset cursor. Anyone else sees why
// they cannot read it, and the page sends nothing for them (a refused read
// would only add an access.refused entry). Each entry's target links where
// it leads (./audit-targets.ts), and the chain's state is shown above the log
// (contract section 25): sealed through which seq, the last checkpoint and how
// many entries came after it.
import { useState } from "preact/hooks";
import { AUDIT_ACTIONS, type AuditAction, type AuditEntry, type AuditQuery } from "../../../client/types";
import { engine } from "../api";
import { ErrorLine } from "../components/error-line";
import { usePolled } from "../hooks";
import { type AuditFilters, href } from "../router";
import { targetLink } from "../audit-targets";

/** Entries shown per page. */
const AUDIT_PAGE_SIZE = 50;

/** Who is looking, from GET /console/session; undefined until it answers. */
export interface Viewer {
  name: string;
  roles: readonly string[];
  /** Signed in by Cloudflare Access (no console session of its own). */
  access: boolean;
}

function AuditFilterForm({ filters }: { filters: AuditFilters }) {
  const [principal, setPrincipal] = useState(filters.principal ?? "");
  const go = (next: AuditFilters) => {
    location.hash = href.auditWith(next);
  };
  return (
    <form
      class="filters"
      aria-label="Filter the audit log"
      onSubmit={(e) => {
        e.preventDefault();
        go({ ...filters, principal: principal.trim() });
      }}
    >
      <p>
        <label for="audit-action">Action</label>
        <select
          id="audit-action"
          value={filters.action ?? ""}
          onChange={(e) => go({ ...filters, action: (e.currentTarget.value || undefined) as AuditAction | undefined })}
        >
          <option value="">any</option>
          {AUDIT_ACTIONS.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
      </p>
      <p>
        <label for="audit-principal">Principal</label>
        <input id="audit-principal" value={principal} placeholder="token:ci-bot" onInput={(e) => setPrincipal(e.currentTarget.value)} />
      </p>
      <p class="actions">
        <button type="submit">Filter</button>
        {filters.action || filters.principal ? (
          <a class="clear" href={href.audit}>
            Clear filters
          </a>
        ) : null}
      </p>
    </form>
  );
}

function EntryRow({ entry, filters }: { entry: AuditEntry; filters: AuditFilters }) {
  return (
    <tr data-audit-id={entry.id} data-action={entry.action} data-tone={entry.result === "refused" ? "warn" : undefined}>
      <td data-label="At">
        <time dateTime={entry.at}>{new Date(entry.at).toLocaleString()}</time>
      </td>
      <td data-label="Action">
        <a href={href.auditWith({ ...filters, action: entry.action })} title={`Only ${entry.action}`}>
          {entry.action}
        </a>
      </td>
      <td data-label="Principal">
        <a href={href.auditWith({ ...filters, principal: entry.principal })} title={`Only what ${entry.principal} did`}>
          {entry.principal}
        </a>
      </td>
      <td data-label="Seq" data-seq={entry.seq ?? ""}>
        {entry.seq ?? <span class="meta">unsealed</span>}
      </td>
      <td data-label="Target" class="run-link">
        <Target target={entry.target} />
      </td>
      <td data-label="Result">
        {entry.result}
        {entry.count !== undefined && entry.count > 1 ? ` ×${entry.count}` : ""}
      </td>
      <td data-label="Details">{entry.details ? <code>{JSON.stringify(entry.details)}</code> : null}</td>
    </tr>
  );
}

function Target({ target }: { target: string }) {
  const link = targetLink(target);
  return link === null ? (
    <>{target}</>
  ) : (
    <a href={link.href} title={link.title} data-target-link>
      {target}
    </a>
  );
}

/** The chain's state (contract section 25): the sealed head, the last checkpoint and the entries after it. */
function ChainState({ sealedThrough }: { sealedThrough: number | undefined }) {
  const checkpoints = usePolled("audit checkpoints", (signal) => engine.auditCheckpoints({ limit: 1 }, { signal }));
  if (sealedThrough === undefined) return null;
  const last = checkpoints.data?.checkpoints[0];
  return (
    <p class="meta" data-chain-state data-sealed-through={sealedThrough} data-last-checkpoint={last?.seq ?? ""}>
      Chain sealed through seq {sealedThrough}
      {" · "}
      {checkpoints.data === undefined ? (
        "checkpoints loading…"
      ) : last === undefined ? (
        "no signed checkpoint yet (set AUDIT_SIGNING_KEY)"
      ) : (
        <>
          last checkpoint at seq {last.seq}, <time dateTime={last.at}>{new Date(last.at).toLocaleString()}</time>
          {" · "}
          <span data-since-checkpoint={sealedThrough - last.seq}>{sealedThrough - last.seq} entries since</span>
        </>
      )}
    </p>
  );
}

/** The log itself: shown to admins only, so only they send GET /api/audit. */
function AuditLog({ filters }: { filters: AuditFilters }) {
  // The cursors of the pages opened after the newest one: the last is shown.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const query: AuditQuery = { ...filters, limit: AUDIT_PAGE_SIZE, ...(cursor ? { cursor } : {}) };
  const log = usePolled(`audit ${JSON.stringify(query)}`, (signal) => engine.audit(query, { signal }));
  const entries = log.data?.entries ?? [];
  const next = log.data?.next_cursor ?? null;
  return (
    <>
      <ChainState sealedThrough={log.data?.sealed_through_seq} />
      <AuditFilterForm key={JSON.stringify(filters)} filters={filters} />
      <ErrorLine message={log.error} />
      {log.data && entries.length === 0 ? (
        <p class="empty">{filters.action || filters.principal ? "No audit entry matches these filters." : "The audit log is empty."}</p>
      ) : null}
      <table class="runs audit">
        <thead>
          <tr>
            <th scope="col">At</th>
            <th scope="col">Action</th>
            <th scope="col">Principal</th>
            <th scope="col">Seq</th>
            <th scope="col">Target</th>
            <th scope="col">Result</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <EntryRow key={e.id} entry={e} filters={filters} />
          ))}
        </tbody>
      </table>
      <p class="actions">
        {cursors.length > 0 ? (
          <button type="button" onClick={() => setCursors([])}>
            Newest entries
          </button>
        ) : null}{" "}
        {next !== null ? (
          <button type="button" onClick={() => setCursors((c) => [...c, next])}>
            Older entries
          </button>
        ) : null}
      </p>
    </>
  );
}

export function AuditPage({ filters, viewer }: { filters: AuditFilters; viewer?: Viewer }) {
  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      {viewer === undefined ? (
        <p class="loading">Loading…</p>
      ) : viewer.roles.includes("admin") ? (
        <AuditLog key={JSON.stringify(filters)} filters={filters} />
      ) : (
        <p class="error" role="alert" data-refusal="admin">
          The audit log is for admins only: {viewer.name} lacks the admin role. Ask an admin for it, or sign in with a token that has it.
        </p>
      )}
    </section>
  );
}
