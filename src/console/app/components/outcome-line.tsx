// A mutation's durable outcome (contract section 8), read from its row and
// read again while it is still settling.
import { useEffect, useState } from "preact/hooks";
import type { MutationOutcome } from "../../../client/types";
import { engine, errorText } from "../api";
import { href } from "../router";
import { ErrorLine } from "./error-line";

/** A durable outcome still `unresolved` is read again this often, until it settles. */
const OUTCOME_RETRY_MS = 1_500;

export function OutcomeLine({ mutationId, completed }: { mutationId: string; completed: boolean }) {
  const [outcome, setOutcome] = useState<MutationOutcome>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const stop = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const row = await engine.mutation(mutationId, { signal: stop.signal });
        if (stop.signal.aborted) return;
        setOutcome(row);
        if (row.state === "unresolved") timer = setTimeout(load, OUTCOME_RETRY_MS);
      } catch (err) {
        if (!stop.signal.aborted) setError(errorText(err));
      }
    };
    void load();
    return () => {
      stop.abort();
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
          · <a href={href.outcomes}>reconcile</a>
        </>
      ) : null}
    </p>
  );
}
