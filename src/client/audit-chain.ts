// An audit you can prove (contract section 25): the hashed form of a sealed
// entry, its SHA-256 over RFC 8785 canonical JSON (the `canonicalize`
// package), the checkpoint's RFC 7638 `kid` and Ed25519 signature (WebCrypto),
// and the offline verifier of an export that `approved-exec audit verify`
// runs. Pure and runtime-neutral: the Worker's sealer and the CLI (Node's
// WebCrypto) share this one module, so both hash exactly alike.
import { canonicalize } from "json-canonicalize";

/** The `prev_hash` of the first entry ever: `sha256:` and 64 zeros. */
export const GENESIS_PREV_HASH = `sha256:${"0".repeat(64)}`;

/** The members of an entry's hashed form, in no particular order (RFC 8785 sorts them). */
const HASHED_MEMBERS = [
  "id",
  "at",
  "principal",
  "action",
  "target",
  "result",
  "count",
  "details_hash",
  "via",
  "client_ip",
  "policy_version",
  "policy_hash",
  "seq",
  "prev_hash",
] as const;

/** A sealed entry as the export and GET /api/audit carry it. */
export interface SealedAuditEntry {
  id: string;
  at: string;
  principal: string;
  action: string;
  target: string;
  result: "ok" | "refused";
  count?: number;
  details?: Record<string, unknown>;
  details_hash?: string;
  via: string;
  client_ip?: string;
  policy_version?: number;
  policy_hash?: string;
  seq: number;
  prev_hash: string;
  hash: string;
}

/** A signed checkpoint (contract section 25). */
export interface AuditCheckpoint {
  seq: number;
  hash: string;
  at: string;
  kid: string;
  signature: string;
}

/** An Ed25519 public key as a JWK (`kid` its RFC 7638 thumbprint). */
export interface AuditPublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid?: string;
  [member: string]: unknown;
}

/**
 * A lone surrogate as json-canonicalize writes it: escaped `\udXXX` (a pair is written as the
 * character itself), after an even run of backslashes (so a text's own `\\ud800` is not one).
 */
const LONE_SURROGATE = /(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

/** RFC 8785 canonical JSON of a value (throws on what JSON cannot carry, e.g. a lone surrogate). */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("not JSON-serializable");
  // RFC 8785 (I-JSON): a lone surrogate is no Unicode text and must be refused; json-canonicalize passes it on.
  if (LONE_SURROGATE.test(text)) throw new TypeError("not valid Unicode (a lone surrogate)");
  return text;
}

/** The object an entry's `hash` is taken over: its hashed members present and not null. */
export function hashedForm(entry: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const form: Record<string, unknown> = {};
  for (const member of HASHED_MEMBERS) {
    const value = entry[member];
    if (value !== undefined && value !== null) form[member] = value;
  }
  return form;
}

function hex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** `sha256:` and the lower-case hex SHA-256 of `text` in UTF-8. */
async function sha256Of(text: string): Promise<string> {
  return `sha256:${hex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)))}`;
}

/** An entry's `hash`: over the RFC 8785 form of its hashed form. */
export async function entryHash(entry: Readonly<Record<string, unknown>>): Promise<string> {
  return sha256Of(canonicalJson(hashedForm(entry)));
}

/** `details_hash`: the hash of the details' RFC 8785 form, carried beside them (so details can be scrubbed). */
export async function detailsHash(details: Record<string, unknown>): Promise<string> {
  return sha256Of(canonicalJson(details));
}

export function base64url(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = "";
  for (const b of view) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The RFC 7638 thumbprint of an Ed25519 JWK: base64url SHA-256 of `{"crv","kty","x"}` canonical. */
export async function jwkThumbprint(jwk: { crv: string; kty: string; x: string }): Promise<string> {
  const members = canonicalJson({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(members)));
}

/** The bytes a checkpoint's signature is over: RFC 8785 of `{"at","hash","kid","seq"}`. */
export function checkpointSigningInput(checkpoint: Omit<AuditCheckpoint, "signature">): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(
    canonicalJson({ at: checkpoint.at, hash: checkpoint.hash, kid: checkpoint.kid, seq: checkpoint.seq }),
  ) as Uint8Array<ArrayBuffer>;
}

/** Whether `checkpoint.signature` is `jwk`'s Ed25519 signature of it. */
export async function checkpointSignatureValid(checkpoint: AuditCheckpoint, jwk: AuditPublicJwk): Promise<boolean> {
  const signature = fromBase64url(checkpoint.signature);
  if (signature === null || signature.length !== 64) return false;
  try {
    const key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
    return await crypto.subtle.verify({ name: "Ed25519" }, key, signature, checkpointSigningInput(checkpoint));
  } catch {
    return false;
  }
}

// ---- the offline verifier ----------------------------------------------------

export type AuditCheck = "hash" | "link" | "gap" | "order" | "signature";

export type AuditVerifyReport =
  | {
      /** Every hash, link, seq step and (with keys) signature checked. */
      ok: true;
      entries: number;
      checkpoints: number;
      first_seq: number | null;
      last_seq: number | null;
      /** Entries after the last checkpoint (or no checkpoint at all): the first unsigned seq. */
      unsigned_tail_from?: number;
      /** No public key was given: checkpoints were not checked. */
      signatures_unchecked?: true;
      /** The export started from `{"anchor":"none"}`: its first entry links to nothing it holds. */
      unanchored?: true;
    }
  | { ok: false; seq: number; check: AuditCheck; message: string };

/** Every member an exported entry may have: anything else is an edit. */
const ENTRY_MEMBERS = new Set<string>([...HASHED_MEMBERS, "details", "hash"]);
const CHECKPOINT_MEMBERS = new Set(["seq", "hash", "at", "kid", "signature"]);

type Line = { kind: "entry"; entry: SealedAuditEntry } | { kind: "checkpoint"; checkpoint: AuditCheckpoint } | { kind: "anchor" };

function parseLine(text: string): Line | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length !== 1) return null;
  if (keys[0] === "anchor" && record.anchor === "none") return { kind: "anchor" };
  const inner = record[keys[0]!];
  if (typeof inner !== "object" || inner === null || Array.isArray(inner)) return null;
  const fields = inner as Record<string, unknown>;
  if (
    keys[0] === "entry" &&
    Number.isSafeInteger(fields.seq) &&
    typeof fields.hash === "string" &&
    Object.keys(fields).every((k) => ENTRY_MEMBERS.has(k))
  )
    return { kind: "entry", entry: fields as unknown as SealedAuditEntry };
  if (
    keys[0] === "checkpoint" &&
    Number.isSafeInteger(fields.seq) &&
    typeof fields.hash === "string" &&
    typeof fields.at === "string" &&
    typeof fields.kid === "string" &&
    typeof fields.signature === "string" &&
    Object.keys(fields).every((k) => CHECKPOINT_MEMBERS.has(k))
  )
    return { kind: "checkpoint", checkpoint: fields as unknown as AuditCheckpoint };
  return null;
}

/** The seq a broken line stands for: the one after the last good entry. */
function fail(seq: number, check: AuditCheck, message: string): AuditVerifyReport {
  return { ok: false, seq, check, message };
}

/**
 * Verifies an export (its lines, `{"entry"}`, `{"checkpoint"}` or
 * `{"anchor":"none"}`) offline: every entry's hash (and `details_hash` when
 * details are present), each `prev_hash` link, each `seq` step, and with
 * `keys` each checkpoint's signature. The first failure names its `seq` and
 * check; a line that cannot be read at all fails as the `seq` it stands in.
 */
export async function verifyAuditExport(lines: readonly string[], keys?: readonly AuditPublicJwk[]): Promise<AuditVerifyReport> {
  const parsed = lines.filter((l) => l.trim() !== "").map(parseLine);
  let prevSeq: number | null = null;
  let prevHash: string | null = null;
  let firstSeq: number | null = null;
  let lastCheckpointSeq: number | null = null;
  let unanchored = false;
  let entries = 0;
  let checkpoints = 0;
  const keyByKid = new Map<string, AuditPublicJwk>();
  for (const key of keys ?? []) keyByKid.set(key.kid ?? (await jwkThumbprint(key)), key);

  for (let i = 0; i < parsed.length; i++) {
    const line = parsed[i];
    const expected = prevSeq === null ? 1 : prevSeq + 1;
    if (line === null || line === undefined) return fail(expected, "hash", `line ${i + 1} is not an export line`);
    if (line.kind === "anchor") {
      if (i !== 0) return fail(expected, "link", `line ${i + 1}: {"anchor":"none"} may only open an export`);
      unanchored = true;
      continue;
    }
    if (line.kind === "checkpoint") {
      const cp = line.checkpoint;
      if (i === 0) {
        // The checkpoint the export starts from: the chain links to its hash.
        prevSeq = cp.seq;
        prevHash = cp.hash;
      } else if (prevSeq !== null && cp.seq > prevSeq) {
        // It signs an entry that is not here: removed (or moved) from before it.
        return fail(prevSeq + 1, "gap", `line ${i + 1}: the checkpoint signs seq ${cp.seq} but follows seq ${prevSeq}`);
      } else if (cp.seq !== prevSeq || cp.hash !== prevHash) {
        return fail(cp.seq, "signature", `line ${i + 1}: the checkpoint at seq ${cp.seq} does not sign the entry before it`);
      }
      if (keys !== undefined) {
        const key = keyByKid.get(cp.kid);
        if (key === undefined || !(await checkpointSignatureValid(cp, key))) {
          return fail(cp.seq, "signature", `line ${i + 1}: the checkpoint at seq ${cp.seq} has no valid signature by a given key`);
        }
      }
      checkpoints += 1;
      lastCheckpointSeq = cp.seq;
      continue;
    }
    const entry = line.entry;
    if (prevSeq === null && (unanchored || i > 0)) {
      // Unanchored start: the first entry's link cannot be checked, its hash can.
      prevSeq = entry.seq - 1;
      prevHash = entry.prev_hash;
    }
    const want: number = prevSeq === null ? 1 : prevSeq + 1;
    if (entry.seq !== want) {
      if (entry.seq < want) return fail(entry.seq, "order", `line ${i + 1}: seq ${entry.seq} after seq ${want - 1}`);
      // A later seq than expected: the missing one was moved further down (order) or removed (gap).
      const later = parsed.slice(i + 1).some((l) => l?.kind === "entry" && l.entry.seq === want);
      return later
        ? fail(want, "order", `line ${i + 1}: seq ${entry.seq} comes before seq ${want}`)
        : fail(want, "gap", `line ${i + 1}: seq ${entry.seq} follows seq ${want - 1}; seq ${want} is missing`);
    }
    if (entry.details !== undefined && (entry.details_hash === undefined || (await detailsHash(entry.details)) !== entry.details_hash)) {
      return fail(entry.seq, "hash", `seq ${entry.seq}: its details do not match its details_hash`);
    }
    let computed: string;
    try {
      computed = await entryHash(entry as unknown as Record<string, unknown>);
    } catch {
      return fail(entry.seq, "hash", `seq ${entry.seq}: not canonicalizable`);
    }
    if (computed !== entry.hash) return fail(entry.seq, "hash", `seq ${entry.seq}: its hash is not the hash of its contents`);
    const expectedPrev = prevHash ?? GENESIS_PREV_HASH;
    if (entry.prev_hash !== expectedPrev) return fail(entry.seq, "link", `seq ${entry.seq}: prev_hash is not the hash of seq ${want - 1}`);
    prevSeq = entry.seq;
    prevHash = entry.hash;
    firstSeq ??= entry.seq;
    entries += 1;
  }
  const lastSeq = entries === 0 ? null : prevSeq;
  const report: AuditVerifyReport = { ok: true, entries, checkpoints, first_seq: firstSeq, last_seq: lastSeq };
  if (lastSeq !== null && (lastCheckpointSeq === null || lastCheckpointSeq < lastSeq)) {
    report.unsigned_tail_from =
      lastCheckpointSeq === null || firstSeq === null || lastCheckpointSeq < firstSeq ? (firstSeq ?? 1) : lastCheckpointSeq + 1;
  }
  if (keys === undefined && checkpoints > 0) report.signatures_unchecked = true;
  if (unanchored) report.unanchored = true;
  return report;
}
