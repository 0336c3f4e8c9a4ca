// AuditSealer: the one object that chains the audit log (contract section
// 25), AUDIT_SEALER.idFromName("audit"). A thin shell: wake() arms its alarm
// (within 2 s of an unsealed entry), the alarm seals (src/audit/audit-sealer.ts)
// and retries a failed R2 copy; checkpoint() seals and signs at once (POST
// /api/audit/checkpoints), scheduled() signs daily from the Cron Trigger.
// Its work runs one piece at a time (a promise chain); D1's triggers refuse
// any seal that is not the next link, whatever runs.
import { DurableObject } from "cloudflare:workers";
import { auditStatement, newAuditId } from "../src/audit/audit-log";
import { type CheckpointOutcome, dailyCheckpointDue, latestCheckpoint, makeCheckpoint } from "../src/audit/audit-checkpoints";
import { copyDueCheckpoints } from "../src/audit/audit-r2-copy";
import { type SealResult, sealPending } from "../src/audit/audit-sealer";
import { loadConfig } from "../src/config/config";
import type { Env } from "../src/config/env";
import { logger } from "../src/operate/logger";

/** Contract section 25: entries are sealed within 2 s; the alarm waits this long to take a run of them at once. */
const WAKE_DELAY_MS = 1_000;
/** After a failed seal or R2 copy, try again this much later. */
const RETRY_AFTER_FAILURE_MS = 30_000;
/** A waiting refusal is sealed just after its queue closes its minute. */
const AFTER_MINUTE_MS = 2_000;

export type SealerCheckpointAnswer = CheckpointOutcome | { kind: "unsigned" };

export class AuditSealer extends DurableObject<Env> {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `work` after everything queued before it: seals, checkpoints and copies one at a time. */
  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(work, work);
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** Entries reached D1: seal them within 2 s. */
  async wake(): Promise<void> {
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + WAKE_DELAY_MS);
  }

  /** Seals now (tests and the export's callers that want the head current). */
  seal(): Promise<SealResult> {
    return this.#serial(() => sealPending(this.env.DB, Date.now()));
  }

  /** POST /api/audit/checkpoints: seal, then sign the head at once (the request audited as `audit.checkpoint`). */
  checkpoint(principal: string): Promise<SealerCheckpointAnswer> {
    return this.#serial(() => this.#checkpoint(principal, true));
  }

  /** The Cron Trigger: seal, and sign the first time each UTC day. */
  scheduled(): Promise<void> {
    return this.#serial(async () => {
      await sealPending(this.env.DB, Date.now());
      const latest = await latestCheckpoint(this.env.DB);
      if (dailyCheckpointDue(latest?.at ?? null, Date.now())) await this.#checkpoint("engine", false);
      await this.#copy();
    });
  }

  override async alarm(): Promise<void> {
    let next: number | null = null;
    try {
      const result = await this.seal();
      if (result.nextAt !== undefined) next = result.nextAt + AFTER_MINUTE_MS;
      // A backlog larger than one call: the next alarm goes on at once.
      if (result.more === true) next = Date.now();
    } catch (err) {
      logger.error("audit: sealing failed; retried", { error: (err as Error).message });
      next = Date.now() + RETRY_AFTER_FAILURE_MS;
    }
    const copied = await this.#serial(() => this.#copy());
    if (!copied) next = Math.min(next ?? Number.POSITIVE_INFINITY, Date.now() + RETRY_AFTER_FAILURE_MS);
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now() + 1));
  }

  async #checkpoint(principal: string, onDemand: boolean): Promise<SealerCheckpointAnswer> {
    const loaded = loadConfig(this.env);
    const key = loaded.state === "bad_config" ? undefined : loaded.config.AUDIT_SIGNING_KEY;
    if (key === undefined) return { kind: "unsigned" };
    const db = this.env.DB;
    const now = Date.now();
    let { head } = await sealPending(db, now);
    // The existing checkpoint, a refusal, or nothing to sign: answered before anything is written.
    const precheck = await makeCheckpoint(db, key, head, now, onDemand, { dryRun: true });
    if (precheck !== null) return precheck;
    // The request itself is in the chain it signs.
    await auditStatement(db, {
      id: newAuditId(),
      at: new Date(now).toISOString(),
      principal,
      action: "audit.checkpoint",
      target: "audit/checkpoints",
      result: "ok",
      via: onDemand ? "api" : "engine",
    }).run();
    ({ head } = await sealPending(db, now));
    const outcome = (await makeCheckpoint(db, key, head, now, onDemand)) as CheckpointOutcome;
    await this.#copy();
    return outcome;
  }

  /** Writes due R2 copies; false when one failed (the alarm retries it). */
  async #copy(): Promise<boolean> {
    const bucket = (this.env as Env & { AUDIT_BUCKET?: R2Bucket }).AUDIT_BUCKET;
    if (bucket === undefined) return true;
    const result = await copyDueCheckpoints(this.env.DB, bucket);
    if (result.error === undefined) return true;
    logger.error("audit: an R2 copy failed; retried", { due: result.due, error: result.error });
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + RETRY_AFTER_FAILURE_MS);
    return false;
  }
}
