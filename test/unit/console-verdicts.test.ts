// The console's words and tones for calls and runs (src/console/app/verdicts.ts):
// success only where the contract says so; outcome_unknown a warning; cancelled grey.
import { describe, expect, it } from "vitest";
import type { MutationOutcome } from "../../src/client/types";
import type { CallCard } from "../../src/console/app/call-cards";
import { cardVerdict, runVerdict } from "../../src/console/app/verdicts";

const card = (over: Partial<CallCard>): CallCard => ({
  tool_call_id: "c1",
  tool_name: "t",
  stage: "executed",
  approval_required: true,
  completed: true,
  ...over,
});

const row = (over: Partial<MutationOutcome>): MutationOutcome => ({
  schema: "mutation_outcome/v1",
  mutation_id: "mut_1",
  run_id: "run_1",
  channel_id: "C1",
  delivery_id: null,
  tool_call_id: "c1",
  approval_id: "a1",
  tool_name: "t",
  arguments_digest: "sha256:x",
  approved_by: "token:root",
  approved_at: "2026-11-29T10:00:00.000Z",
  state: "completed",
  dispatched: true,
  created_at: "2026-11-29T10:00:00.000Z",
  ...over,
});

describe("card verdicts", () => {
  it.each([
    [card({ stage: "waiting_for_approval" }), undefined, "waiting", "waiting for approval"],
    [card({ stage: "waiting_for_answer" }), undefined, "waiting", "waiting for an answer"],
    [card({ stage: "not_executed", reason: "denied" }), undefined, "stopped", "not executed: denied"],
    [card({ stage: "not_executed", reason: "cancelled" }), undefined, "stopped", "not executed: cancelled"],
    [card({ stage: "not_executed", reason: "budget_exhausted" }), undefined, "bad", "not executed: budget exhausted"],
    // Contract section 23: the console names the change.
    [
      card({ stage: "not_executed", reason: "tool_changed" }),
      undefined,
      "bad",
      "not executed: the tool's schema changed after it was approved",
    ],
    [card({ result: { is_error: false, content_bytes: 2, summary: "ok" } }), undefined, "ok", "executed"],
    [card({ error: { code: "tool_error", message: "x" } }), undefined, "bad", "failed: tool error"],
    [card({ result: { is_error: true, content_bytes: 2, summary: "no" } }), undefined, "bad", "the tool answered with an error"],
    [
      card({ mutation_id: "mut_1", error: { code: "transport_timeout", message: "x" } }),
      undefined,
      "warn",
      "executed with transport timeout",
    ],
    [
      card({ mutation_id: "mut_1", error: { code: "transport_timeout", message: "x" } }),
      row({ state: "outcome_unknown" }),
      "warn",
      "outcome unknown",
    ],
    [card({ mutation_id: "mut_1" }), row({ state: "unresolved" }), "progress", "settling"],
    [card({ mutation_id: "mut_1" }), row({ state: "completed" }), "ok", "completed"],
    [
      card({ mutation_id: "mut_1" }),
      row({ state: "not_executed", reconciliation: { outcome: "not_executed", reconciled_by: "console:ada", evidence: "e", at: "x" } }),
      "stopped",
      "did not happen (reconciled by console:ada)",
    ],
  ] as const)("%#: %s", (c, outcome, tone, words) => {
    expect(cardVerdict(c, outcome)).toEqual({ tone, words });
  });
});

describe("run verdicts", () => {
  const none = { approval: false, answer: false };
  it.each([
    ["running", { approval: true, answer: false }, false, "waiting", "waiting for approval"],
    ["running", { approval: false, answer: true }, false, "waiting", "waiting for an answer"],
    ["running", none, false, "progress", "running"],
    ["completed", none, false, "ok", "completed"],
    ["completed", none, true, "warn", "completed, outcome unknown"],
    ["cancelled", none, false, "stopped", "cancelled"],
    ["cancelled", none, true, "warn", "cancelled, outcome unknown"],
    ["failed", none, false, "bad", "failed"],
  ] as const)("%s %o unknown=%s", (status, waits, unknown, tone, words) => {
    expect(runVerdict(status, waits, unknown)).toEqual({ tone, words });
  });
});
