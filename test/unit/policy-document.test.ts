// The policy document (contract section 24) is validated exactly like the
// three settings it holds, with paths into the document.
import { describe, expect, it } from "vitest";
import { validatePolicyDocument } from "../../src/config/policy-document";

const NO_RETENTION = { MUTATION_RETENTION_DAYS: undefined };

describe("validatePolicyDocument", () => {
  it("accepts the settings' shapes and refuses what they refuse, naming the path", () => {
    expect(validatePolicyDocument({ tools: {}, groups: {}, budget: {} }, NO_RETENTION).ok).toBe(true);
    expect(validatePolicyDocument({ tools: { x: { level: "maybe" } }, groups: {}, budget: {} }, NO_RETENTION)).toMatchObject({
      ok: false,
      details: [{ path: "tools.x.level" }],
    });
    expect(validatePolicyDocument({ tools: { x: { approvers: ["*"] } }, groups: {}, budget: {} }, NO_RETENTION).ok).toBe(false);
    expect(validatePolicyDocument({ tools: {}, groups: {}, budget: {}, extra: 1 }, NO_RETENTION).ok).toBe(false);
  });

  it("runs the settings' cross-checks: unknown groups, limits outliving MUTATION_RETENTION_DAYS", () => {
    expect(validatePolicyDocument({ tools: { x: { approvers: ["group:sre"] } }, groups: {}, budget: {} }, NO_RETENTION)).toEqual({
      ok: false,
      details: [{ path: "tools.x.approvers.0", message: "group:sre is not defined in APPROVER_GROUPS" }],
    });
    const long = { tools: { x: { limits: [{ max: 1, per: "30d", by: "all" }] } }, groups: {}, budget: {} };
    expect(validatePolicyDocument(long, { MUTATION_RETENTION_DAYS: 7 })).toMatchObject({
      ok: false,
      details: [{ path: "tools.x.limits.0.per" }],
    });
    expect(validatePolicyDocument(long, NO_RETENTION).ok).toBe(true);
  });
});
