// The diff of two policy versions on the Policy page (contract section 24):
// two version numbers (any, not only the listed page's), both read with GET
// /api/policy/versions/{v}, and the pointers that differ (./policy-diff.ts),
// the ones the second version's `loosens` names marked as loosening.
import { useEffect, useState } from "preact/hooks";
import type { PolicyVersion } from "../../../client/types";
import { engine, errorText } from "../api";
import { policyDiff, shownValue } from "../policy-diff";

export interface DiffPair {
  from: number;
  to: number;
}

export function PolicyDiffView({ pair, choose }: { pair?: DiffPair; choose: (pair: DiffPair) => void }) {
  const [from, setFrom] = useState(pair ? String(pair.from) : "");
  const [to, setTo] = useState(pair ? String(pair.to) : "");
  const [shown, setShown] = useState<{ a: PolicyVersion; b: PolicyVersion }>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (pair === undefined) return;
    setFrom(String(pair.from));
    setTo(String(pair.to));
    const stop = new AbortController();
    Promise.all([
      engine.getPolicyVersion(pair.from, { signal: stop.signal }),
      engine.getPolicyVersion(pair.to, { signal: stop.signal }),
    ]).then(
      ([a, b]) => {
        setShown({ a, b });
        setError(undefined);
      },
      (err: unknown) => {
        if (stop.signal.aborted) return;
        setShown(undefined);
        setError(errorText(err));
      },
    );
    return () => stop.abort();
  }, [pair?.from, pair?.to]);
  const rows = shown ? policyDiff(shown.a.policy, shown.b.policy, shown.b.loosens) : [];
  return (
    <section aria-labelledby="policy-diff-title" id="policy-diff">
      <h3 id="policy-diff-title">Compare two versions</h3>
      <form
        class="filters"
        aria-label="Choose two versions to compare"
        onSubmit={(e) => {
          e.preventDefault();
          const a = Number(from);
          const b = Number(to);
          if (Number.isInteger(a) && a >= 0 && Number.isInteger(b) && b >= 0) choose({ from: a, to: b });
          else setError("Give two version numbers (0 is the deployment's settings).");
        }}
      >
        <p>
          <label for="diff-from">From version</label>
          <input id="diff-from" type="number" min={0} step={1} required value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
        </p>
        <p>
          <label for="diff-to">To version</label>
          <input id="diff-to" type="number" min={0} step={1} required value={to} onInput={(e) => setTo(e.currentTarget.value)} />
        </p>
        <p class="actions">
          <button type="submit">Compare</button>
        </p>
      </form>
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
      {shown ? (
        rows.length === 0 ? (
          <p class="empty" data-diff-rows="0">
            Versions {shown.a.version} and {shown.b.version} are the same document.
          </p>
        ) : (
          <>
            <p class="meta" data-diff-summary>
              From version {shown.a.version} to version {shown.b.version}: {rows.length}{" "}
              {rows.length === 1 ? "path differs" : "paths differ"}
              {shown.b.loosens.length > 0 ? `; version ${shown.b.version} loosens ${shown.b.loosens.length} against its base` : ""}
            </p>
            <table class="runs policy-diff" data-diff-rows={rows.length}>
              <thead>
                <tr>
                  <th scope="col">Path</th>
                  <th scope="col">Change</th>
                  <th scope="col">From</th>
                  <th scope="col">To</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.path} data-path={r.path} data-kind={r.kind} data-tone={r.loosens ? "warn" : undefined}>
                    <td data-label="Path">
                      <code>{r.path}</code>
                    </td>
                    <td data-label="Change">
                      {r.kind} {r.loosens ? <span class="status tone-warn">loosens</span> : null}
                    </td>
                    <td data-label="From">
                      <code>{shownValue(r.from)}</code>
                    </td>
                    <td data-label="To">
                      <code>{shownValue(r.to)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )
      ) : null}
    </section>
  );
}
