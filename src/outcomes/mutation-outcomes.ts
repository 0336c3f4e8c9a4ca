// Durable mutation outcomes in D1 (contract section 8, `mutation_outcome/v1`).
//
// Plain async functions over a minimal D1-like interface (OutcomeDb), so a
// test can wrap the real D1 binding in a seam that stalls, fails or holds a
// write. Every state change is ONE conditional statement (`UPDATE ... WHERE
// <allowed from-state> RETURNING *`); D1 serialises writes, so two racing
// callers cannot both win a transition, and a settled row is never
// overwritten. Callers run these under a storage-pool slot (storage-guard.ts);
// nothing here dispatches anything.
import type { z } from "zod";
import { MUTATION_OUTCOME_SCHEMA, type mutationOutcomeSchema } from "../wire/mutation-outcome-schema";
import { ulid } from "ulidx";
import { D1_NOW, HALT_COVERS_ROW } from "./halts";
import { fullLimit, limitClauses, shadowLimitColumn, type WindowSubject } from "./mutation-limits";
import type { MutationLimit } from "../policy/mutation-limits";

// ---- the D1 seam -----------------------------------------------------------

/** The part of D1Database these functions use; the real `env.DB` satisfies it. */
export interface OutcomeDb {
  prepare(query: string): OutcomeStatement;
}

export interface OutcomeStatement {
  bind(...values: unknown[]): OutcomeStatement;
  first<T = Record<string, unknown>>(): Promise<T | null>;
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>;
}

// ---- identities and states -------------------------------------------------

/**
 * What an automatic approval stores in `approval_id`. Not NULL: SQLite treats
 * NULLs as distinct in a UNIQUE key, so NULL would let the same auto-approved
 * call be recorded twice. Server-made approval ids are `approval_<ULID>`, so
 * '' never collides with one. The projection shows it as `null`.
 */
export const AUTOMATIC_APPROVAL_ID = "";

/** What `approved_by` holds for an automatic approval (contract section 8). */
export const APPROVED_BY_AUTOMATIC = "automatic";

const MUTATION_ID_PATTERN = /^mut_[0-9A-HJKMNP-TV-Z]{26}$/;

export function newMutationId(): string {
  return `mut_${ulid()}`;
}

/** Unknown-looking ids are answered 404 without a storage call. */
export function isMutationId(value: string): boolean {
  return MUTATION_ID_PATTERN.test(value);
}

type MutationState = "unresolved" | "not_executed" | "completed" | "outcome_unknown";
type SettledState = Exclude<MutationState, "unresolved">;
type ReconcileOutcome = "completed" | "not_executed";

type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

// ---- rows and projection ---------------------------------------------------

/** A `mutation_outcomes` row exactly as D1 returns it (see migrations/0002 and 0003). */
export interface MutationOutcomeRow {
  mutation_id: string;
  run_id: string;
  channel_id: string;
  delivery_id: string | null;
  tool_call_id: string;
  /** AUTOMATIC_APPROVAL_ID ('') for an automatic approval. */
  approval_id: string;
  tool_name: string;
  arguments_digest: string;
  state: MutationState;
  dispatched: 0 | 1;
  /** The decision's decided_by, or APPROVED_BY_AUTOMATIC; NULL on rows written without it (before migrations/0003). */
  approved_by: string | null;
  /** ISO 8601; NULL like approved_by. */
  approved_at: string | null;
  /** JSON `[{"by","at"}]`, every counted vote (migrations/0015); NULL on rows written before. */
  approvals_json: string | null;
  /** How many tools/call requests carried it (migrations/0016, contract section 21); NULL before a send settled it. */
  sends?: number | null;
  /** The tool's digest its approval was bound to (migrations/0028, contract section 23); NULL before it, or for an unlisted tool. */
  tool_digest?: string | null;
  /** Contract section 23 (migrations/0026): what the checkpoint's statement judges halts and limits by; NULL on rows written before. */
  server?: string | null;
  requested_by?: string | null;
  on_behalf_of?: string | null;
  requester_person?: string | null;
  /** Contract section 24 (migrations/0033): the policy version that decided the call, and its hash. */
  policy_version?: number | null;
  policy_hash?: string | null;
  /** D1's clock when the checkpoint committed. */
  dispatched_at?: string | null;
  reason: string | null;
  result_json: string | null;
  error_json: string | null;
  created_at: string;
  settled_at: string | null;
  reconciliation_json: string | null;
}

interface Reconciliation {
  outcome: ReconcileOutcome;
  reconciled_by: string;
  evidence: string;
  at: string;
}

/** The wire projection of contract section 8, as its zod schema declares it. Optional keys are absent, never null. */
export type MutationOutcomeProjection = z.output<typeof mutationOutcomeSchema>;

export function toProjection(row: MutationOutcomeRow): MutationOutcomeProjection {
  // Keys in the contract's order; optional ones only when they have a value.
  return {
    schema: MUTATION_OUTCOME_SCHEMA,
    mutation_id: row.mutation_id,
    run_id: row.run_id,
    channel_id: row.channel_id,
    delivery_id: row.delivery_id,
    tool_call_id: row.tool_call_id,
    approval_id: row.approval_id === AUTOMATIC_APPROVAL_ID ? null : row.approval_id,
    tool_name: row.tool_name,
    arguments_digest: row.arguments_digest,
    approved_by: row.approved_by,
    approved_at: row.approved_at,
    ...(row.approvals_json !== null && row.approvals_json !== undefined
      ? { approvals: JSON.parse(row.approvals_json) as NonNullable<MutationOutcomeProjection["approvals"]> }
      : {}),
    state: row.state,
    dispatched: row.dispatched === 1,
    ...(typeof row.sends === "number" ? { sends: row.sends } : {}),
    ...(row.reason !== null ? { reason: row.reason } : {}),
    ...(row.result_json !== null ? { result: JSON.parse(row.result_json) as NonNullable<MutationOutcomeProjection["result"]> } : {}),
    ...(row.error_json !== null ? { error: JSON.parse(row.error_json) as NonNullable<MutationOutcomeProjection["error"]> } : {}),
    created_at: row.created_at,
    ...(row.settled_at !== null ? { settled_at: row.settled_at } : {}),
    ...(row.reconciliation_json !== null ? { reconciliation: reconciliationOf(row.reconciliation_json) } : {}),
    ...(typeof row.tool_digest === "string" ? { tool_digest: row.tool_digest } : {}),
    ...(typeof row.dispatched_at === "string" ? { dispatched_at: row.dispatched_at } : {}),
    ...(typeof row.server === "string" ? { server: row.server } : {}),
    ...(typeof row.requested_by === "string" ? { requested_by: row.requested_by } : {}),
    ...(typeof row.on_behalf_of === "string" ? { on_behalf_of: row.on_behalf_of } : {}),
    ...(typeof row.requester_person === "string" ? { requester_person: row.requester_person } : {}),
    ...(typeof row.policy_version === "number" ? { policy_version: row.policy_version } : {}),
    ...(typeof row.policy_hash === "string" ? { policy_hash: row.policy_hash } : {}),
  };
}

function reconciliationOf(json: string): Reconciliation {
  const r = JSON.parse(json) as Reconciliation;
  return { outcome: r.outcome, reconciled_by: r.reconciled_by, evidence: r.evidence, at: r.at };
}

// ---- the intent ------------------------------------------------------------

export interface IntentInput {
  /** Made here (newMutationId) when absent. */
  mutationId?: string;
  runId: string;
  channelId: string;
  deliveryId: string | null;
  toolCallId: string;
  /** null for an automatic approval (stored as AUTOMATIC_APPROVAL_ID). */
  approvalId: string | null;
  toolName: string;
  /** `sha256:<hex>` from argumentsDigest(). */
  argumentsDigest: string;
  /**
   * The audit fields of section 8: the decision's `decided_by`, or
   * APPROVED_BY_AUTOMATIC for an automatic approval.
   */
  approvedBy: string;
  /** ISO 8601, when the call was approved. */
  approvedAt: string;
  /** Every counted vote, in order (contract section 19); [] for an automatic approval. */
  approvals?: { by: string; at: string }[];
  /** The tool's digest when the call was proposed (contract section 23); absent for a tool its server did not list. */
  toolDigest?: string;
  /** ISO 8601; now when absent. */
  createdAt?: string;
  /** Contract section 23: the tool's MCP server, the run's requester, its on_behalf_of, and the person the row counts for. */
  server?: string | null;
  requestedBy?: string | null;
  onBehalfOf?: string | null;
  requesterPerson?: string | null;
  /** Contract section 24: the policy version in force when the call was approved, and its hash. */
  policyVersion?: number | null;
  policyHash?: string | null;
}

/** created: false means a row for (run_id, tool_call_id, approval_id) already existed: replay_blocked. */
export type InsertIntentResult = { created: true; row: MutationOutcomeRow } | { created: false; row: MutationOutcomeRow };

export async function insertIntent(db: OutcomeDb, input: IntentInput): Promise<InsertIntentResult> {
  const approvalId = input.approvalId ?? AUTOMATIC_APPROVAL_ID;
  const inserted = await db
    .prepare(
      `INSERT INTO mutation_outcomes
         (mutation_id, run_id, channel_id, delivery_id, tool_call_id, approval_id, tool_name, arguments_digest,
          approved_by, approved_at, approvals_json, tool_digest, state, dispatched, created_at,
          server, requested_by, on_behalf_of, requester_person, policy_version, policy_hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'unresolved', 0, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id, tool_call_id, approval_id) DO NOTHING
       RETURNING *`,
    )
    .bind(
      input.mutationId ?? newMutationId(),
      input.runId,
      input.channelId,
      input.deliveryId,
      input.toolCallId,
      approvalId,
      input.toolName,
      input.argumentsDigest,
      input.approvedBy,
      input.approvedAt,
      JSON.stringify(input.approvals ?? []),
      input.toolDigest ?? null,
      input.createdAt ?? new Date().toISOString(),
      input.server ?? null,
      input.requestedBy ?? null,
      input.onBehalfOf ?? null,
      input.requesterPerson ?? null,
      input.policyVersion ?? null,
      input.policyHash ?? null,
    )
    .first<MutationOutcomeRow>();
  if (inserted) return { created: true, row: inserted };
  const existing = await db
    .prepare(`SELECT * FROM mutation_outcomes WHERE run_id = ? AND tool_call_id = ? AND approval_id = ?`)
    .bind(input.runId, input.toolCallId, approvalId)
    .first<MutationOutcomeRow>();
  if (!existing) throw new Error(`mutation intent for ${input.runId}/${input.toolCallId} conflicted but has no row`);
  return { created: false, row: existing };
}

// ---- transitions -----------------------------------------------------------

type TransitionError = "not_found" | "already_settled" | "not_dispatched" | "dispatched";

export type TransitionResult =
  | { ok: true; row: MutationOutcomeRow }
  | { ok: false; error: "not_found" }
  | { ok: false; error: Exclude<TransitionError, "not_found">; row: MutationOutcomeRow };

export type GuardedCheckpointResult =
  | { ok: true; row: MutationOutcomeRow }
  /** An earlier row of another run (same channel, tool, digest) is outcome_unknown or unresolved. */
  | { ok: false; error: "prior_outcome_unknown"; row: MutationOutcomeRow }
  /** An active halt covers the row (contract section 23): `halt_id` is the oldest such. */
  | { ok: false; error: "halted"; halt_id: string; row: MutationOutcomeRow }
  /** A mutation limit's window is full (contract section 23): `retry_after_s` is the hint. */
  | { ok: false; error: "rate_limited"; retry_after_s: number; row: MutationOutcomeRow; shadow_limited?: boolean }
  /** The active policy version is no longer the one the statement was built from (contract section 24). */
  | { ok: false; error: "policy_changed"; policy_version: number; row: MutationOutcomeRow }
  | { ok: false; error: "not_found" }
  | { ok: false; error: "not_checkpointable"; row: MutationOutcomeRow };

/**
 * The checkpoint as ONE statement (sections 8 and 23): the row becomes
 * dispatched=1, with `dispatched_at` from D1's clock, only if it is still
 * unresolved & dispatched=0, AND no EARLIER row of another run for the same
 * channel, tool and arguments digest is outcome_unknown or unresolved, AND no
 * active halt covers it. "Earlier" is the row's sortable id (mutation_id,
 * `mut_<ULID>`): of two identical calls approved at the same moment exactly
 * one has the smaller id, so only the later can be refused, never both. The
 * checks read the row's own channel, tool, digest, server and requesters, so
 * the caller cannot pass a mismatched identity, and there is no separate read
 * a halt could slip past: D1 serialises writes, so a halt committed before
 * this statement refuses it, and one committed after it finds the row
 * dispatched at a `dispatched_at` before its `engaged_at`. `limits` (contract
 * section 23) add one clause each: the limit's window still has room, so
 * concurrent checkpoints never exceed `max`. (A D1 batch has no
 * conditional abort, so the checks cannot be separate statements.)
 *
 * Only the refusal path reads again, to name its cause: a row no longer
 * unresolved & undispatched, else an active halt covering it, else a prior
 * row (both row conditions only ever go one way: unresolved → settled,
 * dispatched 0 → 1).
 */
export async function markDispatchedUnlessPrior(
  db: OutcomeDb,
  mutationId: string,
  limits: readonly MutationLimit[] = [],
  /** Contract section 24: the policy version the limits came from; the statement commits only while it is the active one. */
  policyVersion?: number,
  /** Contract section 24: the shadow version's limits, judged as a result column (`shadow_limited`) of the same statement. */
  shadow?: { limits: readonly MutationLimit[]; subject: Exclude<WindowSubject, "row"> },
): Promise<GuardedCheckpointResult> {
  const limited = limitClauses(limits);
  const shadowColumn = shadow === undefined ? { sql: "", binds: [] } : shadowLimitColumn(shadow.limits, shadow.subject, mutationId);
  const policyClause = policyVersion === undefined ? "" : "AND (SELECT version FROM policy_active WHERE id = 1) = ?";
  // The IN list names 'unresolved' first; the statement is the checkpoint (SET dispatched = 1).
  const row = await db
    .prepare(
      `UPDATE mutation_outcomes AS m SET dispatched = 1, dispatched_at = ${D1_NOW}
       WHERE m.mutation_id = ? AND m.state = 'unresolved' AND m.dispatched = 0
         AND NOT EXISTS (
           SELECT 1 FROM mutation_outcomes AS p
           WHERE p.channel_id = m.channel_id AND p.tool_name = m.tool_name AND p.arguments_digest = m.arguments_digest
             AND p.run_id <> m.run_id AND p.state IN ('unresolved', 'outcome_unknown') AND p.mutation_id < m.mutation_id
         )
         AND NOT EXISTS (SELECT 1 FROM halts AS h WHERE ${HALT_COVERS_ROW})
         ${limited.sql}
         ${policyClause}
       RETURNING *${shadowColumn.sql}`,
    )
    .bind(mutationId, ...limited.binds, ...(policyVersion === undefined ? [] : [policyVersion]), ...shadowColumn.binds)
    .first<MutationOutcomeRow & { shadow_limited?: number }>();
  if (row) return { ok: true, row };
  const current = await getOutcome(db, mutationId);
  if (!current) return { ok: false, error: "not_found" };
  if (current.state !== "unresolved" || current.dispatched !== 0) return { ok: false, error: "not_checkpointable", row: current };
  if (policyVersion !== undefined) {
    const pointer = await db.prepare("SELECT version FROM policy_active WHERE id = 1").first<{ version: number }>();
    if (pointer !== null && pointer.version !== policyVersion)
      return { ok: false, error: "policy_changed", policy_version: pointer.version, row: current };
  }
  const halt = await db
    .prepare(
      `SELECT h.halt_id FROM halts AS h, mutation_outcomes AS m
       WHERE m.mutation_id = ? AND ${HALT_COVERS_ROW} ORDER BY h.engaged_at, h.halt_id LIMIT 1`,
    )
    .bind(mutationId)
    .first<{ halt_id: string }>();
  if (halt) return { ok: false, error: "halted", halt_id: halt.halt_id, row: current };
  // A full limit (its window read through LIMIT max); room that freed meanwhile reads as the prior row.
  const full = limits.length > 0 ? await fullLimit(db, limits, "row", mutationId) : null;
  if (full !== null) {
    // Contract section 24: the shadow's verdict where the active version refused, read on this refusal path only.
    const shadowFull =
      shadow === undefined || shadow.limits.length === 0 ? null : await fullLimit(db, shadow.limits, shadow.subject, mutationId);
    return {
      ok: false,
      error: "rate_limited",
      retry_after_s: full.retry_after_s,
      row: current,
      ...(shadow !== undefined ? { shadow_limited: shadowFull !== null } : {}),
    };
  }
  return { ok: false, error: "prior_outcome_unknown", row: current };
}

export interface Settlement {
  state: SettledState;
  reason?: string;
  result?: JsonValue;
  error?: JsonValue;
  /** ISO 8601. */
  settledAt: string;
  /** How many tools/call requests carried the mutation (contract section 21); only for a dispatched call's settlement. */
  sends?: number;
}

/**
 * Settles an unresolved row, once. A settled row is never overwritten
 * (already_settled, with the row as it is). `completed` and `outcome_unknown`
 * need the checkpoint (dispatched=1), else not_dispatched. `not_executed` is
 * allowed either way: the engine settles not_executed only for a call it
 * knows it did not send, which includes a checkpoint acknowledged after its
 * wait expired (the row then reads dispatched: true, state: not_executed).
 */
export async function settle(db: OutcomeDb, mutationId: string, settlement: Settlement): Promise<TransitionResult> {
  const needsDispatch = settlement.state === "completed" || settlement.state === "outcome_unknown";
  const row = await db
    .prepare(
      `UPDATE mutation_outcomes
       SET state = ?, reason = ?, result_json = ?, error_json = ?, settled_at = ?, sends = COALESCE(?, sends)
       WHERE mutation_id = ? AND state = 'unresolved' AND (? = 0 OR dispatched = 1)
       RETURNING *`,
    )
    .bind(
      settlement.state,
      settlement.reason ?? null,
      settlement.result === undefined ? null : JSON.stringify(settlement.result),
      settlement.error === undefined ? null : JSON.stringify(settlement.error),
      settlement.settledAt,
      settlement.sends ?? null,
      mutationId,
      needsDispatch ? 1 : 0,
    )
    .first<MutationOutcomeRow>();
  if (row) return { ok: true, row };
  const current = await getOutcome(db, mutationId);
  if (!current) return { ok: false, error: "not_found" };
  if (current.state !== "unresolved") return { ok: false, error: "already_settled", row: current };
  return { ok: false, error: "not_dispatched", row: current };
}

/** The D1 batch a reconciliation's audit entry is written in (contract section 18). */
export interface AuditedBatch {
  /** D1's batch (typed loosely: this module is also compiled without the Workers types). */
  batch: (statements: unknown[]) => Promise<{ results: unknown[] }[]>;
  /** The entry's INSERT, conditional on the update before it (auditStatement's onlyIfPreviousChanged). */
  entry: unknown;
}

export interface ReconcileInput {
  outcome: ReconcileOutcome;
  evidence: string;
  reconciled_by: string;
  /** ISO 8601. */
  at: string;
}

export type ReconcileResult =
  | { ok: true; row: MutationOutcomeRow }
  | { ok: false; error: "not_found" }
  | { ok: false; error: "not_reconcilable"; state: MutationState };

/**
 * Authoritative reconciliation of an outcome_unknown row (and only of one):
 * its state becomes the confirmed outcome and the reconciliation is kept.
 * settled_at stays the engine's settlement time; reconciliation.at is when
 * the person settled it.
 */
export async function reconcile(
  db: OutcomeDb,
  mutationId: string,
  input: ReconcileInput,
  audited?: AuditedBatch,
): Promise<ReconcileResult> {
  const reconciliation: Reconciliation = {
    outcome: input.outcome,
    reconciled_by: input.reconciled_by,
    evidence: input.evidence,
    at: input.at,
  };
  const update = db
    .prepare(
      `UPDATE mutation_outcomes SET state = ?, reconciliation_json = ?
       WHERE mutation_id = ? AND state = 'outcome_unknown'
       RETURNING *`,
    )
    .bind(input.outcome, JSON.stringify(reconciliation), mutationId);
  // With an audit entry: the entry goes in the same D1 batch, written only when the update changed the row.
  const row = audited
    ? ((await audited.batch([update, audited.entry]))[0]?.results[0] as MutationOutcomeRow | undefined)
    : await update.first<MutationOutcomeRow>();
  if (row) return { ok: true, row };
  const current = await getOutcome(db, mutationId);
  if (!current) return { ok: false, error: "not_found" };
  return { ok: false, error: "not_reconcilable", state: current.state };
}

// ---- reads -----------------------------------------------------------------

export async function getOutcome(db: OutcomeDb, mutationId: string): Promise<MutationOutcomeRow | null> {
  return db.prepare(`SELECT * FROM mutation_outcomes WHERE mutation_id = ?`).bind(mutationId).first<MutationOutcomeRow>();
}

/** A run's rows in creation order (the mutation id, a ULID, breaks ties). */
export async function listRunOutcomes(db: OutcomeDb, runId: string): Promise<MutationOutcomeRow[]> {
  const { results } = await db
    .prepare(`SELECT * FROM mutation_outcomes WHERE run_id = ? ORDER BY created_at, mutation_id`)
    .bind(runId)
    .all<MutationOutcomeRow>();
  return results;
}
