// The shadow version's differences on the Policy page (contract section 24):
// GET /api/policy/shadow, newest first, a page at a time with its cursor;
// each call where the shadow's verdict differs from the active version's.
// A server without the route (404) is said so plainly, and asked no more.
import { useState } from "preact/hooks";
import { errorText } from "../api";
import { usePolled } from "../hooks";
import { absent, shadowDifferences } from "../policy-api";
import { RunLink } from "./run-link";

const SHADOW_PAGE_SIZE = 20;

export function PolicyShadow({ shadowVersion }: { shadowVersion?: number }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const [missing, setMissing] = useState(false);
  const cursor = cursors[cursors.length - 1];
  const query = {
    limit: SHADOW_PAGE_SIZE,
    ...(shadowVersion !== undefined ? { version: shadowVersion } : {}),
    ...(cursor ? { cursor } : {}),
  };
  const page = usePolled(missing ? "shadow: absent" : `shadow ${JSON.stringify(query)}`, async (signal) => {
    if (missing) return undefined;
    try {
      return await shadowDifferences(query, signal);
    } catch (err) {
      if (absent(err)) {
        setMissing(true);
        return undefined;
      }
      throw new Error(errorText(err));
    }
  });
  const differences = page.data?.differences ?? [];
  const next = page.data?.next_cursor ?? null;
  return (
    <section aria-labelledby="policy-shadow-title">
      <h3 id="policy-shadow-title">Shadow differences</h3>
      {missing ? (
        <p class="empty" data-shadow="absent">
          This server does not record shadow differences yet: GET /api/policy/shadow answered 404.
        </p>
      ) : (
        <>
          <p class="meta">
            Where a shadow version (stored with mode "shadow") would have judged a call otherwise than the active version did.
          </p>
          {page.error ? (
            <p class="error" role="alert">
              {page.error}
            </p>
          ) : null}
          {page.data && differences.length === 0 ? <p class="empty">No differences recorded.</p> : null}
          {differences.length > 0 ? (
            <table class="runs policy-shadow">
              <thead>
                <tr>
                  <th scope="col">At</th>
                  <th scope="col">Run</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Check</th>
                  <th scope="col">Active</th>
                  <th scope="col">Shadow</th>
                </tr>
              </thead>
              <tbody>
                {differences.map((d) => (
                  <tr key={`${d.run_id} ${d.tool_call_id} ${d.check} ${d.at}`}>
                    <td data-label="At">
                      <time dateTime={d.at}>{new Date(d.at).toLocaleString()}</time>
                    </td>
                    <td data-label="Run" class="request-cell">
                      <RunLink runId={d.run_id} />
                    </td>
                    <td data-label="Tool">
                      <code>{d.tool_name}</code>
                    </td>
                    <td data-label="Check">{d.check}</td>
                    <td data-label="Active">{d.active}</td>
                    <td data-label="Shadow">{d.shadow}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          <p class="actions">
            {cursors.length > 0 ? (
              <button type="button" class="secondary" onClick={() => setCursors([])}>
                Newest differences
              </button>
            ) : null}
            {next !== null ? (
              <button type="button" class="secondary" onClick={() => setCursors((c) => [...c, next])}>
                Older differences
              </button>
            ) : null}
          </p>
        </>
      )}
    </section>
  );
}
