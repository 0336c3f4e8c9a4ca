// Signed checkpoints of the audit chain (contract section 25): the sealed
// head signed with AUDIT_SIGNING_KEY (an Ed25519 private JWK, WebCrypto),
// `kid` the public key's RFC 7638 thumbprint, `signature` unpadded base64url
// over the RFC 8785 form of {"at","hash","kid","seq"}. Stored in D1
// (migrations/0030_audit_checkpoints.sql) with every public key that signed
// one. Only the sealer Durable Object makes them, one at a time.
import { type AuditCheckpoint, type AuditPublicJwk, base64url, checkpointSigningInput, jwkThumbprint } from "../client/audit-chain";
import type { ChainHead } from "./audit-sealer";

/** AUDIT_SIGNING_KEY as config parses it (src/config/config.ts). */
export interface AuditSigningJwk {
  kty: "OKP";
  crv: "Ed25519";
  d: string;
  x: string;
}

/** Contract section 25: POST /api/audit/checkpoints at most once a minute. */
const ON_DEMAND_CHECKPOINT_INTERVAL_MS = 60_000;

export type CheckpointOutcome =
  | { kind: "created"; checkpoint: AuditCheckpoint }
  | { kind: "existing"; checkpoint: AuditCheckpoint }
  | { kind: "rate_limited"; retryAfterSeconds: number };

interface CheckpointRow extends AuditCheckpoint {
  on_demand: number;
  copy_from: number | null;
  r2_key: string | null;
}

function publicJwkOf(key: AuditSigningJwk): AuditPublicJwk {
  return { kty: key.kty, crv: key.crv, x: key.x };
}

export function checkpointOf(row: AuditCheckpoint): AuditCheckpoint {
  return { seq: row.seq, hash: row.hash, at: row.at, kid: row.kid, signature: row.signature };
}

/** Signs `head` at `at` with the private JWK. */
export async function signHead(key: AuditSigningJwk, head: ChainHead, at: string): Promise<AuditCheckpoint> {
  const kid = await jwkThumbprint(key);
  const privateKey = await crypto.subtle.importKey("jwk", { kty: key.kty, crv: key.crv, d: key.d, x: key.x }, { name: "Ed25519" }, false, [
    "sign",
  ]);
  const unsigned = { seq: head.seq, hash: head.hash, at, kid };
  const signature = await crypto.subtle.sign({ name: "Ed25519" }, privateKey, checkpointSigningInput(unsigned));
  return { ...unsigned, signature: base64url(signature) };
}

export async function latestCheckpoint(db: D1Database): Promise<CheckpointRow | null> {
  return db.prepare("SELECT * FROM audit_checkpoints ORDER BY seq DESC LIMIT 1").first<CheckpointRow>();
}

/**
 * Signs the sealed head unless the newest checkpoint already signs it (then
 * that one is the answer); an on-demand request within a minute of the last
 * on-demand checkpoint is refused. The caller has sealed first. With
 * `dryRun`, answers only what is decided without signing (null: it would sign).
 */
export async function makeCheckpoint(
  db: D1Database,
  key: AuditSigningJwk,
  head: ChainHead,
  now: number,
  onDemand: boolean,
  options: { dryRun?: boolean } = {},
): Promise<CheckpointOutcome | null> {
  const latest = await latestCheckpoint(db);
  if (latest !== null && latest.seq === head.seq) return { kind: "existing", checkpoint: checkpointOf(latest) };
  if (onDemand) {
    const lastOnDemand = await db
      .prepare("SELECT at FROM audit_checkpoints WHERE on_demand = 1 ORDER BY seq DESC LIMIT 1")
      .first<{ at: string }>();
    const since = lastOnDemand === null ? Number.POSITIVE_INFINITY : now - Date.parse(lastOnDemand.at);
    if (since < ON_DEMAND_CHECKPOINT_INTERVAL_MS) {
      return { kind: "rate_limited", retryAfterSeconds: Math.max(1, Math.ceil((ON_DEMAND_CHECKPOINT_INTERVAL_MS - since) / 1000)) };
    }
  }
  if (options.dryRun === true) return null;
  const checkpoint = await signHead(key, head, new Date(now).toISOString());
  const publicJwk = { ...publicJwkOf(key), kid: checkpoint.kid };
  await db.batch([
    db
      .prepare("INSERT INTO audit_keys (kid, jwk, first_used_at) VALUES (?, ?, ?) ON CONFLICT (kid) DO NOTHING")
      .bind(checkpoint.kid, JSON.stringify(publicJwk), checkpoint.at),
    db
      .prepare("INSERT INTO audit_checkpoints (seq, hash, at, kid, signature, on_demand, copy_from) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind(checkpoint.seq, checkpoint.hash, checkpoint.at, checkpoint.kid, checkpoint.signature, onDemand ? 1 : 0, (latest?.seq ?? 0) + 1),
  ]);
  return { kind: "created", checkpoint };
}

/** Whether a scheduled run at `now` should sign: no checkpoint yet today (UTC). */
export function dailyCheckpointDue(latestAt: string | null, now: number): boolean {
  if (latestAt === null) return true;
  return latestAt.slice(0, 10) < new Date(now).toISOString().slice(0, 10);
}

/** Checkpoints newest first, keyset-paged by seq. */
export async function listCheckpoints(
  db: D1Database,
  limit: number,
  beforeSeq: number | undefined,
): Promise<{ checkpoints: AuditCheckpoint[]; last: number | null; more: boolean }> {
  const { results } = await db
    .prepare("SELECT seq, hash, at, kid, signature FROM audit_checkpoints WHERE seq < ? ORDER BY seq DESC LIMIT ?")
    .bind(beforeSeq ?? Number.MAX_SAFE_INTEGER, limit + 1)
    .all<AuditCheckpoint>();
  const checkpoints = results.slice(0, limit).map(checkpointOf);
  return { checkpoints, last: checkpoints[checkpoints.length - 1]?.seq ?? null, more: results.length > limit };
}

/** Every public key that signed a kept checkpoint. */
export async function signingKeys(db: D1Database): Promise<AuditPublicJwk[]> {
  const { results } = await db
    .prepare("SELECT jwk FROM audit_keys WHERE kid IN (SELECT DISTINCT kid FROM audit_checkpoints) ORDER BY first_used_at")
    .all<{ jwk: string }>();
  return results.map((r) => JSON.parse(r.jwk) as AuditPublicJwk);
}
