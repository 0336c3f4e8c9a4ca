// Policy versions in D1 (contract section 24, migrations/0033_policy_versions.sql):
// storing a version (a tightening one active in the same statement, which
// moves the pointer only while its base is the active version), approving
// one (one UPDATE of the pointer guarded by the base; the migration's
// triggers supersede the old version and make the other candidates stale),
// withdrawing, reading and listing; and the per-isolate cache of the active
// version's document, keyed by the pointer's version: a check that reads the
// pointer (folded into the halts read, src/outcomes/halts.ts) gets the
// document without another D1 read unless the pointer moved, so no check
// after an activation's answer uses the old rule.
import { CursorError, decodeCursor, encodeCursor } from "../listings/cursor";
import type { HostConfig } from "../config/config";
import { parsePolicyDocument, type PolicyDocument, type PolicyIssue, policyHash, settingsDocument } from "../config/policy-document";
import type { Loosening } from "../policy/policy-loosening";
import { D1_NOW, type HaltDb, type HaltStatement } from "./halts";

export type PolicyStatus = "active" | "proposed" | "shadow" | "superseded" | "withdrawn" | "stale";

/** A `policy_versions` row as D1 returns it. */
interface VersionRow {
  version: number;
  document: string;
  hash: string;
  status: PolicyStatus;
  mode: "enforce" | "shadow";
  base_version: number;
  created_by: string;
  created_by_person: string | null;
  created_at: string;
  comment: string;
  loosens: string;
  approved_by: string | null;
  approved_at: string | null;
}

/** A version as the routes answer it (contract section 24). */
export interface PolicyVersion {
  version: number;
  hash: string;
  status: PolicyStatus;
  mode: "enforce" | "shadow";
  base_version: number | null;
  created_by: string | null;
  created_by_person?: string | null;
  created_at: string | null;
  comment: string;
  loosens: Loosening[];
  approved_by?: string;
  approved_at?: string;
  policy: PolicyDocument;
}

function toVersion(row: VersionRow): PolicyVersion {
  return {
    version: row.version,
    hash: row.hash,
    status: row.status,
    mode: row.mode,
    base_version: row.base_version,
    created_by: row.created_by,
    created_by_person: row.created_by_person,
    created_at: row.created_at,
    comment: row.comment,
    loosens: JSON.parse(row.loosens) as Loosening[],
    ...(row.approved_by !== null ? { approved_by: row.approved_by } : {}),
    ...(row.approved_at !== null ? { approved_at: row.approved_at } : {}),
    policy: JSON.parse(row.document) as PolicyDocument,
  };
}

/** Version 0: the deployment's settings, never stored. */
async function settingsVersion(config: HostConfig, active: boolean): Promise<PolicyVersion> {
  const policy = settingsDocument(config);
  return {
    version: 0,
    hash: await policyHash(policy),
    status: active ? "active" : "superseded",
    mode: "enforce",
    base_version: null,
    created_by: null,
    created_at: null,
    comment: "the deployment's settings (TOOL_POLICY, APPROVER_GROUPS, MUTATION_BUDGET)",
    loosens: [],
    policy,
  };
}

/** The pointer: the active version's number (0 until a stored version is activated). */
async function activeVersionNumber(db: Pick<HaltDb, "prepare">): Promise<number> {
  const row = await db.prepare("SELECT version FROM policy_active WHERE id = 1").first<{ version: number }>();
  return row?.version ?? 0;
}

export async function getVersion(db: Pick<HaltDb, "prepare">, config: HostConfig, version: number): Promise<PolicyVersion | null> {
  if (version === 0) return settingsVersion(config, (await activeVersionNumber(db)) === 0);
  const row = await db.prepare("SELECT * FROM policy_versions WHERE version = ?").bind(version).first<VersionRow>();
  return row === null ? null : toVersion(row);
}

/** The active version whole (GET /api/policy). */
export async function getActiveVersion(db: Pick<HaltDb, "prepare">, config: HostConfig): Promise<PolicyVersion> {
  const row = await db
    .prepare("SELECT v.* FROM policy_active p JOIN policy_versions v ON v.version = p.version WHERE p.id = 1")
    .first<VersionRow>();
  return row === null ? settingsVersion(config, true) : toVersion(row);
}

/** GET /api/policy/versions: newest first, section 15's envelope and cursor; version 0 is last. */
export async function listVersions(
  db: Pick<HaltDb, "prepare">,
  config: HostConfig,
  query: { limit: number; cursor?: string | undefined; status?: PolicyStatus | undefined },
): Promise<{ items: PolicyVersion[]; next_cursor: string | null }> {
  const below = query.cursor === undefined ? null : Number(decodeCursor(query.cursor, 1)[0]);
  if (below !== null && !Number.isInteger(below)) throw new CursorError("the cursor was not made by this listing");
  const { results } = await db
    .prepare(
      `SELECT * FROM policy_versions WHERE (?1 IS NULL OR version < ?1) AND (?2 IS NULL OR status = ?2) ORDER BY version DESC LIMIT ?3`,
    )
    .bind(below, query.status ?? null, query.limit + 1)
    .all<VersionRow>();
  const items = results.slice(0, query.limit).map(toVersion);
  if (results.length <= query.limit && below !== 0) {
    // The settings close the list (once, whatever the page size), when they match the status asked for.
    const active = await activeVersionNumber(db);
    const zero = await settingsVersion(config, active === 0);
    if (query.status === undefined || query.status === zero.status) {
      if (items.length < query.limit) items.push(zero);
      else return { items, next_cursor: encodeCursor([String(items.at(-1)!.version)]) };
    }
    return { items, next_cursor: null };
  }
  return { items, next_cursor: items.length > 0 ? encodeCursor([String(items.at(-1)!.version)]) : null };
}

export interface NewVersion {
  document: PolicyDocument;
  hash: string;
  baseVersion: number;
  status: "active" | "proposed" | "shadow";
  createdBy: string;
  createdByPerson: string | null;
  comment: string;
  loosens: Loosening[];
}

export type PutResult =
  | { kind: "stored"; row: PolicyVersion }
  | { kind: "conflict"; active_version: number }
  | { kind: "shadow_exists"; version: number };

/**
 * Stores a version as ONE statement: inserted only while its base is the active version (the next
 * number after the highest); a tightening one (`status: active`) moves the pointer in the same
 * statement (the migration's trigger). The pointer and the shadow are read in the same batch, to
 * name the conflict of an insert that did not happen.
 */
export async function putVersion(db: HaltDb, input: NewVersion): Promise<PutResult> {
  const insert = db
    .prepare(
      `INSERT INTO policy_versions (version, document, hash, status, mode, base_version, created_by, created_by_person, created_at, comment, loosens)
       SELECT (SELECT COALESCE(MAX(version), 0) + 1 FROM policy_versions), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ${D1_NOW}, ?8, ?9
        WHERE (SELECT version FROM policy_active WHERE id = 1) = ?5
          AND (?3 <> 'shadow' OR NOT EXISTS (SELECT 1 FROM policy_versions WHERE status = 'shadow'))`,
    )
    .bind(
      JSON.stringify(input.document),
      input.hash,
      input.status,
      input.status === "shadow" ? "shadow" : "enforce",
      input.baseVersion,
      input.createdBy,
      input.createdByPerson,
      input.comment,
      JSON.stringify(input.loosens),
    );
  const results = await db.batch([
    insert,
    db.prepare(
      "SELECT (SELECT version FROM policy_active WHERE id = 1) AS active_version, (SELECT version FROM policy_versions WHERE status = 'shadow') AS shadow",
    ),
  ]);
  const changed = (results[0]?.meta?.changes ?? 0) > 0;
  const state = results.at(-1)?.results[0] as { active_version: number; shadow: number | null } | undefined;
  if (!changed) {
    if (state !== undefined && state.active_version !== input.baseVersion)
      return { kind: "conflict", active_version: state.active_version };
    if (state?.shadow !== null && state?.shadow !== undefined) return { kind: "shadow_exists", version: state.shadow };
    return { kind: "conflict", active_version: state?.active_version ?? 0 };
  }
  const row = await db
    .prepare("SELECT * FROM policy_versions WHERE hash = ? AND created_by = ? ORDER BY version DESC LIMIT 1")
    .bind(input.hash, input.createdBy)
    .first<VersionRow>();
  if (row === null) throw new Error("a stored policy version could not be read back");
  return { kind: "stored", row: toVersion(row) };
}

export type ApproveResult =
  | { kind: "activated"; row: PolicyVersion }
  | { kind: "conflict"; active_version: number }
  | { kind: "not_proposed"; status: PolicyStatus }
  | { kind: "not_found" };

/**
 * Approves a proposed or shadow version as ONE statement: the pointer moves to it only while its
 * base is the active version; the triggers make it active, the old one superseded, the others stale.
 */
export async function approveVersion(
  db: HaltDb,
  version: number,
  by: string,
  extra: (db: HaltDb) => HaltStatement[] = () => [],
): Promise<ApproveResult> {
  const results = await db.batch([
    db
      .prepare(
        `UPDATE policy_active SET version = ?1, activated_by = ?2, activated_at = ${D1_NOW}
          WHERE id = 1 AND version = (SELECT base_version FROM policy_versions WHERE version = ?1 AND status IN ('proposed', 'shadow'))`,
      )
      .bind(version, by),
    ...extra(db),
    db
      .prepare("SELECT v.*, (SELECT version FROM policy_active WHERE id = 1) AS active_version FROM policy_versions v WHERE version = ?")
      .bind(version),
  ]);
  const row = results.at(-1)?.results[0] as (VersionRow & { active_version: number }) | undefined;
  if (row === undefined) return { kind: "not_found" };
  if ((results[0]?.meta?.changes ?? 0) > 0) return { kind: "activated", row: toVersion(row) };
  if (row.status !== "proposed" && row.status !== "shadow") return { kind: "not_proposed", status: row.status };
  return { kind: "conflict", active_version: row.active_version };
}

export type WithdrawResult =
  | { kind: "withdrawn"; row: PolicyVersion }
  | { kind: "not_deletable"; status: PolicyStatus }
  | { kind: "not_found" };

/** Withdraws a proposed or shadow version (DELETE /api/policy/versions/{v}); any other status is not deletable. */
export async function withdrawVersion(
  db: HaltDb,
  version: number,
  by: string,
  extra: (db: HaltDb) => HaltStatement[] = () => [],
): Promise<WithdrawResult> {
  const results = await db.batch([
    db
      .prepare(
        `UPDATE policy_versions SET status = 'withdrawn', withdrawn_by = ?2, withdrawn_at = ${D1_NOW}
          WHERE version = ?1 AND status IN ('proposed', 'shadow')`,
      )
      .bind(version, by),
    ...extra(db),
    db.prepare("SELECT * FROM policy_versions WHERE version = ?").bind(version),
  ]);
  const row = results.at(-1)?.results[0] as VersionRow | undefined;
  if (row === undefined) return { kind: "not_found" };
  if ((results[0]?.meta?.changes ?? 0) > 0) return { kind: "withdrawn", row: toVersion(row) };
  return { kind: "not_deletable", status: row.status };
}

// ---- the active version, per isolate -----------------------------------------------------

/** The rule in force at one check: its version, hash and document (contract section 24). */
export interface PolicySnapshot {
  version: number;
  hash: string;
  document: PolicyDocument;
}

/** An active stored version that no longer validates: every /api/* route answers 503 bad_config naming it. */
export interface BadPolicy {
  bad: true;
  version: number;
  /** Its stored hash (a version not stored at all: the hash of nothing). */
  hash: string;
  details: PolicyIssue[];
}

/** Stored versions by number: immutable, so kept for the isolate's life once read and validated. */
const stored = new Map<number, PolicySnapshot | BadPolicy>();
const settings = new WeakMap<HostConfig, Promise<PolicySnapshot>>();

function settingsSnapshot(config: HostConfig): Promise<PolicySnapshot> {
  let found = settings.get(config);
  if (found === undefined) {
    const document = settingsDocument(config);
    found = policyHash(document).then((hash) => ({ version: 0, hash, document }));
    settings.set(config, found);
  }
  return found;
}

/**
 * The snapshot of `version` (the pointer a check just read): from this isolate's cache, else read
 * once from D1 and validated as the settings are (a version that no longer validates is BadPolicy).
 */
export async function policySnapshot(
  db: Pick<HaltDb, "prepare">,
  config: HostConfig,
  version: number,
): Promise<PolicySnapshot | BadPolicy> {
  if (version === 0) return settingsSnapshot(config);
  const known = stored.get(version);
  if (known !== undefined) return known;
  const row = await db
    .prepare("SELECT document, hash FROM policy_versions WHERE version = ?")
    .bind(version)
    .first<{ document: string; hash: string }>();
  if (row === null)
    return {
      bad: true,
      version,
      hash: `sha256:${"0".repeat(64)}`,
      details: [{ path: "policy_active.version", message: `version ${version} is not stored` }],
    };
  let value: unknown;
  try {
    value = JSON.parse(row.document);
  } catch {
    value = undefined;
  }
  const parsed = parsePolicyDocument(value, config.MUTATION_RETENTION_DAYS, config.APPROVAL_TIMEOUT_MS);
  const snapshot: PolicySnapshot | BadPolicy = parsed.ok
    ? { version, hash: row.hash, document: parsed.document }
    : { bad: true, version, hash: row.hash, details: parsed.details };
  stored.set(version, snapshot);
  return snapshot;
}

/** The pointer and its snapshot, for a path that has no pointer read of its own to fold it into. */
export async function readActivePolicy(db: Pick<HaltDb, "prepare">, config: HostConfig): Promise<PolicySnapshot | BadPolicy> {
  return policySnapshot(db, config, await activeVersionNumber(db));
}

export function isBadPolicy(value: PolicySnapshot | BadPolicy): value is BadPolicy {
  return "bad" in value;
}

/**
 * Whether the active stored version no longer validates (contract section 24: every /api/* route
 * answers 503 bad_config naming it). Validity is a fact of this code and an immutable document, and
 * no route activates a version that does not validate, so once this isolate found the active version
 * good it is not read again; a bad one is read again on every request, so a repair is seen at once.
 */
export async function activePolicyProblem(db: Pick<HaltDb, "prepare">, config: HostConfig): Promise<BadPolicy | null> {
  if (knownGood.has(config)) return null;
  let read: PolicySnapshot | BadPolicy;
  try {
    read = await readActivePolicy(db, config);
  } catch {
    return null; // D1 unreachable: each route's own storage answer says so
  }
  if (isBadPolicy(read)) {
    stored.delete(read.version);
    return read;
  }
  knownGood.add(config);
  return null;
}
const knownGood = new WeakSet<HostConfig>();

// ---- shadow differences (contract section 24) --------------------------------------------

/** One difference as GET /api/policy/shadow lists it. */
export interface ShadowDifferenceItem {
  at: string;
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  check: string;
  active: string;
  shadow: string;
}

/** GET /api/policy/shadow: newest first (section 15's envelope and cursor), of one version or all. */
export async function listShadowDifferences(
  db: Pick<HaltDb, "prepare">,
  query: { version?: number | undefined; limit: number; cursor?: string | undefined },
): Promise<{ items: ShadowDifferenceItem[]; next_cursor: string | null }> {
  const after = query.cursor === undefined ? null : decodeCursor(query.cursor, 2);
  const { results } = await db
    .prepare(
      `SELECT difference_id, at, run_id, tool_call_id, tool_name, check_name, active, shadow FROM policy_shadow_differences
        WHERE (?1 IS NULL OR version = ?1) AND (?2 IS NULL OR at < ?2 OR (at = ?2 AND difference_id < ?3))
        ORDER BY at DESC, difference_id DESC LIMIT ?4`,
    )
    .bind(query.version ?? null, after?.[0] ?? null, after?.[1] ?? null, query.limit + 1)
    .all<ShadowDifferenceItem & { difference_id: string; check_name: string }>();
  const page = results.slice(0, query.limit);
  const last = page.at(-1);
  return {
    items: page.map((r) => ({
      at: r.at,
      run_id: r.run_id,
      tool_call_id: r.tool_call_id,
      tool_name: r.tool_name,
      check: r.check_name,
      active: r.active,
      shadow: r.shadow,
    })),
    next_cursor: results.length > query.limit && last !== undefined ? encodeCursor([last.at, last.difference_id]) : null,
  };
}
