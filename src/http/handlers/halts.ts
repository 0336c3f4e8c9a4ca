// The halt routes (contract section 23): POST /api/halts (approver or admin)
// engages one, GET /api/halts lists them (viewer), GET /api/halts/{halt_id}
// reads one, DELETE /api/halts/{halt_id} (admin) is a release vote. Bad input
// is 400 with `details` (a scope that is malformed or names nothing
// configured: invalid_scope). Engaging and every counted release vote are
// audited (halt.engage, halt.release) in the batch of the change itself, and
// the webhooks halt.engaged and halt.released (contract section 26) are
// enqueued in that batch too, then the courier is woken.
import { z } from "zod";
import type { Principal } from "../../auth/principal";
import { getToken } from "../../auth/token-store";
import type { HostConfig } from "../../config/config";
import type { Env } from "../../config/env";
import { auditStatement, newAuditId } from "../../audit/audit-log";
import { redactText } from "../../execution/redaction";
import { parseMcpToolName } from "../../execution/tool-policy";
import { engageHalt, engagedHalt, getHalt, isHaltId, listHalts, type HaltRow, toHaltProjection, voteRelease } from "../../outcomes/halts";
import { type HaltScope, parseHaltScope, scopeText } from "../../policy/halt-scope";
import { personOf, restrictingPersonOf } from "../../policy/persons";
import { apiError, jsonResponse } from "../../base/api-error";
import { readJsonBody } from "../request-body";
import { requestOrigin } from "../request-origin";
import { logger } from "../../operate/logger";
import { listing } from "./listings";
import { cursorParam, limitParam } from "../../wire/listing-schemas";
import { notificationStatements, wakeCourier } from "../../webhooks/deployment-outbox";

/** Contract section 23: `reason` is 1..500 characters. */
const MAX_REASON_CHARS = 500;

export const engageHaltSchema = z
  .object({
    scope: z.string().min(1).max(1_000),
    reason: z.string().min(1).max(MAX_REASON_CHARS),
    cancel_runs: z.boolean().optional(),
  })
  .strict();

export const haltsQuerySchema = z
  .object({ status: z.enum(["active", "released"]).optional(), limit: limitParam, cursor: cursorParam })
  .strict();

/** A halt as GET answers it (contract section 23); the 201 is its first six keys. */
export const haltSchema = z
  .object({
    halt_id: z.string(),
    scope: z.string(),
    reason: z.string(),
    engaged_by: z.string(),
    engaged_at: z.string().meta({ description: "D1's clock when the halt committed" }),
    status: z.enum(["active", "released"]),
    releases: z.number().int().min(0).optional(),
    required: z.number().int().min(1).max(5).optional(),
    released_by: z.string().optional(),
    released_at: z.string().optional(),
    cancel: z.object({ requested: z.number().int(), done: z.number().int(), finished_at: z.string().optional() }).strict().optional(),
  })
  .strict()
  .meta({ id: "Halt" });

export const haltsPageSchema = z
  .object({ halts: z.array(haltSchema), next_cursor: z.string().nullable() })
  .strict()
  .meta({ id: "HaltsPage" });

export const haltReleaseSchema = z
  .object({
    halt_id: z.string(),
    status: z.enum(["active", "released"]),
    released_by: z.string().optional(),
    released_at: z.string().optional(),
    releases: z.number().int().optional(),
    required: z.number().int().optional(),
  })
  .strict()
  .meta({ id: "HaltRelease" });

function invalidScope(message: string): Error {
  return apiError(400, {
    error: "invalid_scope",
    message: `scope: ${message}.`,
    details: [{ path: "scope", message }],
  });
}

/** The scope, checked against what is configured (a scope naming nothing configured is invalid_scope). */
function scopeOf(raw: string, config: HostConfig): HaltScope {
  const parsed = parseHaltScope(raw, {
    server: (name) => Object.hasOwn(config.MCP_SERVERS, name),
    tool: (name) => {
      const tool = parseMcpToolName(name);
      if (tool === undefined) return `"${name}" is not an MCP tool name (mcp__<server>__<tool>)`;
      return Object.hasOwn(config.MCP_SERVERS, tool.server) ? undefined : `no MCP server "${tool.server}" is configured (MCP_SERVERS)`;
    },
  });
  if (!parsed.ok) throw invalidScope(parsed.message);
  return parsed.scope;
}

/** The person a `principal:` halt also matches: the principal's, a named token its owner's (contract section 19's restricting reading). */
async function scopePersonOf(db: D1Database, scope: HaltScope): Promise<string | null> {
  if (scope.kind !== "principal") return null;
  const id = scope.value;
  if (id.startsWith("token:") && id !== "token:root") {
    const token = await getToken(db, id.slice("token:".length));
    return restrictingPersonOf(id, token === null ? {} : { owner: token.owner, owned_by_creator: token.owned_by_creator });
  }
  return restrictingPersonOf(id);
}

/** POST /api/halts */
export async function handleEngageHalt(request: Request, env: Env, config: HostConfig, principal: Principal): Promise<Response> {
  const body = await readJsonBody(request, engageHaltSchema);
  const scope = scopeOf(body.scope, config);
  if (body.cancel_runs === true && scope.kind !== "all" && scope.kind !== "principal") {
    throw invalidScope('cancel_runs is only for "all" and "principal:" scopes');
  }
  const reason = redactText(body.reason).slice(0, MAX_REASON_CHARS);
  const row = await engageHalt(
    env.DB,
    {
      scope,
      scopePerson: await scopePersonOf(env.DB, scope),
      reason,
      engagedBy: principal.id,
      required: config.HALT_RELEASE_APPROVALS,
      cancelRuns: body.cancel_runs === true,
    },
    (haltId) => [
      auditStatement(env.DB, {
        id: newAuditId(),
        at: new Date().toISOString(),
        principal: principal.id,
        action: "halt.engage",
        target: haltId,
        result: "ok",
        details: { scope: scopeText(scope), reason },
        ...requestOrigin(principal, request),
      }),
      ...notificationStatements(env.DB, config.WEBHOOKS, { type: "halt.engaged", data: { halt_id: haltId }, subject: haltId }, Date.now()),
    ],
  );
  if (config.WEBHOOKS.some((e) => e.events.includes("halt.engaged"))) await wakeCourier(env);
  if (body.cancel_runs === true) {
    // The job runs on the halt's own alarm (durable-objects/halt-canceller.ts), in batches of at most 50.
    // The halt is engaged whatever happens here: a lost arming is armed again by the Cron Trigger (resumeCancelJobs).
    await env.HALT_CANCELLER.get(env.HALT_CANCELLER.idFromName(row.halt_id))
      .start(row.halt_id)
      .catch((err: Error) =>
        logger.warn("halts: the cancel job was not armed; the Cron Trigger arms it", { halt_id: row.halt_id, error: err.message }),
      );
  }
  return jsonResponse(201, engagedHalt(row));
}

/** GET /api/halts?status=active|released */
export function handleListHalts(url: URL, env: Env, waitMs: number): Promise<Response> {
  return listing(url, env.DB, waitMs, haltsQuerySchema, "halts", (db, query) => listHalts(db, query));
}

async function knownHalt(env: Env, haltId: string): Promise<HaltRow> {
  const row = isHaltId(haltId) ? await getHalt(env.DB, haltId) : null;
  if (row === null) throw apiError(404, { error: "not_found", message: `No halt ${JSON.stringify(haltId)}.` });
  return row;
}

/** GET /api/halts/{halt_id} */
export async function handleGetHalt(env: Env, haltId: string): Promise<Response> {
  return jsonResponse(200, toHaltProjection(await knownHalt(env, haltId)));
}

function releasedBody(row: HaltRow) {
  return { halt_id: row.halt_id, status: "released", released_by: row.released_by, released_at: row.released_at };
}

/** DELETE /api/halts/{halt_id}: one release vote (contract section 23). */
export async function handleReleaseHalt(
  request: Request,
  env: Env,
  config: HostConfig,
  haltId: string,
  principal: Principal,
): Promise<Response> {
  const halt = await knownHalt(env, haltId);
  if (halt.status === "released") return jsonResponse(200, releasedBody(halt));
  const person = personOf(principal.id, { owner: principal.owner, owned_by_creator: principal.owned_by_creator });
  if (halt.required > 1 && person === null) {
    throw apiError(403, {
      error: "second_person_required",
      message: `Releasing this halt takes ${halt.required} distinct persons; ${principal.id} is a credential that is no person and cannot vote.`,
    });
  }
  if (halt.scope_kind === "principal" && (principal.id === halt.scope_value || (person !== null && person === halt.scope_person))) {
    throw apiError(403, { error: "self_release_forbidden", message: "The person a principal: halt names may not release it." });
  }
  // Contract section 26: halt.released, in the vote's batch, only once the halt is released (once per endpoint, ever).
  const released = notificationStatements(
    env.DB,
    config.WEBHOOKS,
    { type: "halt.released", data: { halt_id: haltId }, subject: haltId },
    Date.now(),
    { sql: "EXISTS (SELECT 1 FROM halts WHERE halt_id = ? AND status = 'released')", binds: [haltId] },
  );
  const voted = await voteRelease(env.DB, haltId, person ?? principal.id, principal.id, released);
  if (voted.kind === "not_found") throw apiError(404, { error: "not_found", message: `No halt ${JSON.stringify(haltId)}.` });
  const { row, counted } = voted;
  if (counted) {
    await auditStatement(env.DB, {
      id: newAuditId(),
      at: new Date().toISOString(),
      principal: principal.id,
      action: "halt.release",
      target: haltId,
      result: "ok",
      details: { releases: Number(row.releases), required: row.required },
      ...requestOrigin(principal, request),
    }).run();
  }
  if (row.status === "released") {
    if (released.length > 0) await wakeCourier(env);
    return jsonResponse(200, releasedBody(row));
  }
  return jsonResponse(202, { halt_id: row.halt_id, status: "active", releases: Number(row.releases), required: row.required });
}
