// Mutation limits in the checkpoint's one statement (contract section 23),
// in the real D1 of miniflare: concurrent checkpoints never exceed `max`;
// "*" limits add up with a tool's own and count every tool; `by` keys the
// window (principal: the row's person, else its requester; channel); rows
// settled not_executed with no send do not count; the check before asking
// reads the same window.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { insertIntent, markDispatchedUnlessPrior, newMutationId, settle } from "../../src/outcomes/mutation-outcomes";
import { limitBeforeAsking } from "../../src/outcomes/mutation-limits";
import type { MutationLimit } from "../../src/policy/mutation-limits";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";

interface Facts {
  tool: string;
  channel?: string;
  requestedBy?: string;
  person?: string | null;
}

async function row(f: Facts): Promise<string> {
  const mutationId = newMutationId();
  await insertIntent(env.DB, {
    mutationId,
    runId: newRunId(),
    channelId: f.channel ?? "C-limits",
    deliveryId: null,
    toolCallId: newToolCallId(),
    approvalId: newApprovalId(),
    toolName: f.tool,
    argumentsDigest: `sha256:${crypto.randomUUID().replaceAll("-", "").repeat(2)}`,
    approvedBy: "token:root",
    approvedAt: new Date().toISOString(),
    server: "demo",
    requestedBy: f.requestedBy ?? "token:root",
    requesterPerson: f.person ?? null,
  });
  return mutationId;
}

/** A tool name no other test uses, so each case counts only its own rows. */
const freshTool = () => `mcp__demo__t${crypto.randomUUID().slice(0, 8)}`;

async function race(ids: string[], limits: MutationLimit[]) {
  return Promise.all(ids.map((id) => markDispatchedUnlessPrior(env.DB, id, limits)));
}

describe("the checkpoint's limit clauses", () => {
  it("10 concurrent checkpoints under a limit of 3 per hour: exactly 3 commit, the rest are rate_limited with a hint", async () => {
    const tool = freshTool();
    const limits: MutationLimit[] = [{ max: 3, per_s: 3600, by: "all", tool }];
    const ids = await Promise.all(Array.from({ length: 10 }, () => row({ tool })));
    const results = await race(ids, limits);
    expect(results.filter((r) => r.ok)).toHaveLength(3);
    for (const r of results.filter((r) => !r.ok)) {
      expect(r).toMatchObject({ ok: false, error: "rate_limited" });
      const hint = (r as { retry_after_s: number }).retry_after_s;
      expect(hint).toBeGreaterThan(3590);
      expect(hint).toBeLessThanOrEqual(3600);
    }
    const n = await env.DB.prepare(`SELECT COUNT(*) AS n FROM mutation_outcomes WHERE tool_name = ? AND dispatched = 1`)
      .bind(tool)
      .first("n");
    expect(n).toBe(3);
  });

  it('"*" limits add up with a tool\'s own, and count every tool together', async () => {
    const [a, b] = [freshTool(), freshTool()];
    const channel = `C-star-${crypto.randomUUID().slice(0, 6)}`;
    const star: MutationLimit = { max: 2, per_s: 60, by: "channel", tool: null };
    const own: MutationLimit = { max: 5, per_s: 60, by: "all", tool: a };
    const first = await row({ tool: a, channel });
    const second = await row({ tool: b, channel });
    const third = await row({ tool: a, channel });
    expect((await markDispatchedUnlessPrior(env.DB, first, [own, star])).ok).toBe(true);
    expect((await markDispatchedUnlessPrior(env.DB, second, [star])).ok).toBe(true);
    // Tool a's own limit has room (1 of 5), but "*" counts a's and b's rows in this channel: full.
    expect(await markDispatchedUnlessPrior(env.DB, third, [own, star])).toMatchObject({ ok: false, error: "rate_limited" });
    // Another channel has its own window.
    const elsewhere = await row({ tool: a, channel: `${channel}-2` });
    expect((await markDispatchedUnlessPrior(env.DB, elsewhere, [own, star])).ok).toBe(true);
  });

  it("by principal: the row's person, else its requester; a person's two credentials share one window", async () => {
    const tool = freshTool();
    const limits: MutationLimit[] = [{ max: 1, per_s: 60, by: "principal", tool }];
    const ann1 = await row({ tool, requestedBy: "token:ann-laptop", person: "access:ann@example.com" });
    const ann2 = await row({ tool, requestedBy: "token:ann-ci", person: "access:ann@example.com" });
    const bot = await row({ tool, requestedBy: "token:bot" });
    expect((await markDispatchedUnlessPrior(env.DB, ann1, limits)).ok).toBe(true);
    expect(await markDispatchedUnlessPrior(env.DB, ann2, limits)).toMatchObject({ ok: false, error: "rate_limited" });
    expect((await markDispatchedUnlessPrior(env.DB, bot, limits)).ok).toBe(true);
  });

  it("a row settled not_executed with no send does not count; one that was sent does", async () => {
    const tool = freshTool();
    const limits: MutationLimit[] = [{ max: 1, per_s: 60, by: "all", tool }];
    const unsent = await row({ tool });
    expect((await markDispatchedUnlessPrior(env.DB, unsent, limits)).ok).toBe(true);
    await settle(env.DB, unsent, { state: "not_executed", reason: "transport_unavailable", settledAt: new Date().toISOString() });
    const next = await row({ tool });
    expect((await markDispatchedUnlessPrior(env.DB, next, limits)).ok).toBe(true);
    await settle(env.DB, next, { state: "completed", settledAt: new Date().toISOString(), sends: 1 });
    expect(await markDispatchedUnlessPrior(env.DB, await row({ tool }), limits)).toMatchObject({ ok: false, error: "rate_limited" });
  });

  it("the check before asking reads the same window: room, then full with the hint", async () => {
    const tool = freshTool();
    const limits: MutationLimit[] = [{ max: 2, per_s: 600, by: "all", tool }];
    const call = { tool_name: tool, channel_id: "C-limits", requester_person: null, requested_by: "token:root" };
    expect(await limitBeforeAsking(env.DB, 1_000, limits, call)).toBeNull();
    for (let i = 0; i < 2; i++) expect((await markDispatchedUnlessPrior(env.DB, await row({ tool }), limits)).ok).toBe(true);
    const full = await limitBeforeAsking(env.DB, 1_000, limits, call);
    expect(full).toMatchObject({ retry_after_s: expect.any(Number) });
    expect((full as { retry_after_s: number }).retry_after_s).toBeGreaterThan(590);
  });
});
