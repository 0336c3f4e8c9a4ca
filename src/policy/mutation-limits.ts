// Mutation limits (contract section 23): which limits a tool's mutation is
// under (its own TOOL_POLICY entry's and those of `"*"`, which add up, the
// latter counting every tool's mutations together), whose rows each counts
// (`by`: principal, channel or all), and the retry hint of a full window.
// Pure; the D1 side is src/outcomes/mutation-limits.ts.
import { durationSeconds } from "../config/config";
import { POLICY_DEFAULTS_KEY } from "../config/policy-words";

export interface MutationLimit {
  max: number;
  per_s: number;
  by: "principal" | "channel" | "all";
  /** The tool whose rows count, or null under `"*"`: every tool's. */
  tool: string | null;
}

interface LimitFields {
  limits?: readonly { max: number; per: string; by: "principal" | "channel" | "all" }[] | undefined;
}

/** Every limit a mutation of `toolName` must be under: its own entry's, then `"*"`'s. */
export function limitsFor(toolPolicy: Readonly<Record<string, LimitFields>>, toolName: string): MutationLimit[] {
  const out: MutationLimit[] = [];
  const add = (key: string, tool: string | null) => {
    const entry = Object.hasOwn(toolPolicy, key) ? toolPolicy[key] : undefined;
    for (const l of entry?.limits ?? []) out.push({ max: l.max, per_s: durationSeconds(l.per) ?? 0, by: l.by, tool });
  };
  if (toolName !== POLICY_DEFAULTS_KEY) add(toolName, toolName);
  add(POLICY_DEFAULTS_KEY, null);
  return out;
}

/** Contract section 23: ceil(oldest counted dispatched_at + per − now), never below 0. */
export function retryAfterSeconds(oldestDispatchedAt: string, perSeconds: number, nowMs: number): number {
  const oldest = Date.parse(oldestDispatchedAt);
  if (!Number.isFinite(oldest)) return perSeconds;
  return Math.max(0, Math.ceil((oldest + perSeconds * 1_000 - nowMs) / 1_000));
}

/** The key a `principal` limit counts a row by: the person it counts for, else the requester's principal id. */
export function limitKey(requesterPerson: string | null | undefined, requestedBy: string): string {
  return requesterPerson ?? requestedBy;
}
