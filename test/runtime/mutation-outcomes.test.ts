// Durable mutation outcomes (contract section 8) in the real D1 of miniflare,
// with migrations/0002 applied: the projection's exact shape, the unique key,
// the checkpoint and settlement rules, the cross-run prior-unknown query and
// the reconcile / read routes over SELF.fetch.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { globalStoragePool } from "../../src/outcomes/storage-pool-rpc";
import {
  AUTOMATIC_APPROVAL_ID,
  findPriorUnknown,
  getOutcome,
  insertIntent,
  isMutationId,
  listRunOutcomes,
  markDispatched,
  newMutationId,
  reconcile,
  settle,
  toProjection,
  type IntentInput,
} from "../../src/outcomes/mutation-outcomes";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";
import { api, trigger } from "./helpers";

const DIGEST = `sha256:${"ab".repeat(32)}`;
const OTHER_DIGEST = `sha256:${"cd".repeat(32)}`;
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
  expect((await markDispatched(env.DB, row.mutation_id)).ok).toBe(true);
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
      "state",
      "dispatched",
      "created_at",
    ]);
  });

  it("shows an automatic approval as approval_id null and a missing delivery as null", async () => {
    const row = await created(intent({ approvalId: null, deliveryId: null }));
    expect(row.approval_id).toBe(AUTOMATIC_APPROVAL_ID);
    const projection = toProjection(row);
    expect(projection.approval_id).toBeNull();
    expect(projection.delivery_id).toBeNull();
  });

  it("carries reason, result, error, settled_at and reconciliation once they exist, in order", async () => {
    const done = await created();
    await markDispatched(env.DB, done.mutation_id);
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

describe("the checkpoint (markDispatched)", () => {
  it("moves unresolved & undispatched to dispatched, once", async () => {
    const row = await created();
    const first = await markDispatched(env.DB, row.mutation_id);
    expect(first).toMatchObject({ ok: true, row: { state: "unresolved", dispatched: 1 } });
    const second = await markDispatched(env.DB, row.mutation_id);
    expect(second).toMatchObject({ ok: false, error: "not_checkpointable", row: { dispatched: 1 } });
  });

  it("refuses a settled row and an unknown id", async () => {
    const row = await created();
    await settle(env.DB, row.mutation_id, { state: "not_executed", reason: "cancelled", settledAt: T1 });
    expect(await markDispatched(env.DB, row.mutation_id)).toMatchObject({
      ok: false,
      error: "not_checkpointable",
      row: { state: "not_executed", dispatched: 0 },
    });
    expect(await markDispatched(env.DB, newMutationId())).toEqual({ ok: false, error: "not_found" });
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
    await markDispatched(env.DB, row.mutation_id);
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
    await markDispatched(env.DB, row.mutation_id);
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

describe("prior unknown outcomes across runs", () => {
  it("finds other runs' outcome_unknown and unresolved rows for the same channel, tool and digest", async () => {
    const channelId = `C-prior-${newToolCallId()}`;
    const unknown = await unknownOutcome({ channelId });
    const pending = await created({ channelId, createdAt: T1 });
    const completed = await created({ channelId });
    await markDispatched(env.DB, completed.mutation_id);
    await settle(env.DB, completed.mutation_id, { state: "completed", result: {}, settledAt: T1 });
    const notExecuted = await created({ channelId });
    await settle(env.DB, notExecuted.mutation_id, { state: "not_executed", settledAt: T1 });
    await created({ channelId, argumentsDigest: OTHER_DIGEST });
    await created({ channelId, toolName: "mcp__last9__create_alert" });
    await unknownOutcome({ channelId: `${channelId}-elsewhere` });

    const asking = newRunId();
    const found = await findPriorUnknown(env.DB, {
      channelId,
      toolName: "mcp__last9__create_dashboard",
      argumentsDigest: DIGEST,
      excludeRunId: asking,
    });
    expect(found.map((r) => r.mutation_id)).toEqual([unknown.mutation_id, pending.mutation_id]);

    // The asking run's own rows are replay, not a prior outcome.
    const own = await findPriorUnknown(env.DB, {
      channelId,
      toolName: "mcp__last9__create_dashboard",
      argumentsDigest: DIGEST,
      excludeRunId: unknown.run_id,
    });
    expect(own.map((r) => r.mutation_id)).toEqual([pending.mutation_id]);

    // Reconciled, it no longer blocks.
    await reconcile(env.DB, unknown.mutation_id, { outcome: "not_executed", evidence: "no dashboard", reconciled_by: "ops", at: T2 });
    await settle(env.DB, pending.mutation_id, { state: "not_executed", settledAt: T2 });
    expect(
      await findPriorUnknown(env.DB, {
        channelId,
        toolName: "mcp__last9__create_dashboard",
        argumentsDigest: DIGEST,
        excludeRunId: asking,
      }),
    ).toEqual([]);
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
    const body = { outcome: "completed", evidence: "dashboard d-7 exists in the vendor UI", reconciled_by: "ops@example.com" };
    const res = await api(`/api/mutations/${row.mutation_id}/reconcile`, { method: "POST", body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const projection = await res.json<any>();
    expect(projection).toMatchObject({
      schema: "mutation_outcome/v1",
      mutation_id: row.mutation_id,
      state: "completed",
      dispatched: true,
      reconciliation: { outcome: "completed", reconciled_by: "ops@example.com", evidence: body.evidence, at: expect.any(String) },
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

  it("goes through the storage pool: each read or write takes a slot and gives it back", async () => {
    const row = await unknownOutcome();
    const before = await pool().stats();
    await api(`/api/mutations/${row.mutation_id}`);
    await api(`/api/runs/${row.run_id}/mutations`);
    await api(`/api/mutations/${row.mutation_id}/reconcile`, {
      method: "POST",
      body: JSON.stringify({ outcome: "not_executed", evidence: "e", reconciled_by: "r" }),
    });
    const after = await pool().stats();
    expect(after.acquired_total - before.acquired_total).toBe(3);
    expect(after.in_use).toBe(before.in_use);
  });

  it("answers 503 storage_unavailable, touching nothing, while every slot is held", async () => {
    const row = await unknownOutcome();
    const leases: string[] = [];
    for (;;) {
      const r = await pool().acquire("test:fill");
      if (!r.ok) break;
      leases.push(r.lease_id);
    }
    try {
      const res = await api(`/api/mutations/${row.mutation_id}/reconcile`, {
        method: "POST",
        body: JSON.stringify({ outcome: "completed", evidence: "e", reconciled_by: "r" }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await res.json()).toMatchObject({ error: "storage_unavailable" });
      expect((await api(`/api/mutations/${row.mutation_id}`)).status).toBe(503);
    } finally {
      for (const id of leases) await pool().release(id);
    }
    expect((await getOutcome(env.DB, row.mutation_id))?.state).toBe("outcome_unknown");
    expect((await api(`/api/mutations/${row.mutation_id}`)).status).toBe(200);
  });
});
