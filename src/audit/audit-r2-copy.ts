// The R2 copy of each checkpoint (contract section 25): the entries after the
// last seq copied, in the export's format and ending with the checkpoint, at
// audit/<yyyy>/<mm>/<dd>/<from_seq>-<to_seq>.jsonl (the checkpoint's UTC
// date, seq zero-padded to 12 digits), written once and never overwritten: a
// conditional put (If-None-Match: *) when it fits in one part, else a
// streamed multipart upload after a head check (only the sealer writes
// there, one copy at a time). Memory stays bounded by one part.
import type { AuditCheckpoint } from "../client/audit-chain";
import { exportLines, planExport } from "./audit-export";
import { logger } from "../operate/logger";

/** R2's smallest multipart part (all parts but the last are this size). */
const PART_BYTES = 5 * 1024 * 1024;

interface DueCopy extends AuditCheckpoint {
  copy_from: number;
}

function r2KeyOf(checkpoint: Pick<AuditCheckpoint, "at" | "seq">, fromSeq: number): string {
  const pad = (n: number) => String(n).padStart(12, "0");
  const [yyyy, mm, dd] = checkpoint.at.slice(0, 10).split("-");
  return `audit/${yyyy}/${mm}/${dd}/${pad(fromSeq)}-${pad(checkpoint.seq)}.jsonl`;
}

export interface CopyResult {
  copied: string[];
  /** Copies still due (a failure stops at the first). */
  due: number;
  error?: string;
}

/** Writes every checkpoint's copy that has not landed yet, oldest first. */
export async function copyDueCheckpoints(db: D1Database, bucket: R2Bucket): Promise<CopyResult> {
  const { results } = await db
    .prepare("SELECT seq, hash, at, kid, signature, copy_from FROM audit_checkpoints WHERE r2_key IS NULL ORDER BY seq")
    .all<DueCopy>();
  const copied: string[] = [];
  for (const [i, checkpoint] of results.entries()) {
    const key = r2KeyOf(checkpoint, checkpoint.copy_from);
    try {
      await writeOnce(db, bucket, key, checkpoint);
      await db
        .prepare("UPDATE audit_checkpoints SET r2_key = ?, copied_at = ? WHERE seq = ?")
        .bind(key, new Date().toISOString(), checkpoint.seq)
        .run();
      copied.push(key);
    } catch (err) {
      return { copied, due: results.length - i, error: err instanceof Error ? err.message : String(err) };
    }
  }
  return { copied, due: 0 };
}

async function writeOnce(db: D1Database, bucket: R2Bucket, key: string, checkpoint: DueCopy): Promise<void> {
  // An object already there is the one an earlier attempt wrote: it is never overwritten.
  if ((await bucket.head(key)) !== null) return;
  const plan = await planExport(db, { from_seq: checkpoint.copy_from, to_seq: checkpoint.seq, format: "jsonl" });
  if (plan.kind !== "ok") throw new Error(`entries from seq ${checkpoint.copy_from} are no longer kept`);
  const encoder = new TextEncoder();
  let buffer = new Uint8Array(0);
  let upload: R2MultipartUpload | undefined;
  const parts: R2UploadedPart[] = [];
  const append = (bytes: Uint8Array) => {
    const joined = new Uint8Array(buffer.length + bytes.length);
    joined.set(buffer);
    joined.set(bytes, buffer.length);
    buffer = joined;
  };
  try {
    for await (const chunk of exportLines(db, { ...plan, throughSeq: checkpoint.seq })) {
      append(encoder.encode(chunk));
      while (buffer.length >= PART_BYTES) {
        upload ??= await bucket.createMultipartUpload(key, { httpMetadata: { contentType: "application/x-ndjson" } });
        parts.push(await upload.uploadPart(parts.length + 1, buffer.slice(0, PART_BYTES)));
        buffer = buffer.slice(PART_BYTES);
      }
    }
    if (upload === undefined) {
      const put = await bucket.put(key, buffer, {
        onlyIf: new Headers({ "if-none-match": "*" }),
        httpMetadata: { contentType: "application/x-ndjson" },
      });
      // null: the key exists (only the sealer writes there, so it is an earlier attempt's object): left as it is.
      if (put === null) logger.warn("audit: an R2 copy was already there; kept", { key });
      return;
    }
    if (buffer.length > 0) parts.push(await upload.uploadPart(parts.length + 1, buffer));
    await upload.complete(parts);
  } catch (err) {
    await upload?.abort().catch(() => undefined);
    throw err;
  }
}
