// Properties of halts (contract section 23) over the real D1 of miniflare,
// generated with fast-check:
//  - the checkpoint statement's halt clause (SQL) and the pure rule the
//    decisions, proposals and triggers use (src/policy/halt-scope.ts) agree
//    on every row and halt: refused exactly when haltCovers says so;
//  - for any interleaving of checkpoints, halts and releases (each step's
//    operations sent at once), no checkpoint that commits after a halt in its
//    scope dispatches: no dispatched row has a dispatched_at inside a covering
//    halt's [engaged_at, released_at).
import { env } from "cloudflare:test";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { insertIntent, markDispatchedUnlessPrior, newMutationId } from "../../src/outcomes/mutation-outcomes";
import { engageHalt, voteRelease } from "../../src/outcomes/halts";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";
import { type ActiveHalt, haltCovers, type HaltScope } from "../../src/policy/halt-scope";

const SCALE = Math.max(1, Number(env.FUZZ_RUNS || 0) / 2000);
const runs = (n: number) => Math.ceil(n * SCALE);

afterEach(async () => {
  await env.DB.prepare(`UPDATE halts SET status = 'released', released_at = '2000-01-01T00:00:00.000Z' WHERE status = 'active'`).run();
});

interface Facts {
  tool: string;
  server: string;
  requestedBy: string;
  onBehalfOf: string | null;
  person: string | null;
}

const TOOLS = ["mcp__demo__create_dashboard", "mcp__demo__update_dashboard", "mcp__ops__restart"];
const PRINCIPALS = ["token:agent-a", "token:agent-b", "access:ann@example.com", "slack:T1:U1"];
const PERSONS = [null, "access:ann@example.com", "access:bob@example.com"];

const factsArb: fc.Arbitrary<Facts> = fc
  .record({
    tool: fc.constantFrom(...TOOLS),
    requestedBy: fc.constantFrom(...PRINCIPALS),
    onBehalfOf: fc.constantFrom(null, ...PRINCIPALS),
    person: fc.constantFrom(...PERSONS),
  })
  .map((f) => ({ ...f, server: f.tool.split("__")[1]! }));

const scopeArb: fc.Arbitrary<{ scope: HaltScope; person: string | null }> = fc.oneof(
  fc.constant({ scope: { kind: "all" } as HaltScope, person: null }),
  fc.constantFrom("demo", "ops").map((value) => ({ scope: { kind: "server", value } as HaltScope, person: null })),
  fc.constantFrom(...TOOLS).map((value) => ({ scope: { kind: "tool", value } as HaltScope, person: null })),
  fc
    .record({ value: fc.constantFrom(...PRINCIPALS), person: fc.constantFrom(...PERSONS) })
    .map(({ value, person }) => ({ scope: { kind: "principal", value } as HaltScope, person })),
);

async function row(facts: Facts): Promise<string> {
  const mutationId = newMutationId();
  await insertIntent(env.DB, {
    mutationId,
    runId: newRunId(),
    channelId: "C-props",
    deliveryId: null,
    toolCallId: newToolCallId(),
    approvalId: newApprovalId(),
    toolName: facts.tool,
    argumentsDigest: `sha256:${crypto.randomUUID().replaceAll("-", "").repeat(2)}`,
    approvedBy: "token:root",
    approvedAt: new Date().toISOString(),
    server: facts.server,
    requestedBy: facts.requestedBy,
    onBehalfOf: facts.onBehalfOf,
    requesterPerson: facts.person,
  });
  return mutationId;
}

const subjectOf = (f: Facts) => ({
  requested_by: f.requestedBy,
  on_behalf_of: f.onBehalfOf ?? undefined,
  persons: [f.person],
  call: { tool_name: f.tool, server: f.server },
});

describe("halt properties", () => {
  it("the checkpoint's SQL halt clause refuses exactly the rows the pure rule says a halt covers", async () => {
    await fc.assert(
      fc.asyncProperty(factsArb, scopeArb, async (facts, { scope, person }) => {
        const mutationId = await row(facts);
        const halt = await engageHalt(env.DB, {
          scope,
          scopePerson: person,
          reason: "p",
          engagedBy: "token:root",
          required: 1,
          cancelRuns: false,
        });
        const active: ActiveHalt = {
          halt_id: halt.halt_id,
          scope_kind: scope.kind,
          scope_value: scope.kind === "all" ? null : scope.value,
          scope_person: scope.kind === "principal" ? person : null,
          engaged_at: halt.engaged_at,
        };
        const result = await markDispatchedUnlessPrior(env.DB, mutationId);
        await voteRelease(env.DB, halt.halt_id, "token:root", "token:root");
        expect(result.ok).toBe(!haltCovers(active, subjectOf(facts)));
      }),
      { numRuns: runs(60) },
    );
  });

  it("for any interleaving of checkpoints, halts and releases, no covered row is dispatched inside a halt", async () => {
    type Op = { kind: "checkpoint"; facts: Facts } | { kind: "engage"; scope: HaltScope; person: string | null } | { kind: "release" };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { weight: 4, arbitrary: factsArb.map((facts) => ({ kind: "checkpoint" as const, facts })) },
      { weight: 2, arbitrary: scopeArb.map(({ scope, person }) => ({ kind: "engage" as const, scope, person })) },
      { weight: 1, arbitrary: fc.constant({ kind: "release" as const }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(opArb, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }), async (steps) => {
        const rows = new Map<string, Facts>();
        const halts: string[] = [];
        for (const step of steps) {
          // Rows are recorded first (the intent), then every operation of the step is sent at once.
          const prepared = await Promise.all(
            step.map(async (op) => (op.kind === "checkpoint" ? { op, mutationId: await row(op.facts) } : { op, mutationId: "" })),
          );
          await Promise.all(
            prepared.map(async ({ op, mutationId }) => {
              if (op.kind === "checkpoint") {
                rows.set(mutationId, op.facts);
                await markDispatchedUnlessPrior(env.DB, mutationId);
              } else if (op.kind === "engage") {
                const h = await engageHalt(env.DB, {
                  scope: op.scope,
                  scopePerson: op.person,
                  reason: "p",
                  engagedBy: "token:root",
                  required: 1,
                  cancelRuns: false,
                });
                halts.push(h.halt_id);
              } else {
                const target = halts.shift();
                if (target !== undefined) await voteRelease(env.DB, target, "token:root", "token:root");
              }
            }),
          );
        }
        const ids = [...rows.keys()];
        const { results: dispatched } = await env.DB.prepare(
          `SELECT mutation_id, dispatched_at FROM mutation_outcomes WHERE dispatched = 1 AND mutation_id IN (${ids.map(() => "?").join(",")})`,
        )
          .bind(...ids)
          .all<{ mutation_id: string; dispatched_at: string }>();
        const { results: all } = await env.DB.prepare(
          `SELECT halt_id, scope_kind, scope_value, scope_person, engaged_at, released_at FROM halts WHERE released_at IS NULL OR released_at > '2001'`,
        ).all<ActiveHalt & { released_at: string | null }>();
        for (const d of dispatched) {
          const facts = rows.get(d.mutation_id)!;
          for (const h of all) {
            const inside = h.engaged_at < d.dispatched_at && (h.released_at === null || d.dispatched_at < h.released_at);
            if (inside && haltCovers(h, subjectOf(facts))) {
              throw new Error(
                `row ${d.mutation_id} dispatched at ${d.dispatched_at} inside ${h.halt_id} [${h.engaged_at}, ${h.released_at})`,
              );
            }
          }
        }
        await env.DB.prepare(
          `UPDATE halts SET status = 'released', released_at = '2000-01-01T00:00:00.000Z' WHERE status = 'active'`,
        ).run();
      }),
      { numRuns: runs(25) },
    );
  });
});
