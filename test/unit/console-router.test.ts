// The console's hash router (src/console/app/router.ts): every fragment parses, none throws.
import { describe, expect, it } from "vitest";
import { href, parseRoute } from "../../src/console/app/router";

describe("the console's hash router", () => {
  it.each([
    ["", { page: "waiting" }],
    ["#", { page: "waiting" }],
    ["#/", { page: "waiting" }],
    ["#/runs", { page: "runs", filters: {} }],
    ["#/runs/", { page: "runs", filters: {} }],
    [
      "#/runs?status=waiting&channel_id=C1&user_id=U%20a",
      { page: "runs", filters: { status: "waiting", channel_id: "C1", user_id: "U a" } },
    ],
    ["#/runs?status=bogus&channel_id=%E0%A4%A", { page: "runs", filters: { channel_id: "\uFFFD%A" } }],
    ["#/runs/?user_id=", { page: "runs", filters: {} }],
    ["#/runs/run_1", { page: "run", runId: "run_1" }],
    ["#/runs/a%2Fb", { page: "run", runId: "a/b" }],
    ["#/runs/%E0%A4%A", { page: "run", runId: "%E0%A4%A" }],
    ["#/approvals", { page: "approvals" }],
    ["#/questions", { page: "questions" }],
    ["#/outcomes", { page: "outcomes" }],
    ["#/pool", { page: "pool" }],
    ["#/pool/x", { page: "unknown", fragment: "pool/x" }],
    ["#/policy", { page: "policy" }],
    ["#/policy/1", { page: "unknown", fragment: "policy/1" }],
    ["#/audit", { page: "audit", filters: {} }],
    ["#/audit?principal=token%3Aci&action=run.trigger", { page: "audit", filters: { principal: "token:ci", action: "run.trigger" } }],
    ["#/audit?action=run.explode&principal=%20", { page: "audit", filters: {} }],
    ["#/audit/x", { page: "unknown", fragment: "audit/x" }],
    ["#/runs/a/b", { page: "unknown", fragment: "runs/a/b" }],
    ["#/runs/run_1/approvals/ap_1", { page: "run", runId: "run_1", approvalId: "ap_1" }],
    ["#/runs/run_1/approvals/", { page: "unknown", fragment: "runs/run_1/approvals/" }],
    ["#/runs/run_1/calls/ap_1", { page: "unknown", fragment: "runs/run_1/calls/ap_1" }],
    ["#/%E0%A4%A", { page: "unknown", fragment: "%E0%A4%A" }],
    ["#/nope", { page: "unknown", fragment: "nope" }],
  ])("%s", (hash, route) => {
    expect(parseRoute(hash)).toEqual(route);
  });

  it("round-trips the runs list's filters through its link", () => {
    const filters = { status: "cancelled", channel_id: "C 1&x", user_id: "U?=" } as const;
    expect(parseRoute(href.runsWith(filters))).toEqual({ page: "runs", filters });
    expect(href.runsWith({})).toBe("#/runs");
  });

  it("round-trips the audit log's filters through its link", () => {
    const filters = { principal: "access:ada@example.com", action: "access.refused" } as const;
    expect(parseRoute(href.auditWith(filters))).toEqual({ page: "audit", filters });
    expect(href.auditWith({})).toBe("#/audit");
  });

  it("round-trips a run id through its link", () => {
    for (const id of ["run_01J", "a/b c", "%E0%A4%A", "ü#?"]) expect(parseRoute(href.run(id))).toEqual({ page: "run", runId: id });
  });

  it("round-trips an approval on its run's page through its link (the one Slack posts)", () => {
    for (const id of ["ap_01J", "a/b c", "ü#?"]) {
      expect(parseRoute(href.approval("run_1", id))).toEqual({ page: "run", runId: "run_1", approvalId: id });
    }
  });
});
