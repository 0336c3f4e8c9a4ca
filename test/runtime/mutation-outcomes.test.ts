// Durable mutation outcomes (contract section 8) in the real D1 of miniflare,
// with migrations/0002 and 0003 applied: the projection's exact shape (audit
// fields approved_by / approved_at included), the unique key, the checkpoint
// and settlement rules, the cross-run prior-unknown rule ("earlier" by the
// row's sortable id), the checkpoint with that check folded in (function and
// ledger), and the reconcile / read routes over SELF.fetch (reads outside the
// storage pool, reconcile holding a slot).
import { env } from "cloudflare:test";
import { ulid } from "ulidx";
import { describe, expect, it } from "vitest";
import type { StoragePool } from "../../durable-objects/storage-pool";
import { MutationLedger } from "../../src/outcomes/mutation-ledger";
import { globalStoragePool } from "../../src/outcomes/storage-pool-rpc";
import {
  APPROVED_BY_AUTOMATIC,
  AUTOMATIC_APPROVAL_ID,
  markDispatchedUnlessPrior,
  getOutcome,
  insertIntent,
  isMutationId,
  listRunOutcomes,
  newMutationId,
  reconcile,
  settle,
  toProjection,
  type IntentInput,
  type MutationOutcomeRow,
} from "../../src/outcomes/mutation-outcomes";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";
import { api, trigger } from "./helpers";
import { checkpointRow } from "./outcome-rows";

const DIGEST = `sha256:${"ab".repeat(32)}`;
const OTHER_DIGEST = `sha256:${"cd".repeat(32)}`;
/** A digest no other row has, so the cross-run check finds nothing. */
const uniqueDigest = () => `sha256:${crypto.randomUUID().replaceAll("-", "").repeat(2)}`;
const T0 = "2026-11-20T10:00:00.000Z";
const T1 = "2026-11-20T10:00:05.000Z";
const T2 = "2026-11-20T10:07:00.000Z";

function intent(overrides: Partial<IntentInput> = {}): IntentInput {
  return {
    runId: newRunId(),
    channelId: "C-outcomes",
    deliveryId: "Ev-outcomes",
    toolCallId: newToolCallId(),
    approvalId: newApprovalId(),
    toolName: "mcp__last9__create_dashboard",
    argumentsDigest: DIGEST,
    approvedBy: "U-approver",
    approvedAt: T0,
    createdAt: T0,
    ...overrides,
  };
}

async function created(overrides: Partial<IntentInput> = {}) {
  const result = await insertIntent(env.DB, intent(overrides));
  expect(result.created).toBe(true);
  return result.row;
}

/** An intent checkpointed and settled outcome_unknown, as after a dispatched transport timeout. */
async function unknownOutcome(overrides: Partial<IntentInput> = {}) {
  const row = await created(overrides);
  await checkpointRow(env.DB, row.mutation_id);
  const settled = await settle(env.DB, row.mutation_id, {
    state: "outcome_unknown",
    reason: "transport_timeout",
    error: { code: "transport_timeout", message: "no answer within 60000 ms" },
    settledAt: T1,
  });
  expect(settled.ok).toBe(true);
  return row;
}

describe("projection", () => {
  it("is exactly the section 8 shape for a fresh intent, with optional keys absent", async () => {
    const input = intent();
    const row = await created(input);
    expect(isMutationId(row.mutation_id)).toBe(true);
    const projection = toProjection(row);
    expect(projection).toStrictEqual({
      schema: "mutation_outcome/v1",
      mutation_id: row.mutation_id,
      run_id: input.runId,
      channel_id: "C-outcomes",
      delivery_id: "Ev-outcomes",
      tool_call_id: input.toolCallId,
      approval_id: input.approvalId,
      tool_name: "mcp__last9__create_dashboard",
      arguments_digest: DIGEST,
      approved_by: "U-approver",
      approved_at: T0,
      // An intent recorded without votes (section 19): [] (an automatic approval's, or a caller that names none).
      approvals: [],
      state: "unresolved",
      dispatched: false,
      created_at: T0,
    });
    // Absent, not null, and in the contract's key order.
    expect(Object.keys(projection)).toEqual([
      "schema",
      "mutation_id",
      "run_id",
      "channel_id",
      "delivery_id",
      "tool_call_id",
      "approval_id",
      "tool_name",
      "arguments_digest",
      "approved_by",
      "approved_at",
      "approvals",
      "state",
      "dispatched",
      "created_at",
    ]);
  });

  it("shows an automatic approval as approval_id null, approved_by automatic, and a missing delivery as null", async () => {
    const row = await created(intent({ approvalId: null, deliveryId: null, approvedBy: APPROVED_BY_AUTOMATIC, approvedAt: T1 }));
    expect(row.approval_id).toBe(AUTOMATIC_APPROVAL_ID);
    const projection = toProjection(row);
    expect(projection.approval_id).toBeNull();
    expect(projection.delivery_id).toBeNull();
    expect(projection).toMatchObject({ approved_by: "automatic", approved_at: T1 });
  });

  it("keeps approved_by and approved_at through every transition, and shows them null when they were never given", async () => {
    const row = await created(intent({ approvedBy: "U-ops-lead", approvedAt: T0 }));
    await checkpointRow(env.DB, row.mutation_id);
    await settle(env.DB, row.mutation_id, { state: "outcome_unknown", settledAt: T1 });
    await reconcile(env.DB, row.mutation_id, { outcome: "completed", evidence: "seen", reconciled_by: "ops", at: T2 });
    const stored = (await getOutcome(env.DB, row.mutation_id))!;
    expect(stored).toMatchObject({ approved_by: "U-ops-lead", approved_at: T0 });
    expect(toProjection(stored)).toMatchObject({ approved_by: "U-ops-lead", approved_at: T0, state: "completed" });

    // A row written before migrations/0003 (the engine always gives both now): inserted by hand without them.
    const old = intent();
    const bare = (await env.DB.prepare(
      `INSERT INTO mutation_outcomes
         (mutation_id, run_id, channel_id, delivery_id, tool_call_id, approval_id, tool_name, arguments_digest, state, dispatched, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'unresolved', 0, ?) RETURNING *`,
    )
      .bind(
        newMutationId(),
        old.runId,
        old.channelId,
        old.deliveryId,
        old.toolCallId,
        old.approvalId,
        old.toolName,
        old.argumentsDigest,
        T0,
      )
      .first<MutationOutcomeRow>())!;
    expect(bare).toMatchObject({ approved_by: null, approved_at: null });
    const projection = toProjection(bare);
    // Present as null, not absent: the contract lists both as keys of every row.
    expect(Object.hasOwn(projection, "approved_by") && Object.hasOwn(projection, "approved_at")).toBe(true);
    expect(projection).toMatchObject({ approved_by: null, approved_at: null });
  });

  it("carries reason, result, error, settled_at and reconciliation once they exist, in order", async () => {
    const done = await created();
    await checkpointRow(env.DB, done.mutation_id);
    const completed = await settle(env.DB, done.mutation_id, {
      state: "completed",
      result: { is_error: false, content_bytes: 42, summary: "dashboard d-1 created" },
      settledAt: T1,
    });
    expect(completed.ok).toBe(true);
    const p = toProjection((await getOutcome(env.DB, done.mutation_id))!);
    expect(p).toMatchObject({
      state: "completed",
      dispatched: true,
      result: { is_error: false, content_bytes: 42, summary: "dashboard d-1 created" },
      settled_at: T1,
    });
    expect(Object.keys(p)).toEqual([
      "schema",
      "mutation_id",
      "run_id",
      "channel_id",
      "delivery_id",
      "tool_call_id",
      "approval_id",
      "tool_name",
      "arguments_digest",
      "approved_by",
      "approved_at",
      "approvals",
      "state",
      "dispatched",
      "result",
      "created_at",
      "settled_at",
    ]);

    const unknown = await unknownOutcome();
    const r = await reconcile(env.DB, unknown.mutation_id, {
      outcome: "completed",
      evidence: "dashboard d-9 exists",
      reconciled_by: "ops@example.com",
      at: T2,
    });
    expect(r.ok).toBe(true);
    const q = toProjection((await getOutcome(env.DB, unknown.mutation_id))!);
    expect(Object.keys(q)).toEqual([
      "schema",
      "mutation_id",
      "run_id",
      "channel_id",
      "delivery_id",
      "tool_call_id",
      "approval_id",
      "tool_name",
      "arguments_digest",
      "approved_by",
      "approved_at",
      "approvals",
      "state",
      "dispatched",
      "reason",
      "error",
      "created_at",
      "settled_at",
      "reconciliation",
    ]);
    expect(q).toMatchObject({
      state: "completed",
      reason: "transport_timeout",
      error: { code: "transport_timeout", message: "no answer within 60000 ms" },
      settled_at: T1,
      reconciliation: { outcome: "completed", reconciled_by: "ops@example.com", evidence: "dashboard d-9 exists", at: T2 },
    });
    expect(Object.keys(q.reconciliation!)).toEqual(["outcome", "reconciled_by", "evidence", "at"]);
  });
});

describe("the intent's unique key (run_id, tool_call_id, approval_id)", () => {
  it("returns the existing row on a conflict, which the caller reads as replay_blocked", async () => {
    const input = intent();
    const first = await insertIntent(env.DB, input);
    const again = await insertIntent(env.DB, { ...input, mutationId: newMutationId(), createdAt: T1 });
    expect(first.created).toBe(true);
    expect(again).toEqual({ created: false, row: first.row });
    expect(await listRunOutcomes(env.DB, input.runId)).toHaveLength(1);
  });

  it("gives a new approval attempt of the same call its own row", async () => {
    const input = intent();
    await created(input);
    const retry = await insertIntent(env.DB, { ...input, approvalId: newApprovalId() });
    expect(retry.created).toBe(true);
    expect(await listRunOutcomes(env.DB, input.runId)).toHaveLength(2);
  });

  it("keeps automatic approvals unique too (approval_id '' rather than NULL)", async () => {
    const input = intent({ approvalId: null });
    const first = await insertIntent(env.DB, input);
    const again = await insertIntent(env.DB, input);
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.row.mutation_id).toBe(first.row.mutation_id);
  });

  it("lets exactly one of many identical concurrent inserts create the row", async () => {
    const input = intent();
    const results = await Promise.all(Array.from({ length: 8 }, () => insertIntent(env.DB, input)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.row.mutation_id)).size).toBe(1);
  });
});

describe("the checkpoint (markDispatchedUnlessPrior), with no identical row of another run", () => {
  it("moves unresolved & undispatched to dispatched, once", async () => {
    const row = await created({ argumentsDigest: uniqueDigest() });
    const first = await markDispatchedUnlessPrior(env.DB, row.mutation_id);
    expect(first).toMatchObject({ ok: true, row: { state: "unresolved", dispatched: 1 } });
    const second = await markDispatchedUnlessPrior(env.DB, row.mutation_id);
    expect(second).toMatchObject({ ok: false, error: "not_checkpointable", row: { dispatched: 1 } });
  });

  it("refuses a settled row and an unknown id", async () => {
    const row = await created({ argumentsDigest: uniqueDigest() });
    await settle(env.DB, row.mutation_id, { state: "not_executed", reason: "cancelled", settledAt: T1 });
    expect(await markDispatchedUnlessPrior(env.DB, row.mutation_id)).toMatchObject({
      ok: false,
      error: "not_checkpointable",
      row: { state: "not_executed", dispatched: 0 },
    });
    expect(await markDispatchedUnlessPrior(env.DB, newMutationId())).toEqual({ ok: false, error: "not_found" });
  });
});

describe("settlement", () => {
  it("settles an undispatched intent not_executed, and never overwrites a settled row", async () => {
    const row = await created();
    const settled = await settle(env.DB, row.mutation_id, { state: "not_executed", reason: "approval_expired", settledAt: T1 });
    expect(settled).toMatchObject({ ok: true, row: { state: "not_executed", reason: "approval_expired", settled_at: T1, dispatched: 0 } });
    const again = await settle(env.DB, row.mutation_id, { state: "not_executed", reason: "cancelled", settledAt: T2 });
    expect(again).toMatchObject({ ok: false, error: "already_settled", row: { reason: "approval_expired", settled_at: T1 } });
  });

  it("completes only a dispatched row, and keeps a dispatched call's actual result", async () => {
    const row = await created();
    expect(await settle(env.DB, row.mutation_id, { state: "completed", result: { ok: 1 }, settledAt: T1 })).toMatchObject({
      ok: false,
      error: "not_dispatched",
      row: { state: "unresolved" },
    });
    expect(await settle(env.DB, row.mutation_id, { state: "outcome_unknown", settledAt: T1 })).toMatchObject({
      ok: false,
      error: "not_dispatched",
    });
    await checkpointRow(env.DB, row.mutation_id);
    const done = await settle(env.DB, row.mutation_id, { state: "completed", result: { ok: 1 }, settledAt: T1 });
    expect(done).toMatchObject({ ok: true, row: { state: "completed", dispatched: 1, result_json: '{"ok":1}', settled_at: T1 } });
    // A late "abandoned" settlement cannot turn a completed call into not_executed, nor into unknown.
    expect(await settle(env.DB, row.mutation_id, { state: "not_executed", reason: "settlement_timeout", settledAt: T2 })).toMatchObject({
      ok: false,
      error: "already_settled",
      row: { state: "completed" },
    });
    expect(await settle(env.DB, row.mutation_id, { state: "outcome_unknown", settledAt: T2 })).toMatchObject({
      ok: false,
      error: "already_settled",
      row: { state: "completed" },
    });
  });

  it("records outcome_unknown with the error facts for a dispatched call", async () => {
    const row = await unknownOutcome();
    expect(await getOutcome(env.DB, row.mutation_id)).toMatchObject({
      state: "outcome_unknown",
      dispatched: 1,
      reason: "transport_timeout",
      error_json: JSON.stringify({ code: "transport_timeout", message: "no answer within 60000 ms" }),
    });
  });

  it("allows not_executed after a checkpoint that was acknowledged too late to dispatch", async () => {
    const row = await created();
    await checkpointRow(env.DB, row.mutation_id);
    const settled = await settle(env.DB, row.mutation_id, { state: "not_executed", reason: "storage_unavailable", settledAt: T1 });
    expect(settled).toMatchObject({ ok: true, row: { state: "not_executed", dispatched: 1 } });
  });

  it("answers not_found for an unknown id", async () => {
    expect(await settle(env.DB, newMutationId(), { state: "not_executed", settledAt: T1 })).toEqual({ ok: false, error: "not_found" });
  });

  it("is guarded by the table's own CHECKs even against a direct write", async () => {
    const row = await created();
    await expect(
      env.DB.prepare(`UPDATE mutation_outcomes SET state = 'completed', settled_at = ? WHERE mutation_id = ?`)
        .bind(T1, row.mutation_id)
        .run(),
    ).rejects.toThrow(/CHECK/i);
    await expect(
      env.DB.prepare(`UPDATE mutation_outcomes SET state = 'not_executed' WHERE mutation_id = ?`).bind(row.mutation_id).run(),
    ).rejects.toThrow(/CHECK/i);
  });
});

/** Two mutation ids made in the same millisecond, smaller first: two identical calls approved at the same moment. */
function sameMomentIds(): [string, string] {
  const at = Date.now();
  const [x, y] = [`mut_${ulid(at)}`, `mut_${ulid(at)}`].sort();
  if (x === y) throw new Error("two equal ULIDs");
  return [x!, y!];
}

describe("the checkpoint with the prior-outcome check folded in (markDispatchedUnlessPrior)", () => {
  it("refuses while an earlier row of another run is outcome_unknown or unresolved, leaving the row unsent", async () => {
    const channelId = `C-fold-${newToolCallId()}`;
    const unknown = await unknownOutcome({ channelId });
    const mine = await created({ channelId });
    expect(await markDispatchedUnlessPrior(env.DB, mine.mutation_id)).toMatchObject({
      ok: false,
      error: "prior_outcome_unknown",
      row: { mutation_id: mine.mutation_id, state: "unresolved", dispatched: 0 },
    });
    expect((await getOutcome(env.DB, mine.mutation_id))?.dispatched).toBe(0);

    // Reconciled, the earlier row no longer blocks; an earlier intent that is merely unresolved still does.
    await reconcile(env.DB, unknown.mutation_id, { outcome: "completed", evidence: "seen", reconciled_by: "ops", at: T2 });
    const pendingEarlier = await created({ channelId });
    const next = await created({ channelId });
    expect(await markDispatchedUnlessPrior(env.DB, next.mutation_id)).toMatchObject({ ok: false, error: "prior_outcome_unknown" });
    await settle(env.DB, pendingEarlier.mutation_id, { state: "not_executed", reason: "cancelled", settledAt: T1 });
    await settle(env.DB, next.mutation_id, { state: "not_executed", reason: "prior_outcome_unknown", settledAt: T1 });
    expect(await markDispatchedUnlessPrior(env.DB, mine.mutation_id)).toMatchObject({
      ok: true,
      row: { mutation_id: mine.mutation_id, state: "unresolved", dispatched: 1 },
    });
  });

  it("is not blocked by a later row, its own run's rows, settled rows, or another channel, tool or digest", async () => {
    const channelId = `C-fold-free-${newToolCallId()}`;
    const runId = newRunId();
    await unknownOutcome({ channelId, runId }); // its own run: replay's business, not a prior outcome
    await unknownOutcome({ channelId, argumentsDigest: OTHER_DIGEST });
    await unknownOutcome({ channelId, toolName: "mcp__last9__create_alert" });
    await unknownOutcome({ channelId: `${channelId}-elsewhere` });
    const done = await created({ channelId });
    await checkpointRow(env.DB, done.mutation_id);
    await settle(env.DB, done.mutation_id, { state: "completed", result: {}, settledAt: T1 });
    const mine = await created({ channelId, runId });
    await unknownOutcome({ channelId }); // later than mine
    expect(await markDispatchedUnlessPrior(env.DB, mine.mutation_id)).toMatchObject({ ok: true, row: { dispatched: 1 } });
  });

  it("two identical calls approved at the same moment: only the later can be refused, never both", async () => {
    for (let i = 0; i < 12; i++) {
      const channelId = `C-fold-same-${i}-${newToolCallId()}`;
      const [earlier, later] = sameMomentIds();
      // Intents land in either order; the checkpoints race, in either order or together.
      const ids = i % 2 === 0 ? [earlier, later] : [later, earlier];
      for (const mutationId of ids) await created({ channelId, mutationId });
      const attempts =
        i % 3 === 0
          ? await Promise.all([markDispatchedUnlessPrior(env.DB, earlier), markDispatchedUnlessPrior(env.DB, later)])
          : i % 3 === 1
            ? [await markDispatchedUnlessPrior(env.DB, earlier), await markDispatchedUnlessPrior(env.DB, later)]
            : await (async () => {
                const laterFirst = await markDispatchedUnlessPrior(env.DB, later);
                return [await markDispatchedUnlessPrior(env.DB, earlier), laterFirst];
              })();
      expect(attempts[0], `pair ${i}`).toMatchObject({ ok: true, row: { mutation_id: earlier, dispatched: 1 } });
      expect(attempts[1], `pair ${i}`).toMatchObject({ ok: false, error: "prior_outcome_unknown", row: { mutation_id: later } });
    }
  });

  it("tells a row not in the expected state (or missing) from one blocked by a prior row", async () => {
    const dispatched = await created();
    await checkpointRow(env.DB, dispatched.mutation_id);
    expect(await markDispatchedUnlessPrior(env.DB, dispatched.mutation_id)).toMatchObject({
      ok: false,
      error: "not_checkpointable",
      row: { dispatched: 1 },
    });
    const settled = await created();
    await settle(env.DB, settled.mutation_id, { state: "not_executed", reason: "cancelled", settledAt: T1 });
    expect(await markDispatchedUnlessPrior(env.DB, settled.mutation_id)).toMatchObject({
      ok: false,
      error: "not_checkpointable",
      row: { state: "not_executed", dispatched: 0 },
    });
    expect(await markDispatchedUnlessPrior(env.DB, newMutationId())).toEqual({ ok: false, error: "not_found" });
  });
});

describe("the ledger's path from approval to dispatch", () => {
  function freshPool(): DurableObjectStub<StoragePool> {
    return env.STORAGE_POOL.get(env.STORAGE_POOL.idFromName(`ledger-test-${crypto.randomUUID()}`));
  }

  /** Counts the remote round trips the ledger makes: pool acquires and D1 statements, in order. */
  function counted(pool: DurableObjectStub<StoragePool>) {
    const trips: string[] = [];
    const db = {
      prepare: (sql: string) => {
        const wrap = (stmt: D1PreparedStatement) => ({
          bind: (...values: unknown[]) => wrap(stmt.bind(...values)),
          first: <T>() => (trips.push(`d1:${sql.trim().split(/\s+/)[0]}`), stmt.first<T>()),
          all: <T>() => (trips.push(`d1:${sql.trim().split(/\s+/)[0]}`), stmt.all<T>()),
        });
        return wrap(env.DB.prepare(sql));
      },
    };
    const slots = {
      acquire: (holder: string, waitMs: number) => (trips.push("pool:acquire"), Promise.resolve(pool.acquire(holder, waitMs))),
      release: (leaseId: string) => pool.release(leaseId),
    };
    return { trips, db, slots };
  }

  it("takes at most four sequential remote round trips: intent (acquire + D1), checkpoint with the check (acquire + D1)", async () => {
    const pool = freshPool();
    const { trips, db, slots } = counted(pool);
    const ledger = new MutationLedger(() => db, slots, 1_000);
    const mutationId = newMutationId();
    const input = { ...intent({ channelId: `C-trips-${newToolCallId()}`, approvedBy: "U-approver", approvedAt: T0 }), mutationId };
    expect(await ledger.intent(input)).toBe("recorded");
    expect(await ledger.checkpointUnlessPrior(mutationId, { reason: "storage_unavailable", settledAt: T1 })).toBe("acknowledged");
    expect(trips).toEqual(["pool:acquire", "d1:INSERT", "pool:acquire", "d1:UPDATE"]);
    expect(await getOutcome(env.DB, mutationId)).toMatchObject({ dispatched: 1, approved_by: "U-approver", approved_at: T0 });
  });

  it("bounds an intent from its `since`: with the whole bound already spent it fails closed and asks neither the pool nor D1", async () => {
    const pool = freshPool();
    const { trips, db, slots } = counted(pool);
    const ledger = new MutationLedger(() => db, slots, 1_000);
    const spent = { ...intent({ channelId: `C-since-${newToolCallId()}` }), mutationId: newMutationId() };
    expect(await ledger.intent(spent, { since: Date.now() - 1_000 })).toBe("unavailable");
    expect(trips).toEqual([]);
    expect(await getOutcome(env.DB, spent.mutationId)).toBeNull();
    // With time left it is written as usual.
    const fresh = { ...intent({ channelId: `C-since-${newToolCallId()}` }), mutationId: newMutationId() };
    expect(await ledger.intent(fresh, { since: Date.now() - 500 })).toBe("recorded");
    expect(trips).toEqual(["pool:acquire", "d1:INSERT"]);
  });

  it("answers prior_outcome_unknown for the later identical call of another run, unavailable otherwise", async () => {
    const pool = freshPool();
    const ledger = new MutationLedger(() => env.DB, pool, 1_000);
    const channelId = `C-ledger-${newToolCallId()}`;
    const notSent = { reason: "storage_unavailable", settledAt: T1 };
    // Ids made in one millisecond are not ordered by when they were made: sort them, "earlier" is the smaller.
    const [earlier, later] = sameMomentIds();
    const first = { ...intent({ channelId }), mutationId: earlier };
    const second = { ...intent({ channelId }), mutationId: later };
    expect(await ledger.intent(first)).toBe("recorded");
    expect(await ledger.intent(second)).toBe("recorded");
    expect(await ledger.checkpointUnlessPrior(second.mutationId, notSent)).toBe("prior_outcome_unknown");
    expect(await ledger.checkpointUnlessPrior(first.mutationId, notSent)).toBe("acknowledged");
    // Already checkpointed: not in the expected state, so no dispatch.
    expect(await ledger.checkpointUnlessPrior(first.mutationId, notSent)).toBe("unavailable");
    expect((await getOutcome(env.DB, second.mutationId))?.dispatched).toBe(0);
    await expect.poll(async () => (await pool.stats()).in_use, { timeout: 5_000, interval: 5 }).toBe(0);
    expect((await pool.stats()).acquired_total).toBe(5);

    // No slot within the bound: unavailable, the row untouched.
    const leases: string[] = [];
    for (let i = 0; i < 16; i++) {
      const r = await pool.acquire(`fill-${i}`);
      if (r.ok) leases.push(r.lease_id);
    }
    const hasty = new MutationLedger(() => env.DB, pool, 50);
    const third = { ...intent({ channelId: `C-ledger-full-${newToolCallId()}` }), mutationId: newMutationId() };
    await insertIntent(env.DB, third);
    expect(await hasty.checkpointUnlessPrior(third.mutationId, notSent)).toBe("unavailable");
    expect((await getOutcome(env.DB, third.mutationId))?.dispatched).toBe(0);
    for (const id of leases) await pool.release(id);
  });
});

describe("reconcile (function)", () => {
  it("settles only outcome_unknown, once", async () => {
    const row = await unknownOutcome();
    const first = await reconcile(env.DB, row.mutation_id, {
      outcome: "not_executed",
      evidence: "vendor log shows no request",
      reconciled_by: "ops",
      at: T2,
    });
    expect(first).toMatchObject({ ok: true, row: { state: "not_executed", settled_at: T1 } });
    expect(await reconcile(env.DB, row.mutation_id, { outcome: "completed", evidence: "x", reconciled_by: "ops", at: T2 })).toEqual({
      ok: false,
      error: "not_reconcilable",
      state: "not_executed",
    });
    const pending = await created();
    expect(await reconcile(env.DB, pending.mutation_id, { outcome: "completed", evidence: "x", reconciled_by: "ops", at: T2 })).toEqual({
      ok: false,
      error: "not_reconcilable",
      state: "unresolved",
    });
    expect(await reconcile(env.DB, newMutationId(), { outcome: "completed", evidence: "x", reconciled_by: "ops", at: T2 })).toEqual({
      ok: false,
      error: "not_found",
    });
  });
});

describe("mutation routes", () => {
  const pool = () => globalStoragePool(env.STORAGE_POOL);

  it("reads one projection, 404 for an unknown or malformed id", async () => {
    const row = await created();
    const res = await api(`/api/mutations/${row.mutation_id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toStrictEqual(toProjection(row));
    const unknown = await api(`/api/mutations/${newMutationId()}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: "not_found" });
    expect((await api(`/api/mutations/not-a-mutation`)).status).toBe(404);
  });

  it("lists a run's outcomes in creation order; 404 for a run that does not exist", async () => {
    const runId = newRunId();
    const a = await created({ runId, createdAt: T0 });
    const b = await created({ runId, createdAt: T1, approvalId: null });
    const res = await api(`/api/runs/${runId}/mutations`);
    expect(res.status).toBe(200);
    expect(await res.json()).toStrictEqual({ run_id: runId, mutations: [toProjection(a), toProjection(b)] });
    expect((await api(`/api/runs/${newRunId()}/mutations`)).status).toBe(404);
    expect((await api(`/api/runs/bogus/mutations`)).status).toBe(404);
  });

  it("lists an existing run without mutations as empty", async () => {
    const { json } = await trigger({ message: "no tools here" });
    const res = await api(`/api/runs/${json.run_id}/mutations`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ run_id: json.run_id, mutations: [] });
  });

  it("reconciles an outcome_unknown row: 200 with the updated projection, then 409; 404 unknown", async () => {
    const row = await unknownOutcome();
    const body = { outcome: "completed", evidence: "dashboard d-7 exists in the vendor UI" };
    const res = await api(`/api/mutations/${row.mutation_id}/reconcile`, { method: "POST", body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const projection = await res.json<any>();
    expect(projection).toMatchObject({
      schema: "mutation_outcome/v1",
      mutation_id: row.mutation_id,
      state: "completed",
      dispatched: true,
      reconciliation: { outcome: "completed", reconciled_by: "token:root", evidence: body.evidence, at: expect.any(String) },
    });
    expect(new Date(projection.reconciliation.at).toISOString()).toBe(projection.reconciliation.at);
    expect(await (await api(`/api/mutations/${row.mutation_id}`)).json()).toStrictEqual(projection);

    const again = await api(`/api/mutations/${row.mutation_id}/reconcile`, { method: "POST", body: JSON.stringify(body) });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: "not_reconcilable", state: "completed", message: expect.any(String) });

    const pending = await created();
    const early = await api(`/api/mutations/${pending.mutation_id}/reconcile`, { method: "POST", body: JSON.stringify(body) });
    expect(early.status).toBe(409);
    expect(await early.json()).toMatchObject({ error: "not_reconcilable", state: "unresolved" });

    const missing = await api(`/api/mutations/${newMutationId()}/reconcile`, { method: "POST", body: JSON.stringify(body) });
    expect(missing.status).toBe(404);
  });

  it("validates the reconcile body (400) and changes nothing", async () => {
    const row = await unknownOutcome();
    const bad = [
      {},
      { outcome: "maybe", evidence: "e", reconciled_by: "r" },
      { outcome: "completed", evidence: "", reconciled_by: "r" },
      { outcome: "completed", evidence: "e".repeat(4_001), reconciled_by: "r" },
      { outcome: "completed", evidence: "e", reconciled_by: "" },
      { outcome: "completed", evidence: "e", reconciled_by: "r".repeat(201) },
      { outcome: "completed", evidence: "e", reconciled_by: "r", extra: true },
    ];
    for (const body of bad) {
      const res = await api(`/api/mutations/${row.mutation_id}/reconcile`, { method: "POST", body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(await res.json()).toMatchObject({ error: "invalid_request", details: expect.any(Array) });
    }
    expect((await getOutcome(env.DB, row.mutation_id))?.state).toBe("outcome_unknown");
  });

  it("reads without a storage-pool slot; reconcile, a write, takes one and gives it back", async () => {
    const row = await unknownOutcome();
    const before = await pool().stats();
    expect((await api(`/api/mutations/${row.mutation_id}`)).status).toBe(200);
    expect((await api(`/api/runs/${row.run_id}/mutations`)).status).toBe(200);
    expect((await pool().stats()).acquired_total).toBe(before.acquired_total);
    const res = await api(`/api/mutations/${row.mutation_id}/reconcile`, {
      method: "POST",
      body: JSON.stringify({ outcome: "not_executed", evidence: "e" }),
    });
    expect(res.status).toBe(200);
    expect((await pool().stats()).acquired_total - before.acquired_total).toBe(1);
    await expect.poll(async () => (await pool().stats()).in_use, { timeout: 5_000, interval: 5 }).toBe(before.in_use);
  });

  it("while every slot is held: reads still answer; reconcile waits its bound in line, then 503 storage_unavailable, touching nothing", async () => {
    const row = await unknownOutcome();
    const leases: string[] = [];
    for (;;) {
      const r = await pool().acquire("test:fill");
      if (!r.ok) break;
      leases.push(r.lease_id);
    }
    try {
      const full = await pool().stats();
      expect(full.in_use).toBe(16);
      // A burst of reads: none needs a slot, so all answer.
      const reads = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          api(i % 2 === 0 ? `/api/mutations/${row.mutation_id}` : `/api/runs/${row.run_id}/mutations`).then((r) => r.status),
        ),
      );
      expect(reads.every((status) => status === 200)).toBe(true);
      expect(await (await api(`/api/mutations/${row.mutation_id}`)).json()).toStrictEqual(
        toProjection((await getOutcome(env.DB, row.mutation_id))!),
      );

      const res = await api(`/api/mutations/${row.mutation_id}/reconcile`, {
        method: "POST",
        body: JSON.stringify({ outcome: "completed", evidence: "e" }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await res.json()).toMatchObject({ error: "storage_unavailable" });
      await expect.poll(async () => (await pool().stats()).waiting, { timeout: 5_000, interval: 5 }).toBe(0);
      const after = await pool().stats();
      expect(after.waited_total - full.waited_total).toBe(1);
      expect(after.rejected_total - full.rejected_total).toBe(1);
      expect(after.acquired_total).toBe(full.acquired_total);
    } finally {
      for (const id of leases) await pool().release(id);
    }
    expect((await getOutcome(env.DB, row.mutation_id))?.state).toBe("outcome_unknown");
  });
});
