// The rule that makes a tool mutating or read-only and picks its approval
// level (contract sections 1, 10 and 21): host config first, a server's
// readOnlyHint only when the host trusts that server's annotations, an
// explicit destructiveHint raising an unset level to confirm. The pure rule
// (toolRule) is checked case by case and as properties over every
// combination; classifyTool is checked for where it reads trust from.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { HostConfig } from "../../src/config/config";
import type { McpToolAnnotations } from "../../src/execution/mcp-tool-list";
import { classifyTool, toolRule } from "../../src/execution/tool-policy";

const READ_HINT: McpToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const DESTRUCTIVE: McpToolAnnotations = { readOnlyHint: false, destructiveHint: true };

describe("toolRule", () => {
  it("does not trust readOnlyHint from a server the host has not marked: mutating, approve", () => {
    expect(toolRule(undefined, READ_HINT, false)).toEqual({ mutating: true, level: "approve" });
  });

  it("trusts readOnlyHint from a marked server: read-only, no approval", () => {
    expect(toolRule(undefined, READ_HINT, true)).toEqual({ mutating: false, level: null });
  });

  it("treats unknown annotations as mutating, trusted or not", () => {
    expect(toolRule(undefined, undefined, true)).toEqual({ mutating: true, level: "approve" });
    expect(toolRule(undefined, {}, true)).toEqual({ mutating: true, level: "approve" });
    expect(toolRule(undefined, { readOnlyHint: false }, true)).toEqual({ mutating: true, level: "approve" });
  });

  it("lets the host's read_only override a trusted hint in both directions", () => {
    expect(toolRule({ read_only: false }, READ_HINT, true)).toEqual({ mutating: true, level: "approve" });
    expect(toolRule({ read_only: true }, undefined, false)).toEqual({ mutating: false, level: null });
  });

  it("raises an explicit destructiveHint to confirm on any server, unless the host set a level", () => {
    expect(toolRule(undefined, DESTRUCTIVE, false)).toEqual({ mutating: true, level: "confirm" });
    expect(toolRule(undefined, DESTRUCTIVE, true)).toEqual({ mutating: true, level: "confirm" });
    expect(toolRule({ level: "approve" }, DESTRUCTIVE, false)).toEqual({ mutating: true, level: "approve" });
    expect(toolRule({ level: null }, DESTRUCTIVE, false)).toEqual({ mutating: true, level: null });
  });

  it("changes nothing for destructiveHint: false or an absent one", () => {
    expect(toolRule(undefined, { destructiveHint: false }, false)).toEqual({ mutating: true, level: "approve" });
    expect(toolRule(undefined, { ...READ_HINT, destructiveHint: false }, true)).toEqual({ mutating: false, level: null });
  });
});

// ---- properties over every combination -------------------------------------------------------

const optionalBool = fc.option(fc.boolean(), { nil: undefined });
const annotationsArb = fc.option(
  fc.record(
    {
      title: fc.string(),
      readOnlyHint: fc.boolean(),
      destructiveHint: fc.boolean(),
      idempotentHint: fc.boolean(),
      openWorldHint: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);
const policyArb = fc.option(
  fc.record({ level: fc.constantFrom("approve" as const, "confirm" as const, null), read_only: fc.boolean() }, { requiredKeys: [] }),
  { nil: undefined },
);

describe("toolRule, as properties", () => {
  it("a tool is read-only only by the host's read_only, or a trusted readOnlyHint the host does not override", () => {
    fc.assert(
      fc.property(policyArb, annotationsArb, fc.boolean(), (policy, annotations, trusted) => {
        const { mutating } = toolRule(policy, annotations, trusted);
        const expectedReadOnly = policy?.read_only !== undefined ? policy.read_only : trusted && annotations?.readOnlyHint === true;
        expect(mutating).toBe(!expectedReadOnly);
        // An untrusted server's annotations never make a tool read-only.
        if (!trusted && policy?.read_only === undefined) expect(mutating).toBe(true);
      }),
    );
  });

  it("the host's level wins; else confirm for destructiveHint: true; else approve for a mutation and none for a read", () => {
    fc.assert(
      fc.property(policyArb, annotationsArb, fc.boolean(), (policy, annotations, trusted) => {
        const { mutating, level } = toolRule(policy, annotations, trusted);
        if (policy?.level !== undefined) expect(level).toBe(policy.level);
        else if (annotations?.destructiveHint === true) expect(level).toBe("confirm");
        else expect(level).toBe(mutating ? "approve" : null);
      }),
    );
  });

  it("trusting a server's annotations can only lower the care a tool gets, and only through readOnlyHint", () => {
    fc.assert(
      fc.property(policyArb, annotationsArb, (policy, annotations) => {
        const untrusted = toolRule(policy, annotations, false);
        const trusted = toolRule(policy, annotations, true);
        if (annotations?.readOnlyHint !== true) expect(trusted).toEqual(untrusted);
        if (trusted.mutating) expect(untrusted.mutating).toBe(true);
      }),
    );
  });

  it("an absent destructiveHint changes nothing against destructiveHint: false", () => {
    fc.assert(
      fc.property(policyArb, annotationsArb, fc.boolean(), optionalBool, (policy, annotations, trusted, readOnlyHint) => {
        const { destructiveHint: _dropped, ...rest } = { ...annotations, ...(readOnlyHint === undefined ? {} : { readOnlyHint }) };
        expect(toolRule(policy, rest, trusted)).toEqual(toolRule(policy, { ...rest, destructiveHint: false }, trusted));
      }),
    );
  });
});

// ---- classifyTool: where trust comes from ----------------------------------------------------

function config(servers: Record<string, boolean>, policy: HostConfig["TOOL_POLICY"] = {}): Pick<HostConfig, "TOOL_POLICY" | "MCP_SERVERS"> {
  return {
    TOOL_POLICY: policy,
    MCP_SERVERS: Object.fromEntries(
      Object.entries(servers).map(([name, trust]) => [name, { url: `http://127.0.0.1:9/${name}`, trust_annotations: trust }]),
    ),
  };
}

describe("classifyTool", () => {
  const listing = { description: "  List things.  ", annotations: { title: "List", ...READ_HINT } };

  it("reads trust from the tool's own server in MCP_SERVERS", () => {
    const servers = config({ trusted: true, plain: false });
    expect(classifyTool("mcp__trusted__list", listing, servers)).toMatchObject({ kind: "mcp", mutating: false, level: null });
    expect(classifyTool("mcp__plain__list", listing, servers)).toMatchObject({ kind: "mcp", mutating: true, level: "approve" });
    // A server missing from MCP_SERVERS is not trusted.
    expect(classifyTool("mcp__other__list", listing, servers)).toMatchObject({ mutating: true, level: "approve" });
  });

  it("carries the annotations as given and the trimmed description", () => {
    const tool = classifyTool("mcp__plain__list", listing, config({ plain: false }));
    expect(tool.annotations).toEqual({ title: "List", readOnlyHint: true, openWorldHint: false });
    expect(tool.description).toBe("List things.");
    const bare = classifyTool("mcp__plain__list", undefined, config({ plain: false }));
    expect(bare).not.toHaveProperty("annotations");
    expect(bare).toMatchObject({ mutating: true, level: "approve", description: "Call mcp__plain__list." });
  });

  it("applies the host's TOOL_POLICY by the full tool name", () => {
    const servers = config({ plain: false }, { mcp__plain__list: { read_only: true } });
    expect(classifyTool("mcp__plain__list", listing, servers)).toMatchObject({ mutating: false, level: null });
  });

  it("keeps human__ask built in: not mutating, no approval", () => {
    expect(classifyTool("human__ask", undefined, config({}))).toMatchObject({ kind: "human_ask", mutating: false, level: null });
  });
});
