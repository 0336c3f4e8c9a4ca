// The durable-outcome routes (contract sections 8 and 9). Every D1 call here is
// mutation-outcome storage, so it runs through the storage guard: it holds a
// pool slot and is bounded by STORAGE_WAIT_MS. A full pool or a stuck D1 is a
// 503 with Retry-After, never a hung request.
import { z } from "zod";
import { globalStoragePool } from "../../outcomes/storage-pool-rpc";
import { apiError, jsonResponse } from "../api-error";
import type { HostConfig } from "../../config/config";
import type { Env } from "../../config/env";
import { getOutcome, isMutationId, listRunOutcomes, reconcile, toProjection, type OutcomeDb } from "../../outcomes/mutation-outcomes";
import { readJsonBody } from "../request-body";
import { guardedStorage } from "../../outcomes/storage-guard";
import { MAX_IDENTIFIER_CHARS } from "../../ids";

export const reconcileRequestSchema = z
  .object({
    outcome: z.enum(["completed", "not_executed"]),
    evidence: z.string().min(1).max(4_000),
    reconciled_by: z.string().min(1).max(MAX_IDENTIFIER_CHARS),
  })
  .strict();

/** Seconds a client should wait before asking again when storage is busy or slow. */
const STORAGE_RETRY_AFTER_SECONDS = 1;

type Guarded<T> = { ok: true; value: T } | { ok: false; response: Response };

/** Runs one outcome-storage call under the guard; a 503 response when it gets no slot or no answer in time. */
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
  const headers = { "retry-after": String(STORAGE_RETRY_AFTER_SECONDS) };
  if (result.status === "unavailable") {
    return {
      ok: false,
      response: jsonResponse(
        503,
        { error: "storage_unavailable", message: "Every storage-pool slot is in use; nothing was read or written. Try again shortly." },
        headers,
      ),
    };
  }
  return {
    ok: false,
    response: jsonResponse(
      503,
      {
        error: "storage_timeout",
        message: `Storage did not answer within ${config.STORAGE_WAIT_MS} ms. A write may still complete; read the mutation again before retrying.`,
      },
      headers,
    ),
  };
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
  const listed = await guarded(env, config, ctx, `api:list:${runId}`, (db) => listRunOutcomes(db, runId));
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
  const read = await guarded(env, config, ctx, `api:read:${mutationId}`, (db) => getOutcome(db, mutationId));
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
): Promise<Response> {
  const body = await readJsonBody(request, reconcileRequestSchema);
  if (!isMutationId(mutationId)) throw mutationNotFound(mutationId);
  const at = new Date().toISOString();
  const written = await guarded(env, config, ctx, `api:reconcile:${mutationId}`, (db) => reconcile(db, mutationId, { ...body, at }));
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
