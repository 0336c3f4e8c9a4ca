// The policy routes (contract section 24): PUT /api/policy stores a version
// (admin; a tightening one is active at once, a loosening one `proposed`
// until another person approves it, `"mode":"shadow"` a shadow), GET
// /api/policy the active version, GET /api/policy/versions and
// /versions/{v} the versions, POST /versions/{v}/approve activates one (a
// second person when it loosens), DELETE /versions/{v} withdraws one. Bad
// input is 400 (a document that fails validation: invalid_policy with the
// same `details` a bad setting gives). Each change is audited (policy.put,
// policy.approve, policy.withdraw) with its `loosens` and the version's
// number and hash.
import { z } from "zod";
import { auditStatement, newAuditId } from "../../audit/audit-log";
import type { Principal } from "../../auth/principal";
import { apiError, errorJson, jsonResponse } from "../../base/api-error";
import type { HostConfig } from "../../config/config";
import { parsePolicyDocument, type PolicyDocument, policyHash } from "../../config/policy-document";
import type { Env } from "../../config/env";
import { redactText } from "../../execution/redaction";
import {
  approveVersion,
  getActiveVersion,
  getVersion,
  listShadowDifferences,
  listVersions,
  type PolicyVersion,
  putVersion,
  withdrawVersion,
} from "../../outcomes/policy-store";
import { personOf } from "../../policy/persons";
import { loosenings } from "../../policy/policy-loosening";
import { cursorParam, limitParam } from "../../wire/listing-schemas";
import { readJsonBody } from "../request-body";
import { listing } from "./listings";

/** Contract section 24: `comment` is 0..1,000 characters (kept redacted). */
const MAX_COMMENT_CHARS = 1_000;
const STATUSES = ["active", "proposed", "shadow", "superseded", "withdrawn", "stale"] as const;

export const putPolicySchema = z
  .object({
    policy: z.unknown().meta({ description: '{"tools": <TOOL_POLICY>, "groups": <APPROVER_GROUPS>, "budget": <MUTATION_BUDGET>}' }),
    base_version: z.number().int().min(0),
    comment: z.string().max(MAX_COMMENT_CHARS).optional(),
    mode: z.enum(["enforce", "shadow"]).optional(),
  })
  .strict();

const looseningSchema = z.object({ path: z.string(), from: z.unknown(), to: z.unknown() }).strict();

/** The answer of PUT (201) and of approve and withdraw (200): the version without its document. */
export const policyChangeSchema = z
  .object({
    version: z.number().int().min(0),
    hash: z.string(),
    status: z.enum(STATUSES),
    created_by: z.string().nullable(),
    created_at: z.string().nullable(),
    comment: z.string(),
    loosens: z.array(looseningSchema),
    base_version: z.number().int().nullable().optional(),
    mode: z.enum(["enforce", "shadow"]).optional(),
    approved_by: z.string().optional(),
    approved_at: z.string().optional(),
  })
  .strict()
  .meta({ id: "PolicyChange" });

/** A version whole (GET /api/policy, the versions listing, one version). */
export const policyVersionSchema = policyChangeSchema.extend({ policy: z.record(z.string(), z.unknown()) }).meta({ id: "PolicyVersion" });

export const policyVersionsQuerySchema = z.object({ status: z.enum(STATUSES).optional(), limit: limitParam, cursor: cursorParam }).strict();

export const policyVersionsPageSchema = z
  .object({ versions: z.array(policyVersionSchema), next_cursor: z.string().nullable() })
  .strict()
  .meta({ id: "PolicyVersionsPage" });

/** GET /api/policy/shadow's query: one version's differences (any, without), section 15's paging. */
export const policyShadowQuerySchema = z
  .object({ version: z.coerce.number().int().min(1).optional(), limit: limitParam, cursor: cursorParam })
  .strict();

/** Where the shadow version's verdict at a check differed from the active one's (contract section 24). */
export const policyShadowPageSchema = z
  .object({
    differences: z.array(
      z
        .object({
          at: z.string(),
          run_id: z.string(),
          tool_call_id: z.string(),
          tool_name: z.string(),
          check: z.enum(["ask", "decider", "quorum", "checkpoint"]),
          active: z.string(),
          shadow: z.string(),
        })
        .strict(),
    ),
    next_cursor: z.string().nullable(),
  })
  .strict()
  .meta({ id: "PolicyShadowPage" });

/** GET /api/policy/shadow?version=&limit=&cursor= */
export function handleListShadowDifferences(url: URL, env: Env, config: HostConfig): Promise<Response> {
  return listing(url, env.DB, config.STORAGE_WAIT_MS, policyShadowQuerySchema, "differences", (_db, query) =>
    listShadowDifferences(env.DB, query),
  );
}

function whole(v: PolicyVersion) {
  const { created_by_person: _, ...shown } = v;
  return shown;
}

function change(v: PolicyVersion) {
  const { policy: _, ...rest } = whole(v);
  return rest;
}

function invalidPolicy(details: { path: string; message: string }[]): Error {
  return apiError(400, {
    error: "invalid_policy",
    message: `The policy does not validate as the settings would: ${details.map((d) => `${d.path}: ${d.message}`).join("; ")}.`,
    details,
  });
}

/** `{v}` as a version number: a non-negative integer, else 400. */
function versionParam(raw: string): number {
  if (!/^(0|[1-9][0-9]{0,8})$/.test(raw)) {
    throw apiError(400, {
      error: "invalid_request",
      message: `The version must be a non-negative integer; got ${JSON.stringify(raw)}.`,
      details: [{ path: "v", message: "a non-negative integer" }],
    });
  }
  return Number(raw);
}

/** A 409 naming the version's status: answered, not thrown (the router's error path keeps `status` for the HTTP status). */
function statusConflict(error: "not_proposed" | "not_deletable", message: string, status: string): Response {
  return errorJson(409, { error, message, status });
}

function notFound(version: number): Error {
  return apiError(404, { error: "not_found", message: `No policy version ${version}.` });
}

function conflict(activeVersion: number): Error {
  return apiError(409, {
    error: "policy_conflict",
    message: `The base version is not the active one (version ${activeVersion} is); read GET /api/policy and base the change on it.`,
    active_version: activeVersion,
  });
}

function audited(
  env: Env,
  principal: Principal,
  action: "policy.put" | "policy.approve" | "policy.withdraw",
  v: PolicyVersion,
  details: Record<string, unknown>,
) {
  return auditStatement(env.DB, {
    id: newAuditId(),
    at: new Date().toISOString(),
    principal: principal.id,
    action,
    target: `policy:${v.version}`,
    result: "ok",
    policy_version: v.version,
    policy_hash: v.hash,
    details: { status: v.status, ...details },
  }).run();
}

function personOfPrincipal(principal: Principal): string | null {
  return personOf(principal.id, { owner: principal.owner, owned_by_creator: principal.owned_by_creator });
}

/** PUT /api/policy */
export async function handlePutPolicy(request: Request, env: Env, config: HostConfig, principal: Principal): Promise<Response> {
  const body = await readJsonBody(request, putPolicySchema);
  const parsed = parsePolicyDocument(body.policy, config.MUTATION_RETENTION_DAYS, config.APPROVAL_TIMEOUT_MS);
  if (!parsed.ok) throw invalidPolicy(parsed.details);
  const document: PolicyDocument = parsed.document;
  const hash = await policyHash(document);
  const active = await getActiveVersion(env.DB, config);
  const shadow = body.mode === "shadow";
  if (!shadow && hash === active.hash) return jsonResponse(200, change(active));
  if (body.base_version !== active.version) throw conflict(active.version);
  const loosens = loosenings(active.policy, document);
  const comment = redactText(body.comment ?? "").slice(0, MAX_COMMENT_CHARS);
  const stored = await putVersion(env.DB, {
    document,
    hash,
    baseVersion: body.base_version,
    status: shadow ? "shadow" : loosens.length > 0 ? "proposed" : "active",
    createdBy: principal.id,
    createdByPerson: personOfPrincipal(principal),
    comment,
    loosens,
  });
  if (stored.kind === "conflict") throw conflict(stored.active_version);
  if (stored.kind === "shadow_exists") {
    throw apiError(409, {
      error: "shadow_exists",
      message: `Version ${stored.version} is the shadow version; withdraw or approve it first (at most one shadow exists).`,
      version: stored.version,
    });
  }
  await audited(env, principal, "policy.put", stored.row, { base_version: body.base_version, loosens, comment });
  return jsonResponse(201, change(stored.row));
}

/** GET /api/policy */
export async function handleGetPolicy(env: Env, config: HostConfig): Promise<Response> {
  return jsonResponse(200, whole(await getActiveVersion(env.DB, config)));
}

/** GET /api/policy/versions?status=&limit=&cursor= */
export function handleListPolicyVersions(url: URL, env: Env, config: HostConfig): Promise<Response> {
  return listing(url, env.DB, config.STORAGE_WAIT_MS, policyVersionsQuerySchema, "versions", async (_db, query) => {
    const page = await listVersions(env.DB, config, query);
    return { items: page.items.map(whole), next_cursor: page.next_cursor };
  });
}

/** GET /api/policy/versions/{v} */
export async function handleGetPolicyVersion(env: Env, config: HostConfig, raw: string): Promise<Response> {
  const version = versionParam(raw);
  const found = await getVersion(env.DB, config, version);
  if (found === null) throw notFound(version);
  return jsonResponse(200, whole(found));
}

/** POST /api/policy/versions/{v}/approve: activates a proposed or shadow version (a second person when it loosens). */
export async function handleApprovePolicy(env: Env, config: HostConfig, raw: string, principal: Principal): Promise<Response> {
  const version = versionParam(raw);
  const found = await getVersion(env.DB, config, version);
  if (found === null) throw notFound(version);
  if (found.status !== "proposed" && found.status !== "shadow") {
    return statusConflict("not_proposed", `Version ${version} is ${found.status}, not proposed or shadow.`, found.status);
  }
  // A version stored under other code must still validate before it binds.
  const parsed = parsePolicyDocument(found.policy, config.MUTATION_RETENTION_DAYS, config.APPROVAL_TIMEOUT_MS);
  if (!parsed.ok) throw invalidPolicy(parsed.details);
  const active = await getActiveVersion(env.DB, config);
  const loosens = loosenings(active.policy, parsed.document);
  if (loosens.length > 0) {
    const person = personOfPrincipal(principal);
    const author = found.created_by_person ?? null;
    if (person === null || person === author || principal.id === found.created_by) {
      throw apiError(403, {
        error: "second_person_required",
        message:
          person === null
            ? `Version ${version} loosens the policy: it needs an admin who is a person another party vouches for (Access, or a token an Access user made for themselves); ${principal.id} is not.`
            : `Version ${version} loosens the policy: another person than its author must approve it.`,
      });
    }
  }
  const result = await approveVersion(env.DB, version, principal.id);
  switch (result.kind) {
    case "not_found":
      throw notFound(version);
    case "not_proposed":
      return statusConflict("not_proposed", `Version ${version} is ${result.status}, not proposed or shadow.`, result.status);
    case "conflict":
      throw conflict(result.active_version);
    case "activated":
      await audited(env, principal, "policy.approve", result.row, { base_version: result.row.base_version, loosens });
      return jsonResponse(200, change(result.row));
  }
}

/** DELETE /api/policy/versions/{v}: withdraws a proposed or shadow version. */
export async function handleWithdrawPolicy(env: Env, config: HostConfig, raw: string, principal: Principal): Promise<Response> {
  const version = versionParam(raw);
  const result = await withdrawVersion(env.DB, version, principal.id);
  switch (result.kind) {
    case "not_found": {
      const zero = version === 0 ? await getVersion(env.DB, config, 0) : null;
      if (zero !== null)
        return statusConflict("not_deletable", "Version 0 is the deployment's settings; it is never withdrawn.", zero.status);
      throw notFound(version);
    }
    case "not_deletable":
      return statusConflict(
        "not_deletable",
        `Version ${version} is ${result.status}; only a proposed or shadow version is withdrawn.`,
        result.status,
      );
    case "withdrawn":
      await audited(env, principal, "policy.withdraw", result.row, {});
      return jsonResponse(200, change(result.row));
  }
}
