// The policy document (contract section 24) is validated exactly like the
// three settings it holds: the same `details` a bad setting gives (paths named
// after the settings), and the same cross-checks.
import { describe, expect, it } from "vitest";
import { parsePolicyDocument } from "../../src/config/policy-document";

const TIMEOUT_MS = 300_000;

describe("parsePolicyDocument", () => {
  it("accepts the settings' shapes and refuses what they refuse, naming the path", () => {
    expect(parsePolicyDocument({ tools: {}, groups: {}, budget: {} }, undefined, TIMEOUT_MS).ok).toBe(true);
    expect(parsePolicyDocument({ tools: { x: { level: "maybe" } }, groups: {}, budget: {} }, undefined, TIMEOUT_MS)).toMatchObject({
      ok: false,
      details: [{ path: "TOOL_POLICY.x.level" }],
    });
    expect(parsePolicyDocument({ tools: { x: { approvers: ["*"] } }, groups: {}, budget: {} }, undefined, TIMEOUT_MS).ok).toBe(false);
    expect(parsePolicyDocument({ tools: {}, groups: {}, budget: {}, extra: 1 }, undefined, TIMEOUT_MS).ok).toBe(false);
  });

  it("runs the settings' cross-checks: unknown groups, limits outliving MUTATION_RETENTION_DAYS, nudges not before the timeout", () => {
    expect(parsePolicyDocument({ tools: { x: { approvers: ["group:sre"] } }, groups: {}, budget: {} }, undefined, TIMEOUT_MS)).toEqual({
      ok: false,
      details: [{ path: "TOOL_POLICY.x.approvers.0", message: "group:sre is not defined in APPROVER_GROUPS" }],
    });
    const long = { tools: { x: { limits: [{ max: 1, per: "30d", by: "all" }] } }, groups: {}, budget: {} };
    expect(parsePolicyDocument(long, 7, TIMEOUT_MS)).toMatchObject({ ok: false, details: [{ path: "TOOL_POLICY.x.limits.0.per" }] });
    expect(parsePolicyDocument(long, undefined, TIMEOUT_MS).ok).toBe(true);
    // Contract section 24: remind_before / escalate_after shorter than the approval's timeout (300 s here).
    const late = { tools: { x: { remind_before: "5m" } }, groups: {}, budget: {} };
    expect(parsePolicyDocument(late, undefined, TIMEOUT_MS)).toMatchObject({
      ok: false,
      details: [{ path: "TOOL_POLICY.x.remind_before" }],
    });
    expect(parsePolicyDocument({ tools: { x: { remind_before: "4m" } }, groups: {}, budget: {} }, undefined, TIMEOUT_MS).ok).toBe(true);
  });
});
