// The routes of an audit you can prove (contract section 25):
// GET /api/audit/export (admin) streams the sealed chain, GET and POST
// /api/audit/checkpoints list (viewer) and make (admin) signed checkpoints,
// GET /api/audit/public-key (viewer) serves every key that signed one, POST
// /api/audit/{id}/scrub (admin) drops an entry's details. The
// work is in src/audit; checkpoints are made by the one sealer object.
import { z } from "zod";
import { apiError, jsonResponse } from "../../base/api-error";
import { validate } from "../request-body";
import type { Env } from "../../config/env";
import { auditExportQuerySchema, exportStream, planExport } from "../../audit/audit-export";
import { listCheckpoints, signingKeys } from "../../audit/audit-checkpoints";
import { sealerStub } from "../../audit/wake-sealer";
import { CursorError, decodeCursor, encodeCursor } from "../../listings/cursor";
import { cursorParam, limitParam } from "../../wire/listing-schemas";
import { detailsHash } from "../../client/audit-chain";
import { auditStatement, newAuditId } from "../../audit/audit-log";

function queryOf(url: URL): Record<string, string> {
  return Object.fromEntries(url.searchParams);
}

export async function handleAuditExport(url: URL, db: D1Database): Promise<Response> {
  const query = validate(auditExportQuerySchema, queryOf(url));
  const plan = await planExport(db, query);
  if (plan.kind === "retained") {
    throw apiError(410, {
      error: "retained_from",
      message: `Entries before seq ${plan.earliest_seq} were deleted by retention; export from_seq=${plan.earliest_seq} or later.`,
      earliest_seq: plan.earliest_seq,
    });
  }
  return new Response(exportStream(db, plan), {
    status: 200,
    headers: {
      "content-type": "application/x-ndjson; charset=utf-8",
      "sealed-through-seq": String(plan.head.seq),
      "cache-control": "no-store",
    },
  });
}

export const checkpointsQuerySchema = z.object({ limit: limitParam, cursor: cursorParam }).strict();

export async function handleListCheckpoints(url: URL, db: D1Database): Promise<Response> {
  const query = validate(checkpointsQuerySchema, queryOf(url));
  let before: number | undefined;
  if (query.cursor !== undefined) {
    try {
      before = Number(decodeCursor(query.cursor, 1)[0]);
    } catch (err) {
      if (!(err instanceof CursorError)) throw err;
    }
    if (before === undefined || !Number.isSafeInteger(before)) {
      throw apiError(400, {
        error: "invalid_request",
        message: "cursor: pass the next_cursor of the previous page unchanged, or leave it out for the first page.",
        details: [{ path: "cursor", message: "not a cursor of this listing", code: "invalid_cursor" }],
      });
    }
  }
  const page = await listCheckpoints(db, query.limit, before);
  return jsonResponse(200, {
    checkpoints: page.checkpoints,
    next_cursor: page.more && page.last !== null ? encodeCursor([String(page.last)]) : null,
  });
}

export async function handleCreateCheckpoint(env: Env, principal: string): Promise<Response> {
  const answer = await sealerStub(env).checkpoint(principal);
  switch (answer.kind) {
    case "unsigned":
      throw apiError(409, { error: "unsigned", message: "AUDIT_SIGNING_KEY is not set: the audit log has no checkpoints." });
    case "rate_limited":
      throw apiError(429, {
        error: "rate_limited",
        message: "A checkpoint is made on demand at most once a minute.",
        retry_after_seconds: answer.retryAfterSeconds,
      });
    case "existing":
      return jsonResponse(200, answer.checkpoint);
    case "created":
      return jsonResponse(201, answer.checkpoint);
  }
}

export async function handlePublicKeys(db: D1Database): Promise<Response> {
  return jsonResponse(200, { keys: await signingKeys(db) });
}

/**
 * POST /api/audit/{id}/scrub (admin): drops an entry's `details`, keeping its
 * `details_hash` (taken now if the entry is not sealed yet), so the chain
 * still verifies; audited `audit.scrub` in the same D1 batch.
 */
export async function handleScrub(db: D1Database, id: string, principal: string): Promise<Response> {
  const row = await db
    .prepare("SELECT details, details_hash FROM audit_log WHERE id = ?")
    .bind(id)
    .first<{ details: string | null; details_hash: string | null }>();
  if (row === null) throw apiError(404, { error: "not_found", message: `No audit entry ${JSON.stringify(id)}.` });
  const hash = row.details_hash ?? (row.details === null ? null : await detailsHash(JSON.parse(row.details) as Record<string, unknown>));
  await db.batch([
    db.prepare("UPDATE audit_log SET details_hash = COALESCE(details_hash, ?), details = NULL WHERE id = ?").bind(hash, id),
    auditStatement(db, {
      id: newAuditId(),
      at: new Date().toISOString(),
      principal,
      action: "audit.scrub",
      target: id,
      result: "ok",
      via: "api",
    }),
  ]);
  return jsonResponse(200, { id, scrubbed: true, ...(hash !== null ? { details_hash: hash } : {}) });
}
