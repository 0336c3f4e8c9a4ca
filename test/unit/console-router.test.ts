// The console's hash router (src/console/app/router.ts): every fragment parses, none throws.
import { describe, expect, it } from "vitest";
import { href, parseRoute } from "../../src/console/app/router";

describe("the console's hash router", () => {
  it.each([
    ["", { page: "waiting" }],
    ["#", { page: "waiting" }],
    ["#/", { page: "waiting" }],
    ["#/runs", { page: "runs" }],
    ["#/runs/", { page: "runs" }],
    ["#/runs/run_1", { page: "run", runId: "run_1" }],
    ["#/runs/a%2Fb", { page: "run", runId: "a/b" }],
    ["#/runs/%E0%A4%A", { page: "run", runId: "%E0%A4%A" }],
    ["#/approvals", { page: "approvals" }],
    ["#/questions", { page: "questions" }],
    ["#/outcomes", { page: "outcomes" }],
    ["#/pool", { page: "pool" }],
    ["#/pool/x", { page: "unknown", fragment: "pool/x" }],
    ["#/runs/a/b", { page: "unknown", fragment: "runs/a/b" }],
    ["#/%E0%A4%A", { page: "unknown", fragment: "%E0%A4%A" }],
    ["#/nope", { page: "unknown", fragment: "nope" }],
  ])("%s", (hash, route) => {
    expect(parseRoute(hash)).toEqual(route);
  });

  it("round-trips a run id through its link", () => {
    for (const id of ["run_01J", "a/b c", "%E0%A4%A", "ü#?"]) expect(parseRoute(href.run(id))).toEqual({ page: "run", runId: id });
  });
});
