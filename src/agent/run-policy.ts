// The policy version a run's checks use (contract section 24): a snapshot
// brought up to the pointer each check reads. Asking and every decision read
// the active halts and, in the same statement, the pointer
// (src/outcomes/halts.ts readHaltsAndPolicy); the document comes from the
// isolate's cache (src/outcomes/policy-store.ts) and is read from D1 only
// when the pointer moved. So no check that starts after an activation's
// answer uses the old rule, and nothing is read on the decision path beyond
// the halts read it already made. An active version that no longer
// validates is never replaced by an older one or the settings: the run
// decides nothing under it (nothing in its budget, nobody an approver).
import type { HostConfig } from "../config/config";
import { type HaltDb, type HaltsRead, needsHalts, readHaltsAndPolicy } from "../outcomes/halts";
import type { ActiveHalts } from "./run-rpc";
import { type BadPolicy, isBadPolicy, type PolicySnapshot, policySnapshot, readActivePolicy } from "../outcomes/policy-store";
import { logger } from "../operate/logger";

/** What a version that no longer validates decides: nothing (fail closed, contract section 24). */
function refusingSnapshot(bad: BadPolicy): PolicySnapshot {
  return {
    version: bad.version,
    hash: bad.hash,
    document: { tools: { "*": { approvers: ["token:\u{1F6AB}-no-valid-policy"] } }, groups: {}, budget: {} },
  };
}

/** The last snapshot any run of this isolate saw: a new run object starts from it, then every check moves it on. */
let lastSeen: PolicySnapshot | undefined;
/** The shadow version the last pointer read of this isolate named (null: none). */
let lastShadow: PolicySnapshot | null = null;

export class RunPolicy {
  readonly #db: () => Pick<HaltDb, "prepare">;
  readonly #config: HostConfig;
  #current: PolicySnapshot;
  /** The shadow version (contract section 24), followed from the same pointer read; undefined: none. */
  #shadow: PolicySnapshot | undefined;

  private constructor(db: () => Pick<HaltDb, "prepare">, config: HostConfig, current: PolicySnapshot) {
    this.#db = db;
    this.#config = config;
    this.#current = current;
  }

  /** The run's policy, from the isolate's last snapshot, else read once (a cold isolate). */
  static async load(db: () => Pick<HaltDb, "prepare">, config: HostConfig): Promise<RunPolicy> {
    const settings = (await policySnapshot(db(), config, 0)) as PolicySnapshot;
    const policy = new RunPolicy(db, config, lastSeen ?? settings);
    policy.#shadow = lastShadow ?? undefined;
    if (lastSeen === undefined) await policy.#settle(await readActivePolicy(db(), config).catch(() => undefined));
    return policy;
  }

  /** The version in force for the check being made. */
  current(): PolicySnapshot {
    return this.#current;
  }

  /** The shadow version in force for the check being made (contract section 24); undefined: none. */
  shadow(): PolicySnapshot | undefined {
    return this.#shadow;
  }

  /** The halts and the pointer in one read (a check's own statement); the snapshot follows the pointer. */
  async readChecks(waitMs: number): Promise<HaltsRead | "unavailable"> {
    const read = await readHaltsAndPolicy(this.#db(), waitMs);
    await this.follow(read);
    return read;
  }

  /** The active halts for a check (the engine's `halts`), the snapshot brought to the pointer read beside them. */
  async halts(waitMs: number): Promise<ActiveHalts> {
    const read = await this.readChecks(waitMs);
    return read === "unavailable" ? read : read.halts;
  }

  /**
   * What a person's action is judged against: the halts (for an approve or an accept, else none) and,
   * for every decision or answer, the version active now. A surface's read (beside its own lookups)
   * serves; else the run reads both in one statement.
   */
  async forAction(action: { kind: string; answer?: unknown }, waitMs: number, read?: ActiveHalts | HaltsRead): Promise<ActiveHalts> {
    if (action.kind === "cancel" || action.kind === "answer") return [];
    const checks = read === undefined || Array.isArray(read) ? await this.readChecks(waitMs) : (read as HaltsRead | "unavailable");
    if (read !== undefined && !Array.isArray(read)) await this.follow(checks);
    if (!needsHalts(action)) return [];
    return checks === "unavailable" ? checks : checks.halts;
  }

  /** Follows a pointer the checkpoint's statement found moved (contract section 24: rebuilt once under it). */
  async followVersion(version: number): Promise<void> {
    await this.follow({ halts: [], policy_version: version });
  }

  /** Brings the snapshot to a pointer a surface read (beside its own lookups); an unavailable read keeps it. */
  async follow(read: HaltsRead | "unavailable" | undefined): Promise<void> {
    if (read === undefined || read === "unavailable") return;
    if (read.shadow_version !== undefined) await this.#followShadow(read.shadow_version);
    if (read.policy_version === this.#current.version) return;
    await this.#settle(await policySnapshot(this.#db(), this.#config, read.policy_version).catch(() => undefined));
  }

  /** The shadow version a pointer read named: its document from the isolate's cache (read once per version). */
  async #followShadow(version: number | null): Promise<void> {
    if (version === null) {
      this.#shadow = undefined;
      lastShadow = null;
      return;
    }
    if (this.#shadow?.version === version) return;
    const found = await policySnapshot(this.#db(), this.#config, version).catch(() => undefined);
    // A shadow version that no longer validates decides nothing and is compared with nothing.
    this.#shadow = found === undefined || isBadPolicy(found) ? undefined : found;
    lastShadow = this.#shadow ?? null;
  }

  async #settle(found: PolicySnapshot | BadPolicy | undefined): Promise<void> {
    if (found === undefined) return;
    if (isBadPolicy(found)) {
      logger.error("policy: the active version no longer validates; nothing is decided under it", { version: found.version });
      this.#current = refusingSnapshot(found);
      return;
    }
    this.#current = found;
    lastSeen = found;
  }
}
