// Mutation limits in D1 (contract section 23): the limit clauses of the
// checkpoint's one statement, and the bounded read before anyone is asked
// and after a refused checkpoint. A limit's window holds the rows of its key
// (`by`) with dispatched = 1 and dispatched_at within the last `per` (D1's
// clock), in any state but not_executed with no send; under `"*"` every
// tool's rows count. Each window is read through `LIMIT max`, so a check
// reads at most `max` rows per limit.
import type { MutationLimit } from "../policy/mutation-limits";
import { limitKey, retryAfterSeconds } from "../policy/mutation-limits";
import { boundedStorage } from "./storage-guard";

/** What a window is keyed on: the checkpointed row itself (`m`), or values given for a call that has no row yet. */
export type WindowSubject = "row" | { tool_name: string; channel_id: string; key: string };

export interface Fragment {
  sql: string;
  binds: unknown[];
}

/** The rows of one limit's window (alias `c`), as the WHERE of a SELECT over mutation_outcomes. */
function windowWhere(limit: MutationLimit, subject: WindowSubject): Fragment {
  const binds: unknown[] = [`-${limit.per_s} seconds`];
  const where = [
    "c.dispatched = 1",
    "c.dispatched_at >= strftime('%Y-%m-%dT%H:%M:%fZ','now', ?)",
    "NOT (c.state = 'not_executed' AND COALESCE(c.sends, 0) = 0)",
  ];
  const value = (column: "tool_name" | "channel_id" | "key"): string => {
    if (subject === "row") return column === "key" ? "COALESCE(m.requester_person, m.requested_by)" : `m.${column}`;
    binds.push(subject[column]);
    return "?";
  };
  if (limit.tool !== null) where.push(`c.tool_name = ${value("tool_name")}`);
  if (limit.by === "channel") where.push(`c.channel_id = ${value("channel_id")}`);
  if (limit.by === "principal") where.push(`COALESCE(c.requester_person, c.requested_by) = ${value("key")}`);
  return { sql: where.join(" AND "), binds };
}

/** The checkpoint's limit clauses: every limit's window has room (fewer than `max` rows). */
export function limitClauses(limits: readonly MutationLimit[]): Fragment {
  const parts: string[] = [];
  const binds: unknown[] = [];
  for (const limit of limits) {
    const window = windowWhere(limit, "row");
    parts.push(`(SELECT COUNT(*) FROM (SELECT 1 FROM mutation_outcomes AS c WHERE ${window.sql} LIMIT ?)) < ?`);
    binds.push(...window.binds, limit.max, limit.max);
  }
  return { sql: parts.map((p) => `AND ${p}`).join("\n         "), binds };
}

/**
 * Contract section 24: the shadow version's limits as ONE result column of the checkpoint's statement
 * (`shadow_limited`, 1 when one of its windows was already full without this row), so judging them
 * costs no read of its own. The windows are keyed by the row's values, bound (RETURNING cannot name `m`).
 */
export function shadowLimitColumn(limits: readonly MutationLimit[], subject: Exclude<WindowSubject, "row">, mutationId: string): Fragment {
  if (limits.length === 0) return { sql: "", binds: [] };
  const parts: string[] = [];
  const binds: unknown[] = [];
  for (const limit of limits) {
    const window = windowWhere(limit, subject);
    parts.push(`(SELECT COUNT(*) FROM (SELECT 1 FROM mutation_outcomes AS c WHERE ${window.sql} AND c.mutation_id <> ? LIMIT ?)) >= ?`);
    binds.push(...window.binds, mutationId, limit.max, limit.max);
  }
  return { sql: `, (${parts.join(" OR ")}) AS shadow_limited`, binds };
}

interface WindowDb {
  prepare(query: string): { bind(...values: unknown[]): { first<T>(): Promise<T | null> } };
}

/**
 * The first full limit for `subject`, as the retry hint `retry_after_s`, or
 * null when every limit has room. Reads at most `max` rows per limit.
 */
export async function fullLimit(
  db: WindowDb,
  limits: readonly MutationLimit[],
  subject: WindowSubject,
  mutationId?: string,
): Promise<{ retry_after_s: number } | null> {
  for (const limit of limits) {
    const window = windowWhere(limit, subject);
    const from = subject === "row" ? "mutation_outcomes AS c, mutation_outcomes AS m" : "mutation_outcomes AS c";
    const rowWhere = subject === "row" ? "m.mutation_id = ? AND " : "";
    const row = await db
      .prepare(
        `SELECT COUNT(*) AS n, MIN(at) AS oldest FROM (
           SELECT c.dispatched_at AS at FROM ${from} WHERE ${rowWhere}${window.sql} ORDER BY c.dispatched_at LIMIT ?)`,
      )
      .bind(...(subject === "row" ? [mutationId] : []), ...window.binds, limit.max)
      .first<{ n: number; oldest: string | null }>();
    if (row !== null && Number(row.n) >= limit.max && row.oldest !== null) {
      return { retry_after_s: retryAfterSeconds(row.oldest, limit.per_s, Date.now()) };
    }
  }
  return null;
}

/** The check before anyone is asked, within `waitMs`; "unavailable" when D1 did not answer in time (the call is asked as usual). */
export async function limitBeforeAsking(
  db: WindowDb,
  waitMs: number,
  limits: readonly MutationLimit[],
  call: { tool_name: string; channel_id: string; requester_person: string | null | undefined; requested_by: string },
): Promise<{ retry_after_s: number } | null | "unavailable"> {
  if (limits.length === 0) return null;
  const subject = { tool_name: call.tool_name, channel_id: call.channel_id, key: limitKey(call.requester_person, call.requested_by) };
  try {
    const answer = await boundedStorage(waitMs, () => fullLimit(db, limits, subject));
    return answer.status === "ok" ? answer.value : "unavailable";
  } catch {
    return "unavailable";
  }
}

/**
 * Policy replay (contract section 24): for each recorded call of a page, how
 * many rows each limit's window held when the call was asked (at its
 * `proposed_at`) and at its checkpoint (its row's `dispatched_at`, else the
 * time a refused checkpoint was refused): the same window as the checkpoint's
 * statement (dispatched, within `per` before that moment, not unsent
 * not_executed, the tool's rows or under `"*"` every tool's, keyed by
 * principal or channel), the call's own row excluded, each counted through
 * `LIMIT max`. One statement for several limits (columns `a<i>` and `c<i>`),
 * over the replay index rows `r` that `pageWhere` selects. Limits are numbers
 * the policy schema validated, written into the SQL; text is bound.
 */
export function replayWindowCounts(limits: readonly MutationLimit[], pageWhere: Fragment): Fragment {
  const binds: unknown[] = [];
  const columns: string[] = [];
  const checkpointAt = `COALESCE((SELECT MIN(d.dispatched_at) FROM mutation_outcomes AS d
       WHERE d.run_id = r.run_id AND d.tool_call_id = r.tool_call_id AND d.dispatched = 1), r.checkpoint_at)`;
  limits.forEach((limit, i) => {
    const max = Math.trunc(limit.max);
    const per = Math.trunc(limit.per_s);
    const window = (end: string) => {
      const where = [
        "c.dispatched = 1",
        `c.dispatched_at >= strftime('%Y-%m-%dT%H:%M:%fZ', ${end}, '-${per} seconds')`,
        `c.dispatched_at < ${end}`,
        "NOT (c.state = 'not_executed' AND COALESCE(c.sends, 0) = 0)",
        "NOT (c.run_id = r.run_id AND c.tool_call_id = r.tool_call_id)",
      ];
      if (limit.tool !== null) where.push("c.tool_name = r.tool_name");
      if (limit.by === "channel") where.push("c.channel_id = r.channel_id");
      if (limit.by === "principal") where.push("COALESCE(c.requester_person, c.requested_by) = r.limit_key");
      return `(SELECT COUNT(*) FROM (SELECT 1 FROM mutation_outcomes AS c WHERE ${where.join(" AND ")} LIMIT ${max}))`;
    };
    const applies = limit.tool === null ? "1" : "r.tool_name = ?";
    if (limit.tool !== null) binds.push(limit.tool, limit.tool);
    columns.push(`CASE WHEN ${applies} THEN ${window("r.proposed_at")} END AS a${i}`);
    columns.push(`CASE WHEN ${applies} AND r.checkpoint IS NOT NULL THEN ${window(checkpointAt)} END AS c${i}`);
  });
  return {
    sql: `SELECT r.run_id, r.tool_call_id, ${columns.join(",\n       ")} FROM policy_replay_calls AS r WHERE ${pageWhere.sql}`,
    binds: [...binds, ...pageWhere.binds],
  };
}
