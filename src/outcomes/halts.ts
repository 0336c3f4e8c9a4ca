// Halts in D1 (contract section 23, migrations/0027_halts.sql): engaging one
// (its `engaged_at` from D1's clock), reading the active ones uncached,
// listing, and a release vote that releases the halt in the same statement
// as the vote reaching HALT_RELEASE_APPROVALS (a trigger in the migration),
// so concurrent votes never release twice or lose one. The checkpoint's halt
// clause (HALT_COVERS_ROW) lives here beside the pure rule it mirrors
// (src/policy/halt-scope.ts).
import { ulid } from "ulidx";
import { decodeCursor, encodeCursor } from "../listings/cursor";
import type { ActiveHalt, HaltScope } from "../policy/halt-scope";
import { scopeText } from "../policy/halt-scope";
import { boundedStorage } from "./storage-guard";

/** D1's clock, as every time the checkpoint and halts write (ISO 8601 UTC with milliseconds). */
export const D1_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

/**
 * The halt clause of the checkpoint's statement: an active halt `h` covers the
 * mutation row `m` (the SQL twin of haltCovers in src/policy/halt-scope.ts).
 */
export const HALT_COVERS_ROW = `h.status = 'active' AND (
  h.scope_kind = 'all'
  OR (h.scope_kind = 'server' AND h.scope_value = m.server)
  OR (h.scope_kind = 'tool' AND h.scope_value = m.tool_name)
  OR (h.scope_kind = 'principal' AND (
    h.scope_value = m.requested_by OR h.scope_value = m.on_behalf_of
    OR (h.scope_person IS NOT NULL AND h.scope_person = m.requester_person))))`;

/** The part of D1 used here; the real `env.DB` satisfies it. */
export interface HaltDb {
  prepare(query: string): HaltStatement;
  batch(statements: HaltStatement[]): Promise<{ results: unknown[]; meta?: { changes?: number } }[]>;
}
export interface HaltStatement {
  bind(...values: unknown[]): HaltStatement;
  first<T = Record<string, unknown>>(): Promise<T | null>;
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>;
}

/** A `halts` row as D1 returns it, with its count of release votes. */
export interface HaltRow {
  halt_id: string;
  scope: string;
  scope_kind: HaltScope["kind"];
  scope_value: string | null;
  scope_person: string | null;
  reason: string;
  engaged_by: string;
  engaged_at: string;
  status: "active" | "released";
  required: number;
  released_by: string | null;
  released_at: string | null;
  cancel_requested: number | null;
  cancel_done: number | null;
  cancel_finished_at: string | null;
  releases: number;
}

/** The halt's JSON (contract section 23). */
export interface HaltProjection {
  halt_id: string;
  scope: string;
  reason: string;
  engaged_by: string;
  engaged_at: string;
  status: "active" | "released";
  releases: number;
  required: number;
  released_by?: string;
  released_at?: string;
  cancel?: { requested: number; done: number; finished_at?: string };
}

const HALT_ID = /^halt_[0-9A-HJKMNP-TV-Z]{26}$/;

function newHaltId(): string {
  return `halt_${ulid()}`;
}

/** Unknown-looking ids are answered 404 without a storage call. */
export function isHaltId(value: string): boolean {
  return HALT_ID.test(value);
}

const WITH_RELEASES = `SELECT halts.*, (SELECT COUNT(*) FROM halt_releases r WHERE r.halt_id = halts.halt_id) AS releases FROM halts`;

/** A halt's first six fields: the 201 of POST /api/halts, and the start of every projection (contract section 23). */
export function engagedHalt(row: HaltRow): Pick<HaltProjection, "halt_id" | "scope" | "reason" | "engaged_by" | "engaged_at" | "status"> {
  return {
    halt_id: row.halt_id,
    scope: row.scope,
    reason: row.reason,
    engaged_by: row.engaged_by,
    engaged_at: row.engaged_at,
    status: row.status,
  };
}

export function toHaltProjection(row: HaltRow): HaltProjection {
  return {
    ...engagedHalt(row),
    releases: Number(row.releases),
    required: row.required,
    ...(row.released_by !== null ? { released_by: row.released_by } : {}),
    ...(row.released_at !== null ? { released_at: row.released_at } : {}),
    ...(row.cancel_requested !== null
      ? {
          cancel: {
            requested: row.cancel_requested,
            done: row.cancel_done ?? 0,
            ...(row.cancel_finished_at !== null ? { finished_at: row.cancel_finished_at } : {}),
          },
        }
      : {}),
  };
}

export interface EngageInput {
  scope: HaltScope;
  /** The person of a `principal:` scope's principal (null: no person). */
  scopePerson: string | null;
  /** Redacted by the caller. */
  reason: string;
  engagedBy: string;
  required: number;
  /** cancel_runs: true; the job fills in `requested` once it has listed the runs. */
  cancelRuns: boolean;
}

/** Inserts the halt (engaged_at: D1's clock) and, in the same batch, whatever `after` adds (its audit entry). */
export async function engageHalt(db: HaltDb, input: EngageInput, after: (haltId: string) => HaltStatement[] = () => []): Promise<HaltRow> {
  const haltId = newHaltId();
  const { scope } = input;
  const insert = db
    .prepare(
      `INSERT INTO halts (halt_id, scope, scope_kind, scope_value, scope_person, reason, engaged_by, engaged_at, status, required, cancel_requested, cancel_done)
       VALUES (?, ?, ?, ?, ?, ?, ?, ${D1_NOW}, 'active', ?, ?, ?)
       RETURNING *, 0 AS releases`,
    )
    .bind(
      haltId,
      scopeText(scope),
      scope.kind,
      scope.kind === "all" ? null : scope.value,
      scope.kind === "principal" ? input.scopePerson : null,
      input.reason,
      input.engagedBy,
      input.required,
      input.cancelRuns ? 0 : null,
      input.cancelRuns ? 0 : null,
    );
  const [inserted] = await db.batch([insert, ...after(haltId)]);
  const row = inserted?.results[0] as HaltRow | undefined;
  if (!row) throw new Error(`halt ${haltId} was not inserted`);
  return row;
}

export async function getHalt(db: HaltDb, haltId: string): Promise<HaltRow | null> {
  return db.prepare(`${WITH_RELEASES} WHERE halt_id = ?`).bind(haltId).first<HaltRow>();
}

/** The active halts, oldest first, read from D1 (never cached: a decision must see a halt engaged a moment ago). */
/**
 * The active halts and, folded into the same statement, the policy pointer (contract section 24):
 * every check that reads the halts learns the active policy version without another round trip.
 */
async function activeHaltsAndPolicy(db: Pick<HaltDb, "prepare">): Promise<HaltsRead> {
  const { results } = await db
    .prepare(
      `SELECT p.version AS policy_version, (SELECT version FROM policy_versions WHERE status = 'shadow') AS shadow_version, h.halt_id, h.scope_kind, h.scope_value, h.scope_person, h.engaged_at
         FROM policy_active p LEFT JOIN halts h ON h.status = 'active'
        WHERE p.id = 1 ORDER BY h.engaged_at, h.halt_id`,
    )
    .all<ActiveHalt & { policy_version: number; shadow_version: number | null; halt_id: string | null }>();
  const halts: ActiveHalt[] = [];
  for (const { policy_version: _, shadow_version: _s, ...halt } of results) if (halt.halt_id !== null) halts.push(halt as ActiveHalt);
  return { halts, policy_version: results[0]?.policy_version ?? 0, shadow_version: results[0]?.shadow_version ?? null };
}

/** The active halts and the policy pointer, read in one statement. */
export interface HaltsRead {
  halts: ActiveHalt[];
  policy_version: number;
  /** The shadow version (contract section 24), read in the same statement; null: none; absent: not read. */
  shadow_version?: number | null;
}

export interface HaltPage {
  items: HaltProjection[];
  next_cursor: string | null;
}

/** GET /api/halts: newest first, section 15's envelope and cursor. */
export async function listHalts(
  db: { prepare(query: string): { bind(...values: unknown[]): { all<T>(): Promise<{ results: T[] }> } } },
  query: { status?: "active" | "released" | undefined; limit: number; cursor?: string | undefined },
): Promise<HaltPage> {
  const where: string[] = [];
  const binds: unknown[] = [];
  if (query.status !== undefined) {
    where.push("status = ?");
    binds.push(query.status);
  }
  if (query.cursor !== undefined) {
    const [at, id] = decodeCursor(query.cursor, 2);
    where.push("(engaged_at < ? OR (engaged_at = ? AND halt_id < ?))");
    binds.push(at, at, id);
  }
  const { results } = await db
    .prepare(`${WITH_RELEASES} ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY engaged_at DESC, halt_id DESC LIMIT ?`)
    .bind(...binds, query.limit + 1)
    .all<HaltRow>();
  const page = results.slice(0, query.limit);
  const last = page.at(-1);
  return {
    items: page.map(toHaltProjection),
    next_cursor: results.length > query.limit && last ? encodeCursor([last.engaged_at, last.halt_id]) : null,
  };
}

export type ReleaseVote =
  | { kind: "not_found" }
  /** The vote was counted now (`counted`), or the same voter's was already there; `row` is the halt after it. */
  | { kind: "voted"; counted: boolean; row: HaltRow };

/**
 * One release vote as ONE statement: inserted only while the halt is active,
 * once per voter; the migration's trigger releases the halt when this vote
 * makes `required`. Then `afterVote` (in the same batch), then the halt is
 * read (in the same batch, so what it says is what this vote left).
 */
export async function voteRelease(
  db: HaltDb,
  haltId: string,
  voter: string,
  principal: string,
  afterVote: HaltStatement[] = [],
): Promise<ReleaseVote> {
  const results = await db.batch([
    db
      .prepare(
        `INSERT INTO halt_releases (halt_id, voter, principal, at)
         SELECT ?1, ?2, ?3, ${D1_NOW} WHERE EXISTS (SELECT 1 FROM halts WHERE halt_id = ?1 AND status = 'active')
         ON CONFLICT (halt_id, voter) DO NOTHING`,
      )
      .bind(haltId, voter, principal),
    // Whatever must commit with the vote (contract section 26: the halt.released notification, under its own condition).
    ...afterVote,
    db.prepare(`${WITH_RELEASES} WHERE halt_id = ?`).bind(haltId),
  ]);
  const inserted = results[0];
  const row = results.at(-1)?.results[0] as HaltRow | undefined;
  if (!row) return { kind: "not_found" };
  return { kind: "voted", counted: (inserted?.meta?.changes ?? 0) > 0, row };
}

/**
 * The active halts within `waitMs` (contract section 23: uncached, bounded by
 * STORAGE_WAIT_MS, no pool slot: a read of a handful of rows), or
 * "unavailable" when D1 did not answer in time or failed.
 */
export async function readActiveHalts(db: Pick<HaltDb, "prepare">, waitMs: number): Promise<ActiveHalt[] | "unavailable"> {
  const read = await readHaltsAndPolicy(db, waitMs);
  return read === "unavailable" ? read : read.halts;
}

/** readActiveHalts with the policy pointer (contract section 24) folded in: what a decision and an asking read. */
export async function readHaltsAndPolicy(db: Pick<HaltDb, "prepare">, waitMs: number): Promise<HaltsRead | "unavailable"> {
  try {
    const answer = await boundedStorage(waitMs, () => activeHaltsAndPolicy(db));
    return answer.status === "ok" ? answer.value : "unavailable";
  } catch {
    return "unavailable";
  }
}

/** Whether a person's action is judged against the active halts (contract section 23): an approve, or an MCP question's accept. */
export function needsHalts(action: { kind: string; answer?: unknown }): boolean {
  if (action.kind === "approve") return true;
  return action.kind === "answer_form" && (action.answer as { action?: string } | undefined)?.action === "accept";
}
