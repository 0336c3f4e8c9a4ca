// Durations as the policy writes them (contract section 23): `<n>s|m|h|d`,
// `n` a positive integer. The configuration validates with this as it loads
// (limits' `per`, section 24's `remind_before` and `escalate_after`); the
// policy reads it when it decides. Plain arithmetic, no logic beyond it.

/** A duration's seconds, or undefined for anything else. */
export function durationSeconds(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,8})([smhd])$/.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * { s: 1, m: 60, h: 3_600, d: 86_400 }[match[2] as "s" | "m" | "h" | "d"];
}
