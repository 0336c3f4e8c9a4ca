// Principal patterns of contract section 19: an exact principal id, a pattern
// in which `*` matches any run of characters, or `group:<name>` naming an
// entry of APPROVER_GROUPS (groups do not nest). `access:` ids compare in
// lower case. Pure: no I/O, no config loading.

import { GROUP_REFERENCE_REGEX } from "../config/policy-words";

/** `access:` ids (and patterns) compare in lower case; other kinds are case-sensitive (Slack ids, token names). */
export function normalisePrincipalId(id: string): string {
  return id.toLowerCase().startsWith("access:") ? `access:${id.slice("access:".length).toLowerCase()}` : id;
}

/**
 * One pattern against one principal id. Written by hand rather than with a
 * glob library: globs give `/` and `?` meanings that principal ids
 * (`access:a/b@x`, `slack:T1:U?`) must not have; this is `*` and nothing else.
 */
export function patternMatches(pattern: string, principalId: string): boolean {
  const p = normalisePrincipalId(pattern);
  const id = normalisePrincipalId(principalId);
  if (!p.includes("*")) return p === id;
  const parts = p.split("*");
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!id.startsWith(first) || id.length < first.length + last.length) return false;
  let at = first.length;
  for (const middle of parts.slice(1, -1)) {
    const found = id.indexOf(middle, at);
    if (found < 0) return false;
    at = found + middle.length;
  }
  return id.length - last.length >= at && id.endsWith(last);
}

/** The patterns a list names, with every `group:` replaced by its members (unknown groups name nobody). */
export function expandApprovers(approvers: readonly string[], groups: Readonly<Record<string, readonly string[]>>): string[] {
  const out: string[] = [];
  for (const entry of approvers) {
    const group = GROUP_REFERENCE_REGEX.exec(entry)?.[1];
    if (group === undefined) out.push(entry);
    else out.push(...(Object.hasOwn(groups, group) ? (groups[group] ?? []) : []));
  }
  return out;
}

/** True when any of `approvers` (groups expanded) matches the principal. */
export function matchesApprovers(
  approvers: readonly string[],
  groups: Readonly<Record<string, readonly string[]>>,
  principalId: string,
): boolean {
  return expandApprovers(approvers, groups).some((p) => patternMatches(p, principalId));
}
