// `approved-exec audit verify <file> [--public-key <file>]` (contract section
// 25): checks an audit export offline, never fetching: every hash, link, seq
// step and, with the key file (a JWK or a {"keys"} answer), every checkpoint
// signature, through the client's verifier (the same canonicalization package
// the engine hashes with, on Node's WebCrypto). Exit 0 when all check and the
// last entry is signed; 1 naming the first bad seq and the failed check; 3
// when all pass but the tail is unsigned or signatures went unchecked.
import { readFile } from "node:fs/promises";
import { type AuditPublicJwk, verifyAuditExport } from "approved-execution-engine/client";
import { EXIT_OK, EXIT_REFUSED, EXIT_UNSIGNED, type ExitCode, UsageError } from "./exit-codes.js";
import type { Output } from "./terminal.js";

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    throw new UsageError(`${what} ${path}: cannot read it (${(err as Error).message}).`);
  }
}

/** The key file: one JWK, or GET /api/audit/public-key's {"keys":[…]}. */
function keysOf(text: string, path: string): AuditPublicJwk[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`--public-key ${path}: not JSON.`);
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys ?? [parsed];
  if (!Array.isArray(keys) || keys.some((k) => typeof (k as { x?: unknown } | null)?.x !== "string")) {
    throw new UsageError(`--public-key ${path}: expected an Ed25519 JWK or {"keys":[…]}.`);
  }
  return keys as AuditPublicJwk[];
}

export async function auditVerify(out: Output, file: string, publicKey: string | undefined): Promise<ExitCode> {
  const text = await readText(file, "audit export");
  const keys = publicKey === undefined ? undefined : keysOf(await readText(publicKey, "--public-key"), publicKey);
  const report = await verifyAuditExport(text.split("\n"), keys);
  if (!report.ok) {
    out.result(`FAILED at seq ${report.seq}: ${report.check} (${report.message})`, report);
    return EXIT_REFUSED;
  }
  const range = report.first_seq === null ? "no entries" : `seq ${report.first_seq}..${report.last_seq}`;
  const summary = `${report.entries} entries (${range}), ${report.checkpoints} checkpoints`;
  if (report.unsigned_tail_from !== undefined) {
    out.result(`verified ${summary}; entries from seq ${report.unsigned_tail_from} are not signed by a checkpoint yet`, report);
    return EXIT_UNSIGNED;
  }
  if (report.signatures_unchecked === true) {
    out.result(`verified ${summary}; signatures not checked (pass --public-key <file>)`, report);
    return EXIT_UNSIGNED;
  }
  out.result(`verified ${summary}; every entry is signed`, report);
  return EXIT_OK;
}
