// Which Slack users an approval message mentions (contract section 19): those
// the tool's effective policy names by exact id, groups expanded.
import { describe, expect, it } from "vitest";
import { slackApproversNamed } from "../../src/slack/approver-mentions";

describe("slackApproversNamed", () => {
  const groups = { sre: ["slack:U0SRE1", "slack:T1:U0SRE2", "slack:T1:U*"], none: ["access:a@x.com"] };

  it("names exact Slack ids, with or without a team, groups expanded, in order, each once; skips patterns and other kinds", () => {
    const policy = { t: { approvers: ["slack:T1:U0A", "group:sre", "slack:U0A", "token:ops", "slack:*", "group:none"] } };
    expect(slackApproversNamed({ TOOL_POLICY: policy, APPROVER_GROUPS: groups }, "t")).toEqual(["U0A", "U0SRE1", "U0SRE2"]);
  });

  it('takes the "*" defaults when the tool has no approvers of its own, and names nobody under the default rule', () => {
    const policy = { "*": { approvers: ["slack:W0GRID"] }, own: { approvers: ["slack:U0OWN"] } };
    expect(slackApproversNamed({ TOOL_POLICY: policy, APPROVER_GROUPS: {} }, "other")).toEqual(["W0GRID"]);
    expect(slackApproversNamed({ TOOL_POLICY: policy, APPROVER_GROUPS: {} }, "own")).toEqual(["U0OWN"]);
    expect(slackApproversNamed({ TOOL_POLICY: {}, APPROVER_GROUPS: groups }, "t")).toEqual([]);
  });
});
