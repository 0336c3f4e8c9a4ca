// The read side of the listings across runs (contract section 15): one D1
// query per page, newest first on (time, id), with a keyset cursor (the last
// item's sort key), so a page costs the same however deep it is and rows
// added meanwhile never shift a page. Plain functions over a minimal D1-like
// interface, so a test can stand a stalled database in for D1.
import { toProjection, type MutationOutcomeProjection, type MutationOutcomeRow } from "../outcomes/mutation-outcomes";
import { HUMAN_ASK_TOOL } from "../execution/tool-calls";
import { decodeCursor, encodeCursor } from "./cursor";
import type {
  AskedBy,
  ApprovalListItem,
  ApprovalsQuery,
  InputListItem,
  InputsQuery,
  MutationsQuery,
  RunListItem,
  RunsQuery,
} from "../wire/listing-schemas";

/** The part of D1Database the listings use; the real `env.DB` satisfies it. */
export interface ListingDb {
  prepare(query: string): ListingStatement;
}
interface ListingStatement {
  bind(...values: unknown[]): ListingStatement;
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface Keyset {
  /** Columns of the sort key, most significant first (time, then id parts). */
  columns: readonly string[];
  /** The sort key of one row, in the same order. */
  keyOf(row: Record<string, unknown>): string[];
}

/**
 * One page of `table`: rows matching `filters`, strictly after the cursor in
 * descending key order, `limit` of them. One extra row is read to know
 * whether another page exists.
 */
export async function page<R extends Record<string, unknown>>(
  db: ListingDb,
  table: string,
  keyset: Keyset,
  filters: { sql: string; value: unknown }[],
  limit: number,
  cursor: string | undefined,
  withAsker = false,
): Promise<{ rows: R[]; next_cursor: string | null }> {
  const where = filters.map((f) => f.sql);
  const values = filters.map((f) => f.value);
  if (cursor !== undefined) {
    const key = decodeCursor(cursor, keyset.columns.length);
    where.push(`(${keyset.columns.join(", ")}) < (${keyset.columns.map(() => "?").join(", ")})`);
    values.push(...key);
  }
  const order = keyset.columns.map((c) => `${c} DESC`).join(", ");
  // `withAsker`: the run's requester and request beside each row, from the runs index (its primary key).
  const from = withAsker
    ? `${table} LEFT JOIN (SELECT ${ASKER_COLUMNS} FROM runs) AS asker ON asker.asker_run_id = ${table}.run_id`
    : table;
  const select = withAsker ? `${table}.*, asker.*` : "*";
  const { results } = await db
    .prepare(`SELECT ${select} FROM ${from} ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY ${order} LIMIT ?`)
    .bind(...values, limit + 1)
    .all<R>();
  const rows = results.slice(0, limit);
  const last = rows[rows.length - 1];
  return { rows, next_cursor: results.length > limit && last ? encodeCursor(keyset.keyOf(last)) : null };
}

/** The runs index's columns a listing joins in, renamed so none shadows the listed table's own. */
const ASKER_COLUMNS =
  "run_id AS asker_run_id, user_id AS asker_user_id, requested_by AS asker_requested_by, on_behalf_of AS asker_on_behalf_of, request AS asker_request";

interface AskerColumns {
  asker_user_id?: string | null;
  asker_requested_by?: string | null;
  asker_on_behalf_of?: string | null;
  asker_request?: string | null;
}

/** Who asked and what for (contract section 16), from the joined runs row; nothing while the run is not indexed. */
function askedBy(r: AskerColumns): AskedBy {
  const out: AskedBy = {};
  if (typeof r.asker_user_id === "string") out.user_id = r.asker_user_id;
  if (typeof r.asker_requested_by === "string") out.requested_by = r.asker_requested_by;
  if (typeof r.asker_on_behalf_of === "string") out.on_behalf_of = r.asker_on_behalf_of;
  if (typeof r.asker_request === "string") out.request = r.asker_request;
  return out;
}

const keyOfColumns =
  (...columns: string[]) =>
  (row: Record<string, unknown>) =>
    columns.map((c) => String(row[c]));

// ---- runs ---------------------------------------------------------------------------

interface RunRow extends Record<string, unknown> {
  run_id: string;
  channel_id: string;
  user_id: string;
  requested_by: string | null;
  on_behalf_of: string | null;
  delivery_id: string | null;
  source: RunListItem["source"];
  status: RunListItem["status"];
  created_at: string;
  ended_at: string | null;
  /** Added by migration 0014: null on rows indexed before it. */
  request: string | null;
  error_code: string | null;
}

const RUNS_KEY = ["created_at", "run_id"];

export async function listRuns(db: ListingDb, query: RunsQuery): Promise<Page<RunListItem>> {
  const filters = [];
  if (query.channel_id !== undefined) filters.push({ sql: "channel_id = ?", value: query.channel_id });
  if (query.status !== undefined) filters.push({ sql: "status = ?", value: query.status });
  if (query.user_id !== undefined) filters.push({ sql: "user_id = ?", value: query.user_id });
  const { rows, next_cursor } = await page<RunRow>(
    db,
    "runs",
    { columns: RUNS_KEY, keyOf: keyOfColumns(...RUNS_KEY) },
    filters,
    query.limit,
    query.cursor,
  );
  return {
    items: rows.map((r) => ({
      run_id: r.run_id,
      channel_id: r.channel_id,
      user_id: r.user_id,
      ...(r.requested_by !== null ? { requested_by: r.requested_by } : {}),
      ...(r.on_behalf_of !== null ? { on_behalf_of: r.on_behalf_of } : {}),
      delivery_id: r.delivery_id,
      source: r.source,
      status: r.status,
      created_at: r.created_at,
      ...(r.ended_at !== null ? { ended_at: r.ended_at } : {}),
      ...(typeof r.request === "string" ? { request: r.request } : {}),
      ...(typeof r.error_code === "string" ? { error_code: r.error_code } : {}),
    })),
    next_cursor,
  };
}

// ---- approvals ------------------------------------------------------------------------

interface ApprovalRow extends Record<string, unknown>, AskerColumns {
  approval_id: string;
  run_id: string;
  channel_id: string;
  tool_call_id: string;
  tool_name: string;
  level: ApprovalListItem["level"];
  description: string;
  arguments_json: string;
  requested_at: string;
  expires_at: string;
  status: ApprovalListItem["status"];
  decided_by: string | null;
  reason: string | null;
  /** Contract section 19 (migrations/0015); NULL on approvals indexed before it. */
  required: number | null;
  approvers_json: string | null;
  approvals_json: string | null;
  /** Contract section 19 (migrations/0020); NULL on approvals indexed before it. */
  hidden_json: string | null;
  /** Contract section 21 (migrations/0023): 1 for a destructiveHint tool. */
  destructive?: number | null;
}

const APPROVALS_KEY = ["requested_at", "approval_id"];

export async function listApprovals(db: ListingDb, query: ApprovalsQuery): Promise<Page<ApprovalListItem>> {
  const filters = [];
  // Written to match the partial indexes approvals_pending / approvals_resolved.
  if (query.status === "pending") filters.push({ sql: "approvals.status = ?", value: "pending" });
  if (query.status === "resolved") filters.push({ sql: "approvals.status <> ?", value: "pending" });
  const { rows, next_cursor } = await page<ApprovalRow>(
    db,
    "approvals",
    { columns: APPROVALS_KEY.map((c) => `approvals.${c}`), keyOf: keyOfColumns(...APPROVALS_KEY) },
    filters,
    query.limit,
    query.cursor,
    true,
  );
  return { items: rows.map(approvalItem), next_cursor };
}

function approvalItem(r: ApprovalRow): ApprovalListItem {
  return {
    approval_id: r.approval_id,
    run_id: r.run_id,
    channel_id: r.channel_id,
    tool_call_id: r.tool_call_id,
    tool_name: r.tool_name,
    level: r.level,
    description: r.description,
    arguments: JSON.parse(r.arguments_json) as unknown,
    ...(r.hidden_json !== null ? { hidden: JSON.parse(r.hidden_json) as NonNullable<ApprovalListItem["hidden"]> } : {}),
    requested_at: r.requested_at,
    expires_at: r.expires_at,
    status: r.status,
    ...(r.decided_by !== null ? { decided_by: r.decided_by } : {}),
    ...(r.reason !== null ? { reason: r.reason } : {}),
    // Approvals indexed before section 19 were single-vote under the default rule.
    required: r.required ?? 1,
    approvers: r.approvers_json === null ? null : (JSON.parse(r.approvers_json) as string[]),
    approvals: r.approvals_json === null ? [] : (JSON.parse(r.approvals_json) as { by: string; at: string }[]),
    ...(r.destructive === 1 ? { destructive: true } : {}),
    ...askedBy(r),
  };
}

/** One approval as its listing item (contract section 26: a webhook receiver reads it by id), or null. */
export async function getApproval(db: ListingDb, approvalId: string): Promise<ApprovalListItem | null> {
  const { rows } = await page<ApprovalRow>(
    db,
    "approvals",
    { columns: APPROVALS_KEY.map((c) => `approvals.${c}`), keyOf: keyOfColumns(...APPROVALS_KEY) },
    [{ sql: "approvals.approval_id = ?", value: approvalId }],
    1,
    undefined,
    true,
  );
  return rows[0] === undefined ? null : approvalItem(rows[0]);
}

// ---- inputs ------------------------------------------------------------------------------

/** A row of the inputs table (migration 0021: one per question, keyed by input_key). */
interface InputRow extends Record<string, unknown>, AskerColumns {
  run_id: string;
  input_key: string;
  tool_call_id: string;
  /** An MCP question's id and form (JSON text); NULL for human__ask. */
  input_id: string | null;
  requested_schema: string | null;
  /** The MCP tool that asked; NULL for human__ask (and on MCP questions indexed before migration 0021). */
  tool_name: string | null;
  channel_id: string;
  question: string;
  requested_at: string;
  expires_at: string;
  status: InputListItem["status"];
}

const INPUTS_KEY = ["requested_at", "run_id", "input_key"];

export async function listInputs(db: ListingDb, query: InputsQuery): Promise<Page<InputListItem>> {
  const filters = query.status === undefined ? [] : [{ sql: "inputs.status = ?", value: query.status }];
  const { rows, next_cursor } = await page<InputRow>(
    db,
    "inputs",
    { columns: INPUTS_KEY.map((c) => `inputs.${c}`), keyOf: keyOfColumns(...INPUTS_KEY) },
    filters,
    query.limit,
    query.cursor,
    true,
  );
  return { items: rows.map(inputItem), next_cursor };
}

function inputItem(r: InputRow): InputListItem {
  return {
    tool_call_id: r.tool_call_id,
    run_id: r.run_id,
    channel_id: r.channel_id,
    question: r.question,
    ...(r.input_id !== null ? { input_id: r.input_id } : {}),
    ...(r.requested_schema !== null ? { requested_schema: JSON.parse(r.requested_schema) as Record<string, unknown> } : {}),
    ...(r.tool_name !== null ? { tool_name: r.tool_name } : r.input_id === null ? { tool_name: HUMAN_ASK_TOOL } : {}),
    requested_at: r.requested_at,
    expires_at: r.expires_at,
    status: r.status,
    ...askedBy(r),
  };
}

/**
 * One question of a run as its listing item (contract section 26): an MCP question by its
 * input_id, a human__ask by its tool_call_id; or null.
 */
export async function getInput(db: ListingDb, runId: string, id: string): Promise<InputListItem | null> {
  const { rows } = await page<InputRow>(
    db,
    "inputs",
    { columns: INPUTS_KEY.map((c) => `inputs.${c}`), keyOf: keyOfColumns(...INPUTS_KEY) },
    [
      { sql: "inputs.run_id = ?", value: runId },
      { sql: "? IN (inputs.input_id, CASE WHEN inputs.input_id IS NULL THEN inputs.tool_call_id END)", value: id },
    ],
    1,
    undefined,
    true,
  );
  return rows[0] === undefined ? null : inputItem(rows[0]);
}

// ---- mutations ----------------------------------------------------------------------------

const MUTATIONS_KEY = ["created_at", "mutation_id"];

/** Over the existing `mutation_outcomes` rows, in the same projection as GET /api/mutations/{id}. */
export async function listMutations(db: ListingDb, query: MutationsQuery): Promise<Page<MutationOutcomeProjection>> {
  const filters = [];
  if (query.state !== undefined) filters.push({ sql: "state = ?", value: query.state });
  if (query.channel_id !== undefined) filters.push({ sql: "channel_id = ?", value: query.channel_id });
  const { rows, next_cursor } = await page<MutationOutcomeRow & Record<string, unknown>>(
    db,
    "mutation_outcomes",
    { columns: MUTATIONS_KEY, keyOf: keyOfColumns(...MUTATIONS_KEY) },
    filters,
    query.limit,
    query.cursor,
  );
  return { items: rows.map(toProjection), next_cursor };
}
