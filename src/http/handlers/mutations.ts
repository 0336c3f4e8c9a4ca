// The durable-outcome routes (contract sections 8 and 9).
//  - The reads (GET /api/runs/{id}/mutations, GET /api/mutations/{id}) are
//    not storage workers of the execution path: they read D1 directly,
//    bounded by STORAGE_WAIT_MS, and take NO pool slot, so no flood of reads
//    can refuse a mutation. A stuck D1 is 503 storage_timeout.
//  - Reconcile is a write: it holds a pool slot (the storage guard), bounded
//    the same way, waiting in the pool's line like any other holder. No slot
//    within the bound is 503 storage_unavailable.
// Every 503 carries Retry-After; no request hangs.
import { z } from "zod";
import { globalStoragePool } from "../../outcomes/storage-pool-rpc";
import { apiError, errorJson, jsonResponse } from "../../base/api-error";
import type { HostConfig } from "../../config/config";
import type { Env } from "../../config/env";
import { getOutcome, isMutationId, listRunOutcomes, reconcile, toProjection, type OutcomeDb } from "../../outcomes/mutation-outcomes";
import { readJsonBody } from "../request-body";
import { requestOrigin } from "../request-origin";
import { boundedStorage, guardedStorage } from "../../outcomes/storage-guard";
import { MAX_IDENTIFIER_CHARS } from "../../ids";
import { actorOf } from "../../auth/actor-fields";
import type { Principal } from "../../auth/principal";
import { auditStatement, newAuditId } from "../../audit/audit-log";

export const reconcileRequestSchema = z
  .object({
    outcome: z.enum(["completed", "not_executed"]),
    evidence: z.string().min(1).max(4_000),
    reconciled_by: z.string().min(1).max(MAX_IDENTIFIER_CHARS).optional(),
  })
  .strict();

/** Seconds a client should wait before asking again when storage is busy or slow. */
const STORAGE_RETRY_AFTER_SECONDS = 1;

type Guarded<T> = { ok: true; value: T } | { ok: false; response: Response };

const retryAfter = () => ({ "retry-after": String(STORAGE_RETRY_AFTER_SECONDS) });

function storageTimeout(config: HostConfig): Response {
  return errorJson(
    503,
    {
      error: "storage_timeout",
      message: `Storage did not answer within ${config.STORAGE_WAIT_MS} ms. A write may still complete; read the mutation again before retrying.`,
    },
    retryAfter(),
  );
}

/** Runs one read of D1 without a pool slot, bounded by STORAGE_WAIT_MS; a 503 storage_timeout response past it. */
async function boundedRead<T>(
  env: Env,
  config: HostConfig,
  ctx: ExecutionContext,
  work: (db: OutcomeDb) => Promise<T>,
): Promise<Guarded<T>> {
  const result = await boundedStorage(config.STORAGE_WAIT_MS, () => work(env.DB), { waitUntil: (p) => ctx.waitUntil(p) });
  return result.status === "ok" ? { ok: true, value: result.value } : { ok: false, response: storageTimeout(config) };
}

/** Runs one outcome-storage write under the guard; a 503 response when it gets no slot or no answer in time. */
async function guarded<T>(
  env: Env,
  config: HostConfig,
  ctx: ExecutionContext,
  holder: string,
  work: (db: OutcomeDb) => Promise<T>,
): Promise<Guarded<T>> {
  const result = await guardedStorage(globalStoragePool(env.STORAGE_POOL), config.STORAGE_WAIT_MS, holder, () => work(env.DB), {
    waitUntil: (p) => ctx.waitUntil(p),
  });
  if (result.status === "ok") return { ok: true, value: result.value };
  if (result.status === "unavailable") {
    return {
      ok: false,
      response: errorJson(
        503,
        {
          error: "storage_unavailable",
          message: `No storage-pool slot freed within ${config.STORAGE_WAIT_MS} ms; nothing was written. Try again shortly.`,
        },
        retryAfter(),
      ),
    };
  }
  return { ok: false, response: storageTimeout(config) };
}

function mutationNotFound(mutationId: string) {
  return apiError(404, { error: "not_found", message: `No mutation ${JSON.stringify(mutationId)}.` });
}

/**
 * GET /api/runs/{run_id}/mutations. `runExists` is asked only when D1 has no
 * rows for the run, so rows outlive the run's own retention.
 */
export async function handleRunMutations(
  env: Env,
  config: HostConfig,
  ctx: ExecutionContext,
  runId: string,
  runExists: () => Promise<boolean>,
): Promise<Response> {
  const listed = await boundedRead(env, config, ctx, (db) => listRunOutcomes(db, runId));
  if (!listed.ok) return listed.response;
  const rows = listed.value;
  if (rows.length === 0 && !(await runExists())) {
    throw apiError(404, { error: "not_found", message: `No run ${JSON.stringify(runId)}.` });
  }
  return jsonResponse(200, { run_id: runId, mutations: rows.map(toProjection) });
}

/** GET /api/mutations/{mutation_id}. */
export async function handleGetMutation(env: Env, config: HostConfig, ctx: ExecutionContext, mutationId: string): Promise<Response> {
  if (!isMutationId(mutationId)) throw mutationNotFound(mutationId);
  const read = await boundedRead(env, config, ctx, (db) => getOutcome(db, mutationId));
  if (!read.ok) return read.response;
  const row = read.value;
  if (!row) throw mutationNotFound(mutationId);
  return jsonResponse(200, toProjection(row));
}

/** POST /api/mutations/{mutation_id}/reconcile: settles an outcome_unknown row (200), else 409 or 404. */
export async function handleReconcile(
  request: Request,
  env: Env,
  config: HostConfig,
  ctx: ExecutionContext,
  mutationId: string,
  principal: Principal,
): Promise<Response> {
  const body = await readJsonBody(request, reconcileRequestSchema);
  const reconciledBy = actorOf(principal, "reconciled_by", body.reconciled_by);
  if (!isMutationId(mutationId)) throw mutationNotFound(mutationId);
  const at = new Date().toISOString();
  const settlement = { outcome: body.outcome, evidence: body.evidence, reconciled_by: reconciledBy, at };
  const entry = auditStatement(
    env.DB,
    {
      id: newAuditId(),
      at,
      principal: principal.id,
      action: "mutation.reconcile",
      target: mutationId,
      result: "ok",
      details: { outcome: body.outcome, evidence: body.evidence },
      ...requestOrigin(principal, request),
    },
    { onlyIfPreviousChanged: true },
  );
  const written = await guarded(env, config, ctx, `api:reconcile:${mutationId}`, (db) =>
    reconcile(db, mutationId, settlement, { batch: (statements) => env.DB.batch(statements as D1PreparedStatement[]), entry }),
  );
  if (!written.ok) return written.response;
  const result = written.value;
  if (result.ok) return jsonResponse(200, toProjection(result.row));
  if (result.error === "not_found") throw mutationNotFound(mutationId);
  throw apiError(409, {
    error: "not_reconcilable",
    state: result.state,
    message: `Only an outcome_unknown mutation can be reconciled; this one is ${result.state}.`,
  });
}

/** GET /api/storage-pool: the pool's slots and counters (not itself outcome storage, so unguarded). */
export async function handleStoragePool(env: Env): Promise<Response> {
  return jsonResponse(200, await globalStoragePool(env.STORAGE_POOL).stats());
}
