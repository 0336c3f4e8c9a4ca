// Test set-up for rows of mutation_outcomes: the checkpoint step on its own.
//
// The engine has one checkpoint, markDispatchedUnlessPrior
// (src/outcomes/mutation-outcomes.ts), which folds in the cross-run
// prior-outcome check and so refuses the later of two identical rows while the
// earlier is unresolved or outcome_unknown. Tests that build several identical
// rows in chosen states (listings, projections, the prior-unknown rule itself)
// need the checkpoint without that check: this is it, and nothing in src/
// uses it.
import { expect } from "vitest";

/** unresolved & dispatched=0 → dispatched=1, as the checkpoint does; fails the test for any other row. */
export async function checkpointRow(db: D1Database, mutationId: string): Promise<void> {
  const row = await db
    .prepare(
      `UPDATE mutation_outcomes SET dispatched = 1
       WHERE mutation_id = ? AND state = 'unresolved' AND dispatched = 0
       RETURNING mutation_id`,
    )
    .bind(mutationId)
    .first<{ mutation_id: string }>();
  expect(row, `${mutationId} should be an unresolved, undispatched row`).toEqual({ mutation_id: mutationId });
}
