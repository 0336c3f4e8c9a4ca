// One intent row (issue 28): an approved mutation's row facts are built once
// (intentRowOf) for the intent, the not_executed row of a call never sent and
// the pipeline's checkpoint. They are named as contract section 8's
// mutation_outcome/v1 names them: with the run's fields and the times added
// the way the row is written, they parse with the wire's strict schema.
import { describe, expect, it } from "vitest";
import { intentRowOf } from "../../src/execution/tool-calls";
import { mutationOutcomeSchema } from "../../src/wire/mutation-outcome-schema";

const T0 = Date.UTC(2026, 11, 2, 9, 0, 0);
const call = {
  tool_call_id: "call_1",
  tool_name: "mcp__demo__create_dashboard",
  arguments_digest: `sha256:${"ab".repeat(32)}`,
  approved_at: T0,
};
const run = { run_id: "run_01", channel_id: "C1", delivery_id: null };

/** The unresolved row the intent writes (contract section 8): the facts, the run's fields, its times. */
function writtenRow(facts: ReturnType<typeof intentRowOf>) {
  return {
    schema: "mutation_outcome/v1",
    ...run,
    ...facts,
    approved_at: new Date(facts.approved_at).toISOString(),
    state: "unresolved",
    dispatched: false,
    created_at: new Date(T0 + 5).toISOString(),
  };
}

describe("intentRowOf", () => {
  it("an automatic approval: approval_id null, approved_by automatic, no votes; the row parses as mutation_outcome/v1", () => {
    const facts = intentRowOf({ ...call, grant: "automatic" }, "mut_1");
    expect(facts).toEqual({
      mutation_id: "mut_1",
      tool_call_id: "call_1",
      tool_name: "mcp__demo__create_dashboard",
      arguments_digest: call.arguments_digest,
      approval_id: null,
      approved_by: "automatic",
      approvals: [],
      approved_at: T0,
    });
    expect(mutationOutcomeSchema.parse(writtenRow(facts))).toMatchObject({ approval_id: null, approved_by: "automatic" });
  });

  it("a person's approval: its approval_id, the decider, every counted vote in order; the row parses as mutation_outcome/v1", () => {
    const votes = [
      { by: "access:ana@example.com", at: new Date(T0 - 20).toISOString() },
      { by: "slack:T1:U2", at: new Date(T0 - 10).toISOString() },
    ];
    const grant = {
      approval_id: "ap_1",
      level: "approve" as const,
      expires_at: T0 + 60_000,
      votes: votes.map((v) => ({ ...v, person: v.by })),
      decision: "approved" as const,
      decided_by: "slack:T1:U2",
    };
    const facts = intentRowOf({ ...call, grant }, "mut_2");
    expect(facts).toMatchObject({ approval_id: "ap_1", approved_by: "slack:T1:U2", approvals: votes });
    expect(mutationOutcomeSchema.parse(writtenRow(facts)).approvals).toEqual(votes);
  });
});
