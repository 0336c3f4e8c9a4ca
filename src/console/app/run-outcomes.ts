// A run's durable outcome rows for its page (contract section 8), read in one
// request for every card: again soon while a row is still settling, now and
// then while one is outcome_unknown (so a reconciliation shows up), and again
// whenever the timeline names a mutation the last read did not have.
import { useEffect, useState } from "preact/hooks";
import type { MutationOutcome } from "../../client/types";
import { engine } from "./api";

/** A row still `unresolved` is read again this soon. */
const SETTLING_RETRY_MS = 1_500;
/** A row `outcome_unknown` (or a failed read) is read again this much later. */
const UNKNOWN_RECHECK_MS = 5_000;

export function useRunOutcomes(runId: string, mutationIds: string[]): Map<string, MutationOutcome> {
  const [rows, setRows] = useState<Map<string, MutationOutcome>>(new Map());
  const missing = mutationIds.filter((id) => !rows.has(id)).join(",");
  useEffect(() => {
    if (mutationIds.length === 0) return;
    const stop = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      let again: number | null = UNKNOWN_RECHECK_MS;
      try {
        const { mutations } = await engine.runMutations(runId, { signal: stop.signal });
        if (stop.signal.aborted) return;
        setRows(new Map(mutations.map((m) => [m.mutation_id, m])));
        const known = new Set(mutations.map((m) => m.mutation_id));
        const settling = mutations.some((m) => m.state === "unresolved") || mutationIds.some((id) => !known.has(id));
        again = settling ? SETTLING_RETRY_MS : mutations.some((m) => m.state === "outcome_unknown") ? UNKNOWN_RECHECK_MS : null;
      } catch {
        if (stop.signal.aborted) return;
      }
      if (again !== null) timer = setTimeout(load, again);
    };
    void load();
    return () => {
      stop.abort();
      clearTimeout(timer);
    };
    // Read again when the timeline names a mutation this read did not have.
  }, [runId, missing]);
  return rows;
}
