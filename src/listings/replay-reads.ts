// Policy replay's reads (contract sections 24, 25): one page of a window of
// recorded calls, in the order they were proposed (keyset on proposed_at,
// run_id, tool_call_id), judged by a candidate (src/listings/policy-replay.ts).
// Bulk work under section 25's rule: each statement reads at most 500 rows,
// one statement at a time, at most REPLAY_MAX_STATEMENTS per request (the
// page's calls, their decisions, the candidate's limit windows a few limits
// per statement, and the skipped count on the first page); a page whose
// limits would need more statements ends early and says where to go on.
import type { PolicyDocument } from "../config/policy-document";
import type { MutationLimit } from "../policy/mutation-limits";
import { replayWindowCounts, type Fragment } from "../outcomes/mutation-limits";
import { decodeCursor, encodeCursor } from "./cursor";
import { candidateLimits, judgeCall, type RecordedCall, type ReplayChange, type ReplayRules } from "./policy-replay";
import { type ReplayCall, type ReplayVote, replayCallSchema, replayVoteSchema } from "./replay-facts";

/** Calls judged per page (each has at most 6 decisions: 5 approves and a deny, so its decisions fit one 500-row read). */
export const REPLAY_PAGE_CALLS = 50;
/** Contract section 25: a replay request runs at most 20 statements. */
const REPLAY_MAX_STATEMENTS = 20;
/** Limits counted per statement (two columns each; few enough bound values for D1). */
const LIMITS_PER_STATEMENT = 8;

export interface ReplayDb {
  prepare(query: string): ReplayStatement;
}
interface ReplayStatement {
  bind(...values: unknown[]): ReplayStatement;
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>;
}

export interface ReplayWindow {
  since: string;
  until: string;
  /** Where the previous page ended (its next_cursor). */
  cursor?: string | undefined;
  /** Calls judged per page, at most REPLAY_PAGE_CALLS (the default). */
  limit?: number | undefined;
}

export interface ReplayPage {
  examined: number;
  skipped: number;
  changed: ReplayChange[];
  next_cursor: string | null;
  /** D1 statements this page ran (at most REPLAY_MAX_STATEMENTS, the caller's own included). */
  statements: number;
}

type Key = [string, string, string];
const keyOf = (c: Pick<ReplayCall, "proposed_at" | "run_id" | "tool_call_id">): Key => [c.proposed_at, c.run_id, c.tool_call_id];

/** The index rows after `after` up to and including `last` (alias r). */
function rangeWhere(after: Key, last: Key): Fragment {
  return {
    sql: "(r.proposed_at, r.run_id, r.tool_call_id) > (?, ?, ?) AND (r.proposed_at, r.run_id, r.tool_call_id) <= (?, ?, ?)",
    binds: [...after, ...last],
  };
}

const nullToUndefined = (row: Record<string, unknown>) => Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null));

function callOfRow(row: Record<string, unknown>): ReplayCall {
  return replayCallSchema.parse({
    ...nullToUndefined(row),
    requester_person: row.requester_person ?? null,
    level: row.level ?? null,
    mutating: row.mutating === 1,
    trusted_read_only: row.trusted_read_only === 1,
    destructive_hint: row.destructive_hint === 1,
  });
}

const limitId = (l: MutationLimit) => JSON.stringify([l.tool, l.by, l.per_s, l.max]);

/**
 * One page of the replay. `reserved` statements are kept for the caller
 * (its audit entry). Throws CursorError for a cursor not made here.
 */
export async function replayPage(
  db: ReplayDb,
  candidate: PolicyDocument,
  window: ReplayWindow,
  rules: ReplayRules,
  reserved = 0,
): Promise<ReplayPage> {
  const after: Key = window.cursor === undefined ? [window.since, "", ""] : (decodeCursor(window.cursor, 3) as Key);
  const size = Math.min(Math.max(1, window.limit ?? REPLAY_PAGE_CALLS), REPLAY_PAGE_CALLS);
  let statements = 0;
  const read = async <T>(sql: string, binds: unknown[]): Promise<T[]> => {
    statements += 1;
    return (
      await db
        .prepare(sql)
        .bind(...binds)
        .all<T>()
    ).results;
  };

  const rows = await read<Record<string, unknown>>(
    `SELECT * FROM policy_replay_calls AS r
      WHERE (r.proposed_at, r.run_id, r.tool_call_id) > (?, ?, ?) AND r.proposed_at >= ? AND r.proposed_at <= ?
      ORDER BY r.proposed_at, r.run_id, r.tool_call_id LIMIT ?`,
    [...after, window.since, window.until, size + 1],
  );
  let calls = rows.slice(0, size).map(callOfRow);
  let more = rows.length > size;

  // The first page counts the window's calls recorded before replay rows existed.
  let skipped = 0;
  if (window.cursor === undefined) {
    const counted = await read<{ n: number }>(
      `SELECT COUNT(*) AS n FROM (
         SELECT run_id, tool_call_id FROM approvals WHERE requested_at >= ?1 AND requested_at <= ?2
         UNION SELECT run_id, tool_call_id FROM mutation_outcomes WHERE created_at >= ?1 AND created_at <= ?2) AS k
       WHERE NOT EXISTS (SELECT 1 FROM policy_replay_calls AS p WHERE p.run_id = k.run_id AND p.tool_call_id = k.tool_call_id)`,
      [window.since, window.until],
    );
    skipped = Number(counted[0]?.n ?? 0);
  }

  // The candidate's limits the page's calls are under, a few per statement; the page ends where they would not fit.
  const budget = REPLAY_MAX_STATEMENTS - reserved - statements - 1; // one for the decisions
  const limits = new Map<string, MutationLimit>();
  let fit = 0;
  for (const call of calls) {
    const next = new Map(limits);
    for (const l of candidateLimits(candidate, call.tool_name)) next.set(limitId(l), l);
    if (Math.ceil(next.size / LIMITS_PER_STATEMENT) > budget && fit > 0) break;
    for (const [id, l] of next) limits.set(id, l);
    fit += 1;
  }
  if (fit < calls.length) {
    calls = calls.slice(0, fit);
    more = true;
  }
  const last = calls.at(-1);
  if (last === undefined) return { examined: 0, skipped, changed: [], next_cursor: null, statements };
  const range = rangeWhere(after, keyOf(last));

  const votes = new Map<string, ReplayVote[]>();
  if (calls.some((c) => c.approval_id !== undefined)) {
    const voteRows = await read<Record<string, unknown>>(
      `SELECT v.* FROM policy_replay_votes AS v JOIN policy_replay_calls AS r ON r.run_id = v.run_id AND r.tool_call_id = v.tool_call_id
        WHERE ${range.sql} ORDER BY v.run_id, v.tool_call_id, v.n LIMIT 500`,
      range.binds,
    );
    for (const row of voteRows) {
      const vote = replayVoteSchema.parse({ ...row, person: row.person ?? null });
      const key = JSON.stringify([vote.run_id, vote.tool_call_id]);
      votes.set(key, [...(votes.get(key) ?? []), vote]);
    }
  }

  // Per call, per limit (its place in `all`): the rows its window held when asked, and at the checkpoint.
  const all = [...limits.values()];
  const placeOf = new Map(all.map((l, g) => [limitId(l), g]));
  const counts = new Map<string, { asked?: number; checkpoint?: number }[]>();
  const count = (v: unknown) => (v === null || v === undefined ? undefined : Number(v));
  for (let from = 0; from < all.length; from += LIMITS_PER_STATEMENT) {
    const chunk = all.slice(from, from + LIMITS_PER_STATEMENT);
    const statement = replayWindowCounts(chunk, range);
    for (const row of await read<Record<string, unknown>>(statement.sql, statement.binds)) {
      const key = JSON.stringify([row.run_id, row.tool_call_id]);
      const held = counts.get(key) ?? [];
      for (let i = 0; i < chunk.length; i++) {
        const asked = count(row[`a${i}`]);
        const checkpoint = count(row[`c${i}`]);
        held[from + i] = { ...(asked !== undefined ? { asked } : {}), ...(checkpoint !== undefined ? { checkpoint } : {}) };
      }
      counts.set(key, held);
    }
  }

  const changed: ReplayChange[] = [];
  for (const call of calls) {
    const key = JSON.stringify([call.run_id, call.tool_call_id]);
    const held = counts.get(key) ?? [];
    const recorded: RecordedCall = {
      call,
      votes: votes.get(key) ?? [],
      windows: (limit) => held[placeOf.get(limitId(limit)) ?? -1] ?? {},
    };
    changed.push(...judgeCall(candidate, recorded, rules));
  }
  return { examined: calls.length, skipped, changed, next_cursor: more ? encodeCursor(keyOf(last)) : null, statements };
}
