// The Policy page's diff (src/console/app/policy-diff.ts): leaves by RFC 6901 pointer, marked where `loosens` names them.
import { describe, expect, it } from "vitest";
import { leaves, policyDiff, shownValue } from "../../src/console/app/policy-diff";

describe("the console's policy diff", () => {
  it("flattens a document to RFC 6901 leaves, escaping ~ and /, an array one leaf", () => {
    const map = leaves({ tools: { "a/b~c": { approvers: ["x", "y"] } }, groups: {} });
    expect([...map.entries()]).toEqual([
      ["/tools/a~1b~0c/approvers", ["x", "y"]],
      ["/groups", {}],
    ]);
  });

  it("lists the changed, added and removed pointers in order, marking the loosening ones", () => {
    const from = { tools: { t: { level: "confirm" } }, groups: {}, budget: { a: 1, b: 2 } };
    const to = { tools: { t: { level: "approve" } }, groups: { ops: ["u"] }, budget: { b: 2, c: 3 } };
    const rows = policyDiff(from, to, [{ path: "/tools/t/level" }, { path: "/budget/c" }]);
    expect(rows).toEqual([
      { path: "/budget/a", kind: "removed", from: 1, loosens: false },
      { path: "/budget/c", kind: "added", to: 3, loosens: true },
      { path: "/groups/ops", kind: "added", to: ["u"], loosens: false },
      { path: "/tools/t/level", kind: "changed", from: "confirm", to: "approve", loosens: true },
    ]);
  });

  it("finds nothing between equal documents, member order aside", () => {
    expect(policyDiff({ budget: { a: 1, b: 2 } }, { budget: { b: 2, a: 1 } })).toEqual([]);
    expect(shownValue(undefined)).toBe("—");
    expect(shownValue(["x"])).toBe('["x"]');
  });
});
