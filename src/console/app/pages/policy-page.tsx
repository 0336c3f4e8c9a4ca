// The Policy page (contract section 24): the active version (number, hash,
// the document), the versions newest first with who, when, why and status (a
// page at a time with the keyset cursor), a diff of two versions, what is
// proposed or shadowing with Approve and Withdraw for an admin, the shadow
// version's differences, and the replay form (admin). Comments, names and
// documents are text (Preact escapes them), never HTML.
import { useState } from "preact/hooks";
import type { PolicyStatus, PolicyVersion } from "../../../client/types";
import { engine } from "../api";
import { ErrorLine } from "../components/error-line";
import { JsonView } from "../components/json-view";
import { PolicyActions } from "../components/policy-actions";
import { type DiffPair, PolicyDiffView } from "../components/policy-diff-view";
import { PolicyReplay } from "../components/policy-replay";
import { PolicyShadow } from "../components/policy-shadow";
import { usePolled } from "../hooks";
import { holds } from "../roles";
import type { Viewer } from "./audit-page";

/** Versions shown per page. */
const VERSIONS_PAGE_SIZE = 20;

const STATUS_TONE: Record<PolicyStatus, string> = {
  active: "ok",
  proposed: "waiting",
  shadow: "progress",
  superseded: "neutral",
  withdrawn: "stopped",
  stale: "stopped",
};

function StatusPill({ status }: { status: PolicyStatus }) {
  return <span class={`status tone-${STATUS_TONE[status] ?? "neutral"}`}>{status}</span>;
}

function when(at: string | null): string {
  return at === null ? "—" : new Date(at).toLocaleString();
}

function ActiveVersion({ active, error }: { active?: PolicyVersion; error?: string }) {
  return (
    <section aria-labelledby="policy-active-title">
      <h3 id="policy-active-title">Active version</h3>
      <ErrorLine message={error} />
      {active ? (
        <div class="card" data-tone="ok" data-active-version={active.version}>
          <p>
            Version <strong>{active.version}</strong> <StatusPill status={active.status} />
            {active.version === 0 ? <span class="meta"> (the deployment's settings)</span> : null}
          </p>
          <p class="meta">
            Hash <code>{active.hash}</code>
          </p>
          <p class="meta">
            {active.created_by ? `By ${active.created_by}` : "From the settings"}
            {active.created_at ? `, ${when(active.created_at)}` : ""}
            {active.approved_by ? `; approved by ${active.approved_by}${active.approved_at ? `, ${when(active.approved_at)}` : ""}` : ""}
          </p>
          {active.comment ? <p class="said">{active.comment}</p> : null}
          <JsonView value={active.policy} label="The document" />
        </div>
      ) : error ? null : (
        <p class="loading">Loading…</p>
      )}
    </section>
  );
}

function Loosens({ version }: { version: PolicyVersion }) {
  if (version.loosens.length === 0) return <p class="meta">It only tightens.</p>;
  return (
    <>
      <p class="meta">It loosens (needs an admin who is another person than its author):</p>
      <ul class="loosens">
        {version.loosens.map((l) => (
          <li key={l.path} data-path={l.path}>
            <code>{l.path}</code>: <code>{JSON.stringify(l.from) ?? "null"}</code> → <code>{JSON.stringify(l.to) ?? "null"}</code>
          </li>
        ))}
      </ul>
    </>
  );
}

/** The proposed and shadow versions, each with what it loosens and, for an admin, Approve and Withdraw. */
function Proposed({
  admin,
  active,
  compare,
  changed,
}: {
  admin: boolean;
  active?: PolicyVersion;
  compare: (p: DiffPair) => void;
  changed: () => void;
}) {
  const proposed = usePolled("policy proposed", (signal) => engine.listPolicyVersions({ status: "proposed" }, { signal }));
  const shadow = usePolled("policy shadow version", (signal) => engine.listPolicyVersions({ status: "shadow" }, { signal }));
  const waiting = [...(shadow.data?.versions ?? []), ...(proposed.data?.versions ?? [])];
  const reload = () => {
    proposed.reload();
    shadow.reload();
    changed();
  };
  return (
    <section aria-labelledby="policy-proposed-title">
      <h3 id="policy-proposed-title">Proposed</h3>
      <ErrorLine message={proposed.error ?? shadow.error} />
      {proposed.data && shadow.data && waiting.length === 0 ? <p class="empty">Nothing is proposed.</p> : null}
      <ul class="cards">
        {waiting.map((v) => (
          <li key={v.version} class="card" data-tone={v.status === "shadow" ? "progress" : "waiting"} data-proposed-version={v.version}>
            <h4>
              Version {v.version} <StatusPill status={v.status} />
            </h4>
            <p class="meta">
              By {v.created_by ?? "the settings"}, {when(v.created_at)}, on version {v.base_version ?? "—"}
            </p>
            {v.comment ? <p class="said">{v.comment}</p> : <p class="meta">No comment.</p>}
            <Loosens version={v} />
            <p class="actions">
              {active ? (
                <button type="button" class="secondary" onClick={() => compare({ from: active.version, to: v.version })}>
                  Compare with the active version
                </button>
              ) : null}
            </p>
            {admin ? <PolicyActions version={v} changed={reload} /> : null}
          </li>
        ))}
      </ul>
      {!admin ? (
        <p class="meta" data-refusal="admin">
          Approving and withdrawing a version is for admins.
        </p>
      ) : null}
    </section>
  );
}

function Versions({ reloadKey, compare, active }: { reloadKey: number; compare: (p: DiffPair) => void; active?: PolicyVersion }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const query = { limit: VERSIONS_PAGE_SIZE, ...(cursor ? { cursor } : {}) };
  const page = usePolled(`policy versions ${JSON.stringify(query)} ${reloadKey}`, (signal) => engine.listPolicyVersions(query, { signal }));
  const versions = page.data?.versions ?? [];
  const next = page.data?.next_cursor ?? null;
  return (
    <section aria-labelledby="policy-versions-title">
      <h3 id="policy-versions-title">Versions</h3>
      <ErrorLine message={page.error} />
      <table class="runs policy-versions">
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Status</th>
            <th scope="col">Who</th>
            <th scope="col">When</th>
            <th scope="col">Why</th>
            <th scope="col">Compare</th>
          </tr>
        </thead>
        <tbody>
          {versions.map((v) => (
            <tr key={v.version} data-version={v.version} data-status={v.status}>
              <td data-label="Version">
                {v.version}{" "}
                <code class="meta" title={v.hash}>
                  {v.hash.slice(0, 15)}…
                </code>
              </td>
              <td data-label="Status">
                <StatusPill status={v.status} />
              </td>
              <td data-label="Who">
                {v.created_by ?? "the settings"}
                {v.approved_by ? <span class="meta"> (approved by {v.approved_by})</span> : null}
              </td>
              <td data-label="When">{v.created_at ? <time dateTime={v.created_at}>{when(v.created_at)}</time> : "—"}</td>
              <td data-label="Why" class="comment">
                {v.comment}
              </td>
              <td data-label="Compare">
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Compare version ${v.version} with the one before`}
                  onClick={() =>
                    compare({
                      from: v.base_version ?? (active && active.version !== v.version ? active.version : Math.max(0, v.version - 1)),
                      to: v.version,
                    })
                  }
                >
                  Diff
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="actions">
        {cursors.length > 0 ? (
          <button type="button" class="secondary" onClick={() => setCursors([])}>
            Newest versions
          </button>
        ) : null}
        {next !== null ? (
          <button type="button" class="secondary" onClick={() => setCursors((c) => [...c, next])}>
            Older versions
          </button>
        ) : null}
      </p>
    </section>
  );
}

export function PolicyPage({ viewer }: { viewer?: Viewer }) {
  const active = usePolled("policy active", (signal) => engine.getPolicy({ signal }));
  const [pair, setPair] = useState<DiffPair>();
  const [reloadKey, setReloadKey] = useState(0);
  const admin = viewer !== undefined && holds(viewer.roles, "admin");
  const compare = (p: DiffPair) => {
    setPair(p);
    document.getElementById("policy-diff")?.scrollIntoView({ block: "start" });
  };
  const changed = () => {
    active.reload();
    setReloadKey((k) => k + 1);
  };
  return (
    <section aria-labelledby="policy-title" class="policy">
      <h2 id="policy-title">Policy</h2>
      <ActiveVersion active={active.data} error={active.error} />
      <Proposed admin={admin} active={active.data} compare={compare} changed={changed} />
      <Versions reloadKey={reloadKey} compare={compare} active={active.data} />
      <PolicyDiffView pair={pair} choose={setPair} />
      <PolicyShadow />
      {admin ? <PolicyReplay active={active.data?.policy} /> : <p class="meta">Replaying a candidate is for admins.</p>}
    </section>
  );
}
