// The console's audit page links each entry's target (contract section 25):
// a run, an approval on its run's page, a question's run, what a token did,
// a halt and a policy version; anything else stays text.
import { describe, expect, it } from "vitest";
import { targetLink } from "../../src/console/app/audit-targets";

describe("targetLink", () => {
  it("links runs, approvals, questions, tokens, halts and policy versions", () => {
    expect(targetLink("run_01JABC")?.href).toBe("#/runs/run_01JABC");
    expect(targetLink("run_01JABC/approvals/apr_9")?.href).toBe("#/runs/run_01JABC/approvals/apr_9");
    expect(targetLink("run_01JABC/inputs/call_1")?.href).toBe("#/runs/run_01JABC");
    expect(targetLink("token:ci-bot")?.href).toBe("#/audit?principal=token%3Aci-bot");
    expect(targetLink("halt_01JXYZ")?.href).toBe("/api/halts/halt_01JXYZ");
    expect(targetLink("policy/versions/7")?.href).toBe("/api/policy/versions/7");
    expect(targetLink("GET /api/audit")).toBeNull();
    expect(targetLink("audit/checkpoints")).toBeNull();
  });
});
