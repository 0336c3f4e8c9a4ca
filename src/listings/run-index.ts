// The write side of the indexes across runs (contract section 15), off the
// append path. A run's object records every index change synchronously, in
// its own SQLite, as a pending mark (same storage turn as the event that
// caused it, so a mark is never lost and never made for an event that was
// not stored); its alarm later calls flush(), which upserts each mark into
// D1 and deletes it once written. A failed flush leaves the rest pending for
// the next alarm: the listings may lag, they never lose an entry.
//
// One mark per indexed thing (a run, an approval, a question): a later mark
// merges into a pending one, so a question asked and answered between two
// flushes is written once, already answered. Statuses only move forward, here
// and in D1: a mark never takes a resolved entry back to pending.
import { z } from "zod";
import { redactText } from "../execution/redaction";
import { HUMAN_ASK_TOOL } from "../execution/tool-calls";
import type { RunEvent } from "../wire/event-schemas";
import type { SqlLike } from "../stream/event-log";
import {
  approvalListItemSchema,
  approvalStatusSchema,
  inputListItemSchema,
  inputStatusSchema,
  REQUEST_PREVIEW_CHARS,
  runListItemSchema,
  type ApprovalListItem,
  type InputListItem,
  type RunListItem,
} from "../wire/listing-schemas";
import { logger } from "../operate/logger";
import { AUDIT_ACTIONS, type AuditEntry, auditStatement } from "../audit/audit-log";
import type { SqlTable } from "../stream/sql-schema";
import { backoffMs } from "../schedule/deadline";
import { REPLAY_PROPOSAL_FACTS, type ReplayCall, type ReplayVote, replayCallSchema, replayVoteSchema } from "./replay-facts";

// ---- what a mark holds ---------------------------------------------------------

const auditEntryMarkSchema = z
  .object({
    id: z.string(),
    at: z.string(),
    principal: z.string(),
    action: z.enum(AUDIT_ACTIONS),
    target: z.string(),
    result: z.enum(["ok", "refused"]),
    count: z.number().int().optional(),
    details: z.record(z.string(), z.unknown()).optional(),
    via: z.enum(["api", "console", "slack", "engine"]).optional(),
    /** Contract section 25: the client's address, where the action's request carried one. */
    client_ip: z.string().optional(),
    // Contract section 24: the policy version (and hash) that judged the decision.
    policy_version: z.number().int().min(0).optional(),
    policy_hash: z.string().optional(),
  })
  .strip();

/** `audit`: an audit log entry of a change made in the run's object (contract section 18), written like the index. */
/** `vote`: one counted approve of an approval already indexed (contract section 19), keyed by its count so none merges away. */
/** `call`, `call_vote`: a proposed call's and a decision's rows for policy replay (contract section 24, migration 0034). */
/** `shadow`: where the shadow policy version's verdict at a check differed from the active one's (contract section 24). */
export type MarkKind = "run" | "approval" | "input" | "audit" | "vote" | "call" | "call_vote" | "shadow";

/** A decision on an approval that was requested earlier (its row is in D1 or in the same pending mark). */
export interface ApprovalResolution {
  approval_id: string;
  run_id: string;
  status: Exclude<ApprovalListItem["status"], "pending">;
  decided_by?: string;
  reason?: string;
  approvals?: { by: string; at: string }[];
}

/** The end of a question asked earlier: a human__ask call's, or (with `input_id`) an MCP question's (contract section 21). */
export interface InputResolution {
  run_id: string;
  tool_call_id: string;
  input_id?: string;
  status: Exclude<InputListItem["status"], "pending">;
}

/** A question's mark: the listing item, for an MCP question with the tool that asked. */
export type InputMark = InputListItem;

/**
 * What the run's object knows about its run that its events do not carry: the
 * listing item's fields of the record (created_at, and request as
 * requestPreview() cut it, absent in records written before it was kept), and
 * the requester's person as the run object compares it (contract section 19;
 * null: nobody), so the Slack Home tab judges by the same rule as a click. That
 * person is kept in the runs index only; never listed.
 */
export type RunIndexContext = Pick<
  RunListItem,
  "run_id" | "channel_id" | "user_id" | "requested_by" | "on_behalf_of" | "delivery_id" | "source" | "created_at" | "request"
> & { requester_person?: string | null };

/**
 * What the index keeps of a run's message: redacted first (a cut could split
 * a secret so that its pattern no longer matches), then cut to
 * REQUEST_PREVIEW_CHARS with an ellipsis.
 */
export function requestPreview(message: string): string {
  const redacted = redactText(message).trim();
  const chars = Array.from(redacted);
  return chars.length <= REQUEST_PREVIEW_CHARS ? redacted : `${chars.slice(0, REQUEST_PREVIEW_CHARS).join("")}…`;
}

/** A run's mark: the listing item and what the index keeps beside it (never listed). */
const runMarkSchema = runListItemSchema.extend({ requester_person: z.string().nullable().optional() });

const approvalResolutionSchema = z
  .object({
    approval_id: z.string(),
    run_id: z.string(),
    status: approvalStatusSchema.exclude(["pending"]),
    decided_by: z.string().optional(),
    reason: z.string().optional(),
    approvals: z.array(z.object({ by: z.string(), at: z.string() }).strip()).optional(),
  })
  .strip();
const voteMarkSchema = z
  .object({ approval_id: z.string(), votes: z.number().int().min(1), vote: z.object({ by: z.string(), at: z.string() }).strip() })
  .strip();
const inputMarkSchema = inputListItemSchema;
/** The checks and their verdict words of contract section 24, as a difference records them. */
const SHADOW_CHECKS = ["ask", "decider", "quorum", "checkpoint"] as const;
const shadowDifferenceSchema = z
  .object({
    version: z.number().int().min(1),
    at: z.string(),
    run_id: z.string(),
    tool_call_id: z.string(),
    tool_name: z.string(),
    check: z.enum(SHADOW_CHECKS),
    active: z.string(),
    shadow: z.string(),
  })
  .strip();
/** One difference between the shadow version's verdict and the active one's at one check (contract section 24). */
export type ShadowDifference = z.infer<typeof shadowDifferenceSchema>;
const inputResolutionSchema = z
  .object({
    run_id: z.string(),
    tool_call_id: z.string(),
    input_id: z.string().optional(),
    status: inputStatusSchema.exclude(["pending"]),
  })
  .strip();

/** approval_requested's annotations say destructiveHint: true (contract section 21). */
/** 0 while waiting, 1 once settled: a mark or an upsert never goes from 1 back to 0. */
type Rank = 0 | 1;
const rankOf = (status: string): Rank => (status === "pending" || status === "running" ? 0 : 1);

// ---- the D1 side ---------------------------------------------------------------

/** The part of D1Database flush() uses; the real `env.DB` satisfies it, and a test can wrap it to fail. */
export interface IndexDb {
  prepare(query: string): IndexStatement;
}
export interface IndexStatement {
  bind(...values: unknown[]): IndexStatement;
  run(): Promise<{ meta: { changes: number } }>;
}

/** Marks written per flush; the object's alarm re-arms while more remain. */
const FLUSH_BATCH_MARKS = 100;

export type FlushResult =
  /** Every mark read was written (`remaining` > 0 only when more than a batch was pending). */
  | { status: "ok"; written: number; remaining: number; audit?: number }
  /** D1 refused or failed: marks before the failure are written and deleted, the rest stay for the next flush. */
  | { status: "failed"; written: number; remaining: number; error: string; audit?: number };

/** After a failed flush, the object's alarm tries again this much later (D1 is down or slow; don't spin). */
export const FLUSH_RETRY_AFTER_FAILURE_MS = 1_000;
/** Failed flushes in a row back off up to this long between tries. */
const FLUSH_RETRY_MAX_MS = 60_000;

/**
 * When the object should flush again after `result`, in ms from now: 0 when a
 * full batch left more, a growing delay after failures (`failuresInARow`
 * counts this one), null when nothing is pending.
 */
export function nextFlushDelayMs(result: FlushResult, failuresInARow = 1): number | null {
  if (result.remaining === 0) return null;
  if (result.status === "ok") return 0;
  return backoffMs({ baseMs: FLUSH_RETRY_AFTER_FAILURE_MS, capMs: FLUSH_RETRY_MAX_MS }, failuresInARow - 1);
}

// ---- the run index ---------------------------------------------------------------

interface MarkRow extends Record<string, SqlStorageValue> {
  kind: MarkKind;
  key: string;
  rank: number;
  fields: string;
  version: number;
}

export const RUN_INDEX_MARKS_TABLE: SqlTable = {
  name: "run_index_marks",
  ddl: [
    `CREATE TABLE IF NOT EXISTS run_index_marks (
         kind TEXT NOT NULL, key TEXT NOT NULL, rank INTEGER NOT NULL, fields TEXT NOT NULL, version INTEGER NOT NULL,
         PRIMARY KEY (kind, key))`,
  ],
};

export class RunIndex {
  readonly #sql: SqlLike;
  #flushing: Promise<FlushResult> | null = null;

  constructor(sql: SqlLike) {
    this.#sql = sql;
  }

  /** Marks left to write to D1. */
  get pending(): number {
    return this.#sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM run_index_marks`).toArray()[0]?.n ?? 0;
  }

  /** The run as it stands (started: status running; ended: completed|failed with ended_at). */
  markRun(row: RunListItem & Pick<RunIndexContext, "requester_person">): void {
    this.#mark("run", row.run_id, rankOf(row.status), row);
  }

  markApprovalRequested(row: ApprovalListItem): void {
    this.#mark("approval", row.approval_id, rankOf(row.status), row);
  }

  markApprovalResolved(resolution: ApprovalResolution): void {
    this.#mark("approval", resolution.approval_id, 1, resolution);
  }

  /** The `votes`-th counted approve of an approval (contract section 19). */
  markApprovalVote(approvalId: string, votes: number, vote: { by: string; at: string }): void {
    this.#mark("vote", JSON.stringify([approvalId, votes]), 1, { approval_id: approvalId, votes, vote });
  }

  /** A proposed call's replay row as it stands (contract section 24); later marks merge into a pending one. */
  markReplayCall(row: ReplayCall): void {
    // What was true when it was proposed stays as first marked (a later record may no longer carry the server's annotations).
    this.#mark("call", JSON.stringify([row.run_id, row.tool_call_id]), row.checkpoint !== undefined ? 1 : 0, row, REPLAY_PROPOSAL_FACTS);
  }

  /** One decision on a call's approval, for replay; keyed by its place, so a replayed mark writes nothing new. */
  markReplayVote(vote: ReplayVote): void {
    this.#mark("call_vote", JSON.stringify([vote.run_id, vote.tool_call_id, vote.n]), 1, vote);
  }

  /** A shadow difference: keyed by the check it was found at, so a second one of the same check at the same moment is one row. */
  markShadowDifference(difference: ShadowDifference): void {
    const key = JSON.stringify([difference.run_id, difference.tool_call_id, difference.check, difference.at]);
    this.#mark("shadow", key, 1, difference);
  }

  /** An audit entry to write to D1 with the next flush (its id makes a replayed write a no-op). */
  markAudit(entry: AuditEntry): void {
    this.#mark("audit", entry.id, 1, entry);
  }

  markInputAsked(row: InputMark): void {
    this.#mark("input", inputKey(row.run_id, row.input_id ?? row.tool_call_id), rankOf(row.status), row);
  }

  markInputResolved(resolution: InputResolution): void {
    this.#mark("input", inputKey(resolution.run_id, resolution.input_id ?? resolution.tool_call_id), 1, resolution);
  }

  /**
   * Derives the marks of one appended event, so the object needs one call on
   * its append path: run_started and the terminal events mark the run,
   * approval_requested/approval_resolved the approval, human_input_requested,
   * human_input_received and a human__ask's not_executed(expired|cancelled)
   * the question (an MCP question by its input_id; `toolNameOf` names the tool
   * that asked it, for the Slack Home tab). An MCP question that expires or is
   * cancelled has no event: the run's object marks it (markInputResolved).
   * Other events mark nothing. Returns whether it marked.
   */
  markEvent(context: RunIndexContext, event: RunEvent, at: string, toolNameOf?: (toolCallId: string) => string | undefined): boolean {
    // Each mark spreads the context into a row of its own: no copy is made for the events that mark nothing.
    const run = context;
    switch (event.type) {
      case "run_started":
        this.markRun({ ...run, status: "running" });
        return true;
      case "run_completed":
        this.markRun({ ...run, status: "completed", ended_at: at });
        return true;
      case "run_failed": {
        const code = typeof event.error?.code === "string" ? { error_code: event.error.code } : {};
        this.markRun({ ...run, status: "failed", ended_at: at, ...code });
        return true;
      }
      case "approval_requested":
        this.markApprovalRequested({
          approval_id: event.approval_id,
          run_id: context.run_id,
          channel_id: context.channel_id,
          tool_call_id: event.tool_call_id,
          tool_name: event.tool_name,
          level: event.level === "confirm" ? "confirm" : "approve",
          description: event.description,
          arguments: event.arguments ?? {},
          ...(Array.isArray(event.hidden) ? { hidden: event.hidden } : {}),
          requested_at: at,
          expires_at: event.expires_at,
          status: "pending",
          ...(typeof event.required === "number" ? { required: event.required } : {}),
          ...(event.approvers === null || Array.isArray(event.approvers) ? { approvers: event.approvers } : {}),
          approvals: [],
          ...(event.annotations?.destructiveHint === true ? { destructive: true } : {}),
        });
        return true;
      case "approval_vote":
        this.markApprovalVote(event.approval_id, event.votes, { by: event.decided_by, at });
        return true;
      case "approval_resolved":
        this.markApprovalResolved({
          approval_id: event.approval_id,
          run_id: context.run_id,
          status: event.decision,
          ...(event.decided_by !== undefined ? { decided_by: event.decided_by } : {}),
          ...(event.reason !== undefined ? { reason: event.reason } : {}),
          ...(event.approvals !== undefined ? { approvals: event.approvals } : {}),
        });
        return true;
      case "human_input_requested": {
        // Contract section 21: an MCP tool's question mid-call carries its input_id and form.
        const mcp = event.input_id;
        const toolName = mcp === undefined ? undefined : toolNameOf?.(event.tool_call_id);
        const schema = event.requested_schema;
        this.markInputAsked({
          tool_call_id: event.tool_call_id,
          run_id: context.run_id,
          channel_id: context.channel_id,
          question: event.question,
          ...(mcp !== undefined ? { input_id: mcp } : {}),
          ...(mcp !== undefined && schema !== undefined ? { requested_schema: schema } : {}),
          requested_at: at,
          expires_at: event.expires_at,
          status: "pending",
          ...(toolName !== undefined ? { tool_name: toolName } : {}),
        });
        return true;
      }
      case "human_input_received":
        this.markInputResolved({
          run_id: context.run_id,
          tool_call_id: event.tool_call_id,
          ...(event.input_id !== undefined ? { input_id: event.input_id } : {}),
          status: "answered",
        });
        return true;
      case "tool_execution": {
        const ended = event.tool_name === HUMAN_ASK_TOOL && event.execution_status === "not_executed";
        if (!ended || (event.reason !== "expired" && event.reason !== "cancelled")) return false;
        this.markInputResolved({ run_id: context.run_id, tool_call_id: event.tool_call_id, status: event.reason });
        return true;
      }
      case "assistant_message":
      case "tool_started":
      case "approval_reminded":
      case "approval_escalated":
      case "tool_execution_started":
      case "tool_completed":
      case "heartbeat":
        return false;
    }
  }

  /**
   * Writes every pending mark (up to FLUSH_BATCH_MARKS) to D1, one idempotent
   * statement each, and deletes each mark once its write succeeded, unless a
   * newer mark replaced it meanwhile (that one stays for the next flush).
   * Never throws: a D1 failure stops the flush and is reported in the result.
   * A second call while one runs shares it.
   */
  flush(db: IndexDb, batch = FLUSH_BATCH_MARKS): Promise<FlushResult> {
    if (this.#flushing) return this.#flushing;
    this.#flushing = this.#flush(db, batch).finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  async #flush(db: IndexDb, batch: number): Promise<FlushResult> {
    const marks = this.#sql
      .exec<MarkRow>(`SELECT kind, key, rank, fields, version FROM run_index_marks ORDER BY kind, key LIMIT ?`, batch)
      .toArray();
    let written = 0;
    // Audit entries written: the sealer is woken to chain them (contract section 25).
    let audit = 0;
    for (const mark of marks) {
      try {
        await writeMark(db, mark);
        if (mark.kind === "audit") audit += 1;
      } catch (err) {
        if (err instanceof z.ZodError) {
          // Not a D1 failure: the mark itself is malformed (a bug), and retrying it would re-arm for ever.
          logger.error("run index: dropping a malformed mark", { kind: mark.kind, key: mark.key, error: err.message });
          this.#sql.exec(`DELETE FROM run_index_marks WHERE kind = ? AND key = ? AND version = ?`, mark.kind, mark.key, mark.version);
          continue;
        }
        return {
          status: "failed",
          written,
          remaining: this.pending,
          error: err instanceof Error ? err.message : String(err),
          ...(audit > 0 ? { audit } : {}),
        };
      }
      this.#sql.exec(`DELETE FROM run_index_marks WHERE kind = ? AND key = ? AND version = ?`, mark.kind, mark.key, mark.version);
      written += 1;
    }
    return { status: "ok", written, remaining: this.pending, ...(audit > 0 ? { audit } : {}) };
  }

  /** `keep`: fields a pending mark already holds that a later mark does not replace. */
  #mark(kind: MarkKind, key: string, rank: Rank, fields: object, keep: readonly string[] = []): void {
    const existing = this.#sql
      .exec<MarkRow>(`SELECT kind, key, rank, fields, version FROM run_index_marks WHERE kind = ? AND key = ?`, kind, key)
      .toArray()[0];
    if (!existing) {
      this.#sql.exec(
        `INSERT INTO run_index_marks (kind, key, rank, fields, version) VALUES (?, ?, ?, ?, 1)`,
        kind,
        key,
        rank,
        JSON.stringify(fields),
      );
      return;
    }
    // A pending entry marked after its resolution (a late duplicate) changes nothing.
    if (rank < existing.rank) return;
    const before = JSON.parse(existing.fields) as Record<string, unknown>;
    const merged: Record<string, unknown> = { ...before, ...fields };
    for (const name of keep) if (Object.hasOwn(before, name)) merged[name] = before[name];
    this.#sql.exec(
      `UPDATE run_index_marks SET rank = ?, fields = ?, version = version + 1 WHERE kind = ? AND key = ?`,
      rank,
      JSON.stringify(merged),
      kind,
      key,
    );
  }
}

/** A question's key in its run: an MCP question's input_id, a human__ask call's tool_call_id (migration 0021's input_key). */
function inputKey(runId: string, key: string): string {
  return JSON.stringify([runId, key]);
}

// ---- the idempotent D1 statements --------------------------------------------------

/**
 * One mark, one statement. A full row is an upsert whose update only takes a
 * pending row to a settled one; a resolution alone (its request was written by
 * an earlier flush) is an update of a pending row. Replaying either is a no-op.
 */
async function writeMark(db: IndexDb, mark: MarkRow): Promise<void> {
  const fields: unknown = JSON.parse(mark.fields);
  switch (mark.kind) {
    case "vote": {
      // Appended only as the votes-th entry of a pending approval: a replayed flush, or a vote after its resolution, writes nothing.
      const v = voteMarkSchema.parse(fields);
      await db
        .prepare(
          `UPDATE approvals SET approvals_json = json_insert(COALESCE(approvals_json, '[]'), '$[#]', json(?))
           WHERE approval_id = ? AND status = 'pending' AND json_array_length(COALESCE(approvals_json, '[]')) = ?`,
        )
        .bind(JSON.stringify({ by: v.vote.by, at: v.vote.at }), v.approval_id, v.votes - 1)
        .run();
      return;
    }
    case "call": {
      await replayCallStatement(db, replayCallSchema.parse(fields)).run();
      return;
    }
    case "call_vote": {
      const v = replayVoteSchema.parse(fields);
      await db
        .prepare(
          `INSERT INTO policy_replay_votes (run_id, tool_call_id, n, decision, principal, person, at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (run_id, tool_call_id, n) DO NOTHING`,
        )
        .bind(v.run_id, v.tool_call_id, v.n, v.decision, v.principal, v.person, v.at)
        .run();
      return;
    }
    case "shadow": {
      // The mark's key is the row's: a replayed flush inserts nothing (and the count trigger fires once).
      const d = shadowDifferenceSchema.parse(fields);
      await db
        .prepare(
          `INSERT OR IGNORE INTO policy_shadow_differences (difference_id, version, at, run_id, tool_call_id, tool_name, check_name, active, shadow)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .bind(mark.key, d.version, d.at, d.run_id, d.tool_call_id, d.tool_name, d.check, d.active, d.shadow)
        .run();
      return;
    }
    case "audit": {
      await auditStatement(db, auditEntryMarkSchema.parse(fields) as AuditEntry).run();
      return;
    }
    case "run": {
      const r = runMarkSchema.parse(fields);
      await db
        .prepare(
          `INSERT INTO runs (run_id, channel_id, user_id, delivery_id, source, status, created_at, ended_at, request, error_code, requested_by, on_behalf_of,
                             requester_person)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, ended_at = excluded.ended_at,
             error_code = excluded.error_code, request = COALESCE(runs.request, excluded.request)
           WHERE runs.status = 'running' AND excluded.status <> 'running'`,
        )
        .bind(
          r.run_id,
          r.channel_id,
          r.user_id,
          r.delivery_id,
          r.source,
          r.status,
          r.created_at,
          r.ended_at ?? null,
          r.request ?? null,
          r.error_code ?? null,
          r.requested_by ?? null,
          r.on_behalf_of ?? null,
          r.requester_person ?? null,
        )
        .run();
      return;
    }
    case "approval": {
      const full = approvalListItemSchema.safeParse(fields);
      if (full.success) {
        const a = full.data;
        await db
          .prepare(
            `INSERT INTO approvals (approval_id, run_id, channel_id, tool_call_id, tool_name, level, description, arguments_json,
                                    requested_at, expires_at, status, decided_by, reason, required, approvers_json, approvals_json,
                                    hidden_json, destructive)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (approval_id) DO UPDATE SET status = excluded.status, decided_by = excluded.decided_by, reason = excluded.reason,
               approvals_json = excluded.approvals_json
             WHERE approvals.status = 'pending' AND excluded.status <> 'pending'`,
          )
          .bind(
            a.approval_id,
            a.run_id,
            a.channel_id,
            a.tool_call_id,
            a.tool_name,
            a.level,
            a.description,
            JSON.stringify(a.arguments ?? null),
            a.requested_at,
            a.expires_at,
            a.status,
            a.decided_by ?? null,
            a.reason ?? null,
            a.required ?? null,
            a.approvers === undefined ? null : JSON.stringify(a.approvers),
            a.approvals === undefined ? null : JSON.stringify(a.approvals),
            a.hidden === undefined ? null : JSON.stringify(a.hidden),
            a.destructive === true ? 1 : 0,
          )
          .run();
        return;
      }
      const r = approvalResolutionSchema.parse(fields);
      const updated = await db
        .prepare(
          `UPDATE approvals SET status = ?, decided_by = ?, reason = ?, approvals_json = COALESCE(?, approvals_json)
           WHERE approval_id = ? AND status = 'pending'`,
        )
        .bind(
          r.status,
          r.decided_by ?? null,
          r.reason ?? null,
          r.approvals === undefined ? null : JSON.stringify(r.approvals),
          r.approval_id,
        )
        .run();
      if (updated.meta.changes === 0) orphanNote("approval", r.approval_id);
      return;
    }
    case "input": {
      const full = inputMarkSchema.safeParse(fields);
      if (full.success) {
        const i = full.data;
        await db
          .prepare(
            `INSERT INTO inputs (run_id, input_key, tool_call_id, input_id, channel_id, question, requested_schema, tool_name,
                                 requested_at, expires_at, status)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (run_id, input_key) DO UPDATE SET status = excluded.status
             WHERE inputs.status = 'pending' AND excluded.status <> 'pending'`,
          )
          .bind(
            i.run_id,
            i.input_id ?? i.tool_call_id,
            i.tool_call_id,
            i.input_id ?? null,
            i.channel_id,
            i.question,
            i.requested_schema === undefined ? null : JSON.stringify(i.requested_schema),
            i.tool_name ?? null,
            i.requested_at,
            i.expires_at,
            i.status,
          )
          .run();
        return;
      }
      const r = inputResolutionSchema.parse(fields);
      const key = r.input_id ?? r.tool_call_id;
      const updated = await db
        .prepare(`UPDATE inputs SET status = ? WHERE run_id = ? AND input_key = ? AND status = 'pending'`)
        .bind(r.status, r.run_id, key)
        .run();
      if (updated.meta.changes === 0) orphanNote("question", `${r.run_id}/${key}`);
      return;
    }
  }
}

/**
 * A call's replay row: its facts as first marked, then what later marks add
 * (an approval's end, the checkpoint); a settled field is never cleared.
 */
function replayCallStatement(db: IndexDb, c: ReplayCall): IndexStatement {
  return db
    .prepare(
      `INSERT INTO policy_replay_calls (run_id, tool_call_id, proposed_at, tool_name, channel_id, requested_by, requester_person, on_behalf_of,
                                        on_behalf_of_person, limit_key, level, mutating, trusted_read_only, destructive_hint, tool_digest,
                                        arguments_digest, ask, halt_id, approval_id, approval_status, budget_used, checkpoint, checkpoint_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id, tool_call_id) DO UPDATE SET
         approval_status = CASE WHEN excluded.approval_status IS NULL OR excluded.approval_status = 'pending'
                                THEN COALESCE(policy_replay_calls.approval_status, excluded.approval_status) ELSE excluded.approval_status END,
         budget_used = COALESCE(policy_replay_calls.budget_used, excluded.budget_used),
         checkpoint = COALESCE(policy_replay_calls.checkpoint, excluded.checkpoint),
         checkpoint_at = COALESCE(policy_replay_calls.checkpoint_at, excluded.checkpoint_at),
         halt_id = COALESCE(policy_replay_calls.halt_id, excluded.halt_id)`,
    )
    .bind(
      c.run_id,
      c.tool_call_id,
      c.proposed_at,
      c.tool_name,
      c.channel_id,
      c.requested_by,
      c.requester_person,
      c.on_behalf_of ?? null,
      c.on_behalf_of_person ?? null,
      c.limit_key,
      c.level,
      c.mutating ? 1 : 0,
      c.trusted_read_only ? 1 : 0,
      c.destructive_hint ? 1 : 0,
      c.tool_digest ?? null,
      c.arguments_digest,
      c.ask,
      c.halt_id ?? null,
      c.approval_id ?? null,
      c.approval_status ?? null,
      c.budget_used ?? null,
      c.checkpoint ?? null,
      c.checkpoint_at ?? null,
    );
}

/**
 * A resolution that changed nothing: a replay (already settled, the usual
 * case) or a request that was never indexed (asked before this index
 * existed). Either way there is nothing more to write.
 */
function orphanNote(what: string, id: string): void {
  logger.debug("run index: a resolution changed no row (already settled, or asked before the index existed)", { what, id });
}
