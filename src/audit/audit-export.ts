// The audit export (contract section 25): sealed entries in `seq` order as
// JSON Lines of {"entry":…} or {"checkpoint":…} (a checkpoint right after
// the entry it signs), opening with the newest checkpoint at or before
// from_seq − 1 (or {"anchor":"none"} when there is none and the export does
// not start at seq 1) and ending at the first checkpoint at or after to_seq,
// if any. `format=ocsf` writes each entry as an OCSF 1.6.0 API Activity
// event. A ReadableStream that pulls keyset pages of at most 500 rows, one
// statement at a time: bounded in memory however long the export. The R2
// copy writes the same lines.
import { z } from "zod";
import type { AuditCheckpoint, SealedAuditEntry } from "../client/audit-chain";
import { AUDIT_PAGE_ROWS, type ChainHead, chainHead } from "./audit-sealer";
import { checkpointOf } from "./audit-checkpoints";
import { type AuditRow, entryOfRow } from "./audit-reads";

const seqParam = z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

export const auditExportQuerySchema = z
  .object({
    from_seq: seqParam.optional().meta({ description: "First seq (default: the earliest kept)." }),
    to_seq: seqParam.optional().meta({ description: "Last seq (default: the sealed head); the export runs on to the next checkpoint." }),
    format: z.enum(["jsonl", "ocsf"]).default("jsonl"),
  })
  .strict()
  .refine((q) => q.from_seq === undefined || q.to_seq === undefined || q.from_seq <= q.to_seq, {
    message: "from_seq must not be greater than to_seq",
    path: ["from_seq"],
  });
export type AuditExportQuery = z.output<typeof auditExportQuerySchema>;

export type ExportPlan =
  | { kind: "retained"; earliest_seq: number }
  | {
      kind: "ok";
      head: ChainHead;
      /** The opening line: the checkpoint the entries link to, or none (`anchor` says whether to write {"anchor":"none"}). */
      opening: AuditCheckpoint | null;
      anchorNone: boolean;
      /** Entries after this seq … */
      afterSeq: number;
      /** … through this one. */
      throughSeq: number;
      format: "jsonl" | "ocsf";
    };

/** A sealed row: seq and its hashes are set. */
type EntryRow = AuditRow & { seq: number };

/** The first seq still kept (retention deletes from the start), or null when none is. */
async function earliestKeptSeq(db: D1Database): Promise<number | null> {
  const row = await db.prepare("SELECT MIN(seq) AS seq FROM audit_log WHERE seq IS NOT NULL").first<{ seq: number | null }>();
  return row?.seq ?? null;
}

export async function planExport(db: D1Database, query: AuditExportQuery): Promise<ExportPlan> {
  const head = await chainHead(db);
  const earliest = (await earliestKeptSeq(db)) ?? head.seq + 1;
  const from = query.from_seq ?? earliest;
  if (from < earliest) return { kind: "retained", earliest_seq: earliest };
  let opening: AuditCheckpoint | null = null;
  if (from > 1) {
    const row = await db
      .prepare("SELECT seq, hash, at, kid, signature FROM audit_checkpoints WHERE seq <= ? ORDER BY seq DESC LIMIT 1")
      .bind(from - 1)
      .first<AuditCheckpoint>();
    opening = row === null ? null : checkpointOf(row);
  }
  const to = Math.min(query.to_seq ?? head.seq, head.seq);
  const closing = await db
    .prepare("SELECT seq FROM audit_checkpoints WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT 1")
    .bind(to, head.seq)
    .first<{ seq: number }>();
  return {
    kind: "ok",
    head,
    opening,
    anchorNone: opening === null && from > 1,
    afterSeq: opening === null ? from - 1 : opening.seq,
    throughSeq: closing?.seq ?? to,
    format: query.format,
  };
}

/** A sealed row as the export writes it: the listing's one row-to-entry mapping (src/audit/audit-reads.ts). */
function sealedEntryOf(r: EntryRow): SealedAuditEntry {
  return entryOfRow(r) as SealedAuditEntry;
}

/** OCSF 1.6.0 API Activity (class 6003): activity_id per action, contract section 25. */
const OCSF_ACTIVITY: Record<string, number> = {
  "token.create": 1,
  "session.create": 1,
  "run.trigger": 1,
  "policy.put": 1,
  "halt.engage": 1,
  "slack.install": 1,
  "policy.replay": 2,
  "approval.decide": 3,
  "input.answer": 3,
  "mutation.reconcile": 3,
  "policy.approve": 3,
  "run.cancel": 3,
  "token.revoke": 4,
  "session.end": 4,
  "halt.release": 4,
  "slack.uninstall": 4,
};

function ocsfEvent(entry: SealedAuditEntry): Record<string, unknown> {
  const activity = OCSF_ACTIVITY[entry.action] ?? 99;
  return {
    metadata: {
      version: "1.6.0",
      product: { name: "approved-execution-engine" },
      uid: entry.hash,
      original_event_uid: entry.id,
    },
    class_uid: 6003,
    category_uid: 6,
    activity_id: activity,
    type_uid: 600300 + activity,
    severity_id: 1,
    time: Date.parse(entry.at),
    status_id: entry.result === "ok" ? 1 : 2,
    actor: { user: { uid: entry.principal } },
    api: { operation: entry.action, service: { name: "approved-execution-engine" } },
    resources: [{ uid: entry.target }],
    src_endpoint: { name: entry.via, ...(entry.client_ip !== undefined ? { ip: entry.client_ip } : {}) },
    unmapped: {
      seq: entry.seq,
      prev_hash: entry.prev_hash,
      ...(entry.count !== undefined ? { count: entry.count } : {}),
      ...(entry.details !== undefined ? { details: entry.details } : {}),
    },
  };
}

/** The export's lines, page by page (each yielded string is one or more whole lines). */
export async function* exportLines(db: D1Database, plan: Extract<ExportPlan, { kind: "ok" }>): AsyncGenerator<string> {
  const line = (value: unknown) => `${JSON.stringify(value)}\n`;
  if (plan.opening !== null) yield line({ checkpoint: plan.opening });
  else if (plan.anchorNone) yield line({ anchor: "none" });
  let after = plan.afterSeq;
  while (after < plan.throughSeq) {
    const { results } = await db
      .prepare(
        `SELECT id, at, principal, action, target, result, count, details, details_hash, via, client_ip, policy_version,
                policy_hash, seq, prev_hash, hash
         FROM audit_log WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
      )
      .bind(after, plan.throughSeq, AUDIT_PAGE_ROWS)
      .all<EntryRow>();
    if (results.length === 0) return;
    const last = results[results.length - 1]!.seq;
    const { results: checkpoints } = await db
      .prepare("SELECT seq, hash, at, kid, signature FROM audit_checkpoints WHERE seq > ? AND seq <= ? ORDER BY seq")
      .bind(after, last)
      .all<AuditCheckpoint>();
    const bySeq = new Map(checkpoints.map((c) => [c.seq, checkpointOf(c)]));
    let chunk = "";
    for (const row of results) {
      const entry = sealedEntryOf(row);
      chunk += line(plan.format === "ocsf" ? ocsfEvent(entry) : { entry });
      const checkpoint = bySeq.get(row.seq);
      if (checkpoint !== undefined) chunk += line({ checkpoint });
    }
    yield chunk;
    after = last;
  }
}

/** The export as a byte stream that reads a page only when the reader wants more. */
export function exportStream(db: D1Database, plan: Extract<ExportPlan, { kind: "ok" }>): ReadableStream<Uint8Array> {
  const lines = exportLines(db, plan);
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await lines.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      },
      async cancel() {
        await lines.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
