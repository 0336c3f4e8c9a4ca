// Property tests of the loosening detector (src/policy/policy-loosening.ts)
// against contract section 24's list, written here independently of it: a
// change tightens only if it adds `approvers` where there were none; removes
// a pattern from `approvers` or `escalate_to`, or a group member; raises
// `approvals_required` or a `level` (none -> approve -> confirm); turns
// `self_approval` off or removes `read_only`; lowers a budget or removes a
// tool from it; adds a limit, lowers its `max` or lengthens its `per`;
// lengthens or removes `escalate_after`; or changes `remind_before`. Anything
// else loosens, a pattern's edited text or a changed `by` included.
//
// The generators build a random policy, then apply one change the list does
// NOT name (a loosening): the detector must never answer [] (call it
// tightening). And a run of changes the list names, each from the version
// before: the detector answers [] (so the first property is not passed by
// calling everything loosening).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loosenings, type PolicyShape } from "../../src/policy/policy-loosening";

const RUNS = 2_000;
type Entry = Record<string, unknown>;
type Doc = { tools: Record<string, Entry>; groups: Record<string, string[]>; budget: Record<string, number> };

const TOOLS = ["*", "mcp__demo__create_dashboard", "mcp__demo__delete_dashboard", "mcp__ops__page/oncall~x"];
const PATTERNS = ["token:alice", "token:sre-*", "access:bob@acme.com", "access:*@acme.com", "slack:T1:U1", "group:sre", "group:ops"];
const MEMBERS = ["token:alice", "access:carol@acme.com", "slack:T1:*", "token:ci-*"];
const DURATIONS = ["30s", "1m", "90s", "5m", "1h", "2h", "1d", "7d"];
const seconds = (d: string) => Number(d.slice(0, -1)) * { s: 1, m: 60, h: 3600, d: 86400 }[d.at(-1) as "s" | "m" | "h" | "d"];

const subset = <T>(pool: readonly T[], min = 0) => fc.subarray([...pool], { minLength: min });
const limit = fc.record({
  max: fc.integer({ min: 1, max: 50 }),
  per: fc.constantFrom(...DURATIONS),
  by: fc.constantFrom("principal", "channel", "all"),
});

const entry = (isDefaults: boolean) =>
  fc.record(
    {
      approvers: subset(PATTERNS, 1),
      approvals_required: fc.integer({ min: 1, max: 5 }),
      self_approval: fc.boolean(),
      limits: fc.array(limit, { minLength: 1, maxLength: 3 }),
      escalate_after: fc.constantFrom(...DURATIONS),
      remind_before: fc.constantFrom(...DURATIONS),
      escalate_to: subset(PATTERNS, 1),
      ...(isDefaults ? {} : { level: fc.constantFrom(null, "approve", "confirm"), read_only: fc.boolean() }),
    },
    { requiredKeys: [] },
  ) as fc.Arbitrary<Entry>;

const doc: fc.Arbitrary<Doc> = fc.record({
  tools: fc
    .tuple(...TOOLS.map((name) => fc.option(entry(name === "*"), { nil: undefined })))
    .map((entries) => Object.fromEntries(TOOLS.flatMap((name, i) => (entries[i] === undefined ? [] : [[name, entries[i]!]])))),
  groups: fc.record({ sre: subset(MEMBERS, 1), ops: subset(MEMBERS, 1) }, { requiredKeys: [] }) as fc.Arbitrary<Record<string, string[]>>,
  budget: fc.dictionary(fc.constantFrom(...TOOLS.slice(1)), fc.integer({ min: 0, max: 10 })),
});

const copy = (d: Doc): Doc => structuredClone(d);
/** What a tool's field is as it applies: its own, else `"*"`'s (the inherited fields). */
const INHERITED = ["approvers", "approvals_required", "self_approval", "remind_before", "escalate_after", "escalate_to"];
const appliedOf = (d: Doc, tool: string, field: string) =>
  d.tools[tool]?.[field] ?? (tool !== "*" && INHERITED.includes(field) ? d.tools["*"]?.[field] : undefined);

/** One change the contract does not list as tightening, applied to a copy; null when it does not apply to this document. */
type Change = (d: Doc, pick: number) => Doc | null;
const at = <T>(list: readonly T[], pick: number): T => list[pick % list.length]!;
const entryWith = (d: Doc, field: string, pick: number) => {
  const names = Object.keys(d.tools).filter((n) => d.tools[n]![field] !== undefined);
  return names.length === 0 ? null : at(names, pick);
};

const LOOSENING: Record<string, Change> = {
  "adds a pattern to approvers": (d, pick) => {
    const name = entryWith(d, "approvers", pick);
    if (name === null) return null;
    const list = d.tools[name]!.approvers as string[];
    const extra = PATTERNS.find((p) => !list.includes(p)) ?? "token:brand-new";
    const next = copy(d);
    next.tools[name]!.approvers = [...list, extra];
    return next;
  },
  "removes approvers": (d, pick) => {
    const name = entryWith(d, "approvers", pick);
    if (name === null) return null;
    const next = copy(d);
    delete next.tools[name]!.approvers;
    return next;
  },
  "edits a pattern's text": (d, pick) => {
    const name = entryWith(d, "approvers", pick);
    if (name === null) return null;
    const next = copy(d);
    const list = next.tools[name]!.approvers as string[];
    list[pick % list.length] = `${list[pick % list.length]}x`;
    return next;
  },
  "lowers approvals_required": (d, pick) => {
    const names = Object.keys(d.tools).filter((n) => ((d.tools[n]!.approvals_required as number | undefined) ?? 1) > 1);
    if (names.length === 0) return null;
    const name = at(names, pick);
    const next = copy(d);
    const now = next.tools[name]!.approvals_required as number;
    if (pick % 2 === 0) next.tools[name]!.approvals_required = now - 1;
    else delete next.tools[name]!.approvals_required;
    return next;
  },
  "lowers a level": (d, pick) => {
    const names = Object.keys(d.tools).filter((n) => d.tools[n]!.level === "confirm" || d.tools[n]!.level === "approve");
    if (names.length === 0) return null;
    const name = at(names, pick);
    const next = copy(d);
    next.tools[name]!.level = next.tools[name]!.level === "confirm" ? at(["approve", null], pick) : null;
    return next;
  },
  "turns self_approval on": (d, pick) => {
    const name = entryWith(d, "self_approval", pick);
    if (name === null || d.tools[name]!.self_approval !== false) return null;
    const next = copy(d);
    if (pick % 2 === 0) next.tools[name]!.self_approval = true;
    else delete next.tools[name]!.self_approval;
    return next;
  },
  "adds read_only": (d, pick) => {
    const names = TOOLS.slice(1).filter((n) => d.tools[n]?.read_only !== true);
    const name = at(names, pick);
    const next = copy(d);
    next.tools[name] = { ...next.tools[name], read_only: true };
    return next;
  },
  "raises a budget or adds a tool to it": (d, pick) => {
    const name = at(TOOLS.slice(1), pick);
    const next = copy(d);
    next.budget[name] = (d.budget[name] ?? -1) + 1 + (pick % 3);
    return next;
  },
  "removes a limit": (d, pick) => {
    const name = entryWith(d, "limits", pick);
    if (name === null) return null;
    const next = copy(d);
    const limits = next.tools[name]!.limits as unknown[];
    limits.splice(pick % limits.length, 1);
    if (limits.length === 0) delete next.tools[name]!.limits;
    return next;
  },
  "raises a limit's max": (d, pick) => {
    const name = entryWith(d, "limits", pick);
    if (name === null) return null;
    const next = copy(d);
    const limits = next.tools[name]!.limits as { max: number }[];
    limits[pick % limits.length]!.max += 1;
    return next;
  },
  "shortens a limit's per": (d, pick) => {
    const name = entryWith(d, "limits", pick);
    if (name === null) return null;
    const next = copy(d);
    const l = (next.tools[name]!.limits as { per: string }[])[pick % (next.tools[name]!.limits as unknown[]).length]!;
    const shorter = DURATIONS.filter((x) => seconds(x) < seconds(l.per));
    if (shorter.length === 0) return null;
    l.per = at(shorter, pick);
    return next;
  },
  "changes a limit's by": (d, pick) => {
    const name = entryWith(d, "limits", pick);
    if (name === null) return null;
    const next = copy(d);
    const l = (next.tools[name]!.limits as { by: string }[])[pick % (next.tools[name]!.limits as unknown[]).length]!;
    l.by = l.by === "all" ? "channel" : "all";
    return next;
  },
  "adds a group member": (d, pick) => {
    const name = at(["sre", "ops"], pick);
    const members = d.groups[name] ?? [];
    const extra = MEMBERS.find((m) => !members.includes(m));
    if (extra === undefined) return null;
    const next = copy(d);
    next.groups[name] = [...members, extra];
    return next;
  },
  "adds or shortens escalate_after": (d, pick) => {
    const name = at(TOOLS, pick);
    const now = d.tools[name]?.escalate_after as string | undefined;
    const shorter = DURATIONS.filter((x) => now === undefined || seconds(x) < seconds(now));
    if (shorter.length === 0) return null;
    const next = copy(d);
    next.tools[name] = { ...next.tools[name], escalate_after: at(shorter, pick) };
    return next;
  },
  "adds a pattern to escalate_to": (d, pick) => {
    const name = at(TOOLS, pick);
    const list = (d.tools[name]?.escalate_to as string[] | undefined) ?? [];
    const extra = PATTERNS.find((p) => !list.includes(p));
    if (extra === undefined) return null;
    const next = copy(d);
    next.tools[name] = { ...next.tools[name], escalate_to: [...list, extra] };
    return next;
  },
};

/** Changes the contract lists as tightening, each judged on the tool as it applies (so `"*"` cannot turn it into a loosening). */
const TIGHTENING: Record<string, Change> = {
  "adds approvers where there were none": (d, pick) => {
    const names = TOOLS.filter(
      (n) => appliedOf(d, n, "approvers") === undefined && (n !== "*" || TOOLS.every((t) => appliedOf(d, t, "approvers") === undefined)),
    );
    if (names.length === 0) return null;
    const name = at(names, pick);
    const next = copy(d);
    next.tools[name] = { ...next.tools[name], approvers: [at(PATTERNS, pick)] };
    return next;
  },
  "removes a pattern from approvers": (d, pick) => {
    const names = Object.keys(d.tools).filter((n) => ((d.tools[n]!.approvers as string[] | undefined)?.length ?? 0) > 1);
    if (names.length === 0) return null;
    const name = at(names, pick);
    const next = copy(d);
    (next.tools[name]!.approvers as string[]).splice(pick % (next.tools[name]!.approvers as string[]).length, 1);
    return next;
  },
  "raises approvals_required": (d, pick) => {
    const name = at(TOOLS, pick);
    const highest = Math.max(...TOOLS.map((t) => (appliedOf(d, t, "approvals_required") as number | undefined) ?? 1));
    if (highest >= 5) return null;
    const next = copy(d);
    next.tools[name] = { ...next.tools[name], approvals_required: highest + 1 };
    if (name === "*")
      for (const t of TOOLS.slice(1)) if (next.tools[t]?.approvals_required !== undefined) next.tools[t]!.approvals_required = highest + 1;
    return next;
  },
  "raises a level to confirm": (d, pick) => {
    const name = at(TOOLS.slice(1), pick);
    if (d.tools[name]?.level === "confirm") return null;
    const next = copy(d);
    next.tools[name] = { ...next.tools[name], level: "confirm" };
    return next;
  },
  "turns self_approval off": (d, pick) => {
    const name = at(TOOLS, pick);
    if (appliedOf(d, name, "self_approval") === false) return null;
    const next = copy(d);
    next.tools[name] = { ...next.tools[name], self_approval: false };
    if (name === "*") for (const t of TOOLS.slice(1)) if (next.tools[t]?.self_approval !== undefined) next.tools[t]!.self_approval = false;
    return next;
  },
  "removes read_only": (d, pick) => {
    const names = TOOLS.slice(1).filter((n) => d.tools[n]?.read_only === true);
    if (names.length === 0) return null;
    const next = copy(d);
    delete next.tools[at(names, pick)]!.read_only;
    return next;
  },
  "lowers a budget or removes a tool from it": (d, pick) => {
    const names = Object.keys(d.budget);
    if (names.length === 0) return null;
    const name = at(names, pick);
    const next = copy(d);
    if (pick % 2 === 0 || d.budget[name] === 0) delete next.budget[name];
    else next.budget[name] = d.budget[name]! - 1;
    return next;
  },
  "adds a limit": (d, pick) => {
    const name = at(TOOLS, pick);
    const next = copy(d);
    const limits = (next.tools[name]?.limits as unknown[] | undefined) ?? [];
    next.tools[name] = { ...next.tools[name], limits: [...limits, { max: 5, per: "1h", by: "all" }] };
    return next;
  },
  "lowers a limit's max": (d, pick) => {
    const name = entryWith(d, "limits", pick);
    if (name === null) return null;
    const next = copy(d);
    const l = (next.tools[name]!.limits as { max: number }[])[pick % (next.tools[name]!.limits as unknown[]).length]!;
    if (l.max <= 1) return null;
    l.max -= 1;
    return next;
  },
  "removes a group member": (d, pick) => {
    const names = Object.keys(d.groups).filter((g) => d.groups[g]!.length > 1);
    if (names.length === 0) return null;
    const next = copy(d);
    next.groups[at(names, pick)]!.splice(0, 1);
    return next;
  },
  "changes remind_before": (d, pick) => {
    const name = at(TOOLS, pick);
    const next = copy(d);
    next.tools[name] = { ...next.tools[name], remind_before: at(DURATIONS, pick) };
    return next;
  },
};

const change = (changes: Record<string, Change>) => fc.tuple(fc.constantFrom(...Object.keys(changes)), fc.nat({ max: 1_000 }));

describe("the loosening detector (contract section 24)", () => {
  it("never calls a loosening version tightening", () => {
    fc.assert(
      fc.property(doc, change(LOOSENING), (before, [name, pick]) => {
        const after = LOOSENING[name]!(before, pick);
        fc.pre(after !== null && JSON.stringify(after) !== JSON.stringify(before));
        expect(loosenings(before as PolicyShape, after as PolicyShape), name).not.toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  it("answers [] for a run of listed tightenings (so it does not call everything loosening)", () => {
    fc.assert(
      fc.property(doc, fc.array(change(TIGHTENING), { minLength: 1, maxLength: 4 }), (start, steps) => {
        let before = start;
        for (const [name, pick] of steps) {
          const after = TIGHTENING[name]!(before, pick);
          if (after === null) continue;
          expect(loosenings(before as PolicyShape, after as PolicyShape), name).toEqual([]);
          before = after;
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("lists each loosening as an RFC 6901 path with from and to", () => {
    const before = { tools: { "mcp__a__b/c": { approvers: ["token:alice"] } }, groups: {}, budget: { "mcp__a__b/c": 1 } };
    const after = { tools: { "mcp__a__b/c": { approvers: ["token:alice", "token:bob"] } }, groups: {}, budget: { "mcp__a__b/c": 2 } };
    expect(loosenings(before, after)).toEqual([
      { path: "/tools/mcp__a__b~1c/approvers", from: ["token:alice"], to: ["token:alice", "token:bob"] },
      { path: "/budget/mcp__a__b~1c", from: 1, to: 2 },
    ]);
    expect(loosenings(after, before)).toEqual([]);
  });
});
