// A run's mutation outcomes counted by durable state (contract section 8),
// each in its own words and tone: "1 completed", "⚠ 1 unknown".
import type { MutationOutcome, MutationState } from "../../../client/types";

const OUTCOME_WORDS: Record<MutationState, string> = {
  completed: "completed",
  not_executed: "not executed",
  outcome_unknown: "unknown",
  unresolved: "settling",
};
const OUTCOME_TONES: Record<MutationState, string> = {
  completed: "ok",
  not_executed: "stopped",
  outcome_unknown: "warn",
  unresolved: "progress",
};

export function OutcomeCounts({ rows }: { rows: MutationOutcome[] }) {
  if (rows.length === 0) return <span class="meta">none</span>;
  const counts = new Map<MutationState, number>();
  for (const r of rows) counts.set(r.state, (counts.get(r.state) ?? 0) + 1);
  return (
    <span class="outcomes">
      {[...counts].map(([state, n]) => (
        <span key={state} class={`state tone-${OUTCOME_TONES[state]}`} data-outcome={state}>
          {n} {OUTCOME_WORDS[state]}
        </span>
      ))}
    </span>
  );
}
