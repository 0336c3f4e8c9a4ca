// What a policy version loosens against the active one (contract section 24).
// The tightenings are listed, and every other change loosens, so a case
// nobody thought of fails closed (it needs a second person):
//   adding `approvers` where there were none; removing a pattern from
//   `approvers` or `escalate_to`, or a group member; raising
//   `approvals_required` or a `level` (none -> approve -> confirm); turning
//   `self_approval` off or removing `read_only`; lowering a budget or removing
//   a tool from it; adding a limit, lowering its `max` or lengthening its
//   `per`; lengthening or removing `escalate_after`; changing `remind_before`.
// Compared field by field, `"*"` included, both as each entry writes it and
// as it applies to the tool (its own, else `"*"`'s), so a tool's own
// `approvers` replacing the defaults' is judged as the change it is for that
// tool; a change that loosens either way loosens. Limits add up, so
// they compare as each entry lists them, by position. Each loosening change
// is one `{path, from, to}`, `path` an RFC 6901 pointer into the new
// document (`from`/`to` null when absent). Pure: no I/O.
import { canonicalize } from "json-canonicalize";
import { durationSeconds } from "../config/config";
import { POLICY_DEFAULTS_KEY } from "../config/policy-words";

export interface Loosening {
  path: string;
  from: unknown;
  to: unknown;
}

/** A document as the detector reads it (validated or not: unknown fields are simply compared). */
export interface PolicyShape {
  tools?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  groups?: Readonly<Record<string, readonly string[]>>;
  budget?: Readonly<Record<string, number>>;
}

/** The fields of an entry that `"*"` gives to every tool (contract sections 19, 23, 24); `limits` add up instead. */
const INHERITED = new Set(["approvers", "approvals_required", "self_approval", "remind_before", "escalate_after", "escalate_to"]);

/** RFC 6901: `~` as `~0`, `/` as `~1`. */
function pointer(...tokens: (string | number)[]): string {
  return tokens.map((t) => `/${String(t).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
}

/** Equal as JSON values (member order aside; absent and undefined alike). */
function same(a: unknown, b: unknown): boolean {
  return canonicalize(a ?? null) === canonicalize(b ?? null);
}

const LEVEL_RANK: Record<string, number> = { approve: 1, confirm: 2 };

/** Whether changing one field from `from` to `to` (undefined: absent) is one of the listed tightenings. */
function tightens(field: string, from: unknown, to: unknown): boolean {
  switch (field) {
    case "approvers":
      // Adding approvers where there were none, or removing patterns (and nothing else).
      return from === undefined ? Array.isArray(to) : Array.isArray(from) && Array.isArray(to) && isStrictSubset(to, from);
    case "escalate_to":
      return Array.isArray(from) && (to === undefined || (Array.isArray(to) && isStrictSubset(to, from)));
    case "approvals_required":
      return typeof to === "number" && to > (typeof from === "number" ? from : 1);
    case "level": {
      // none (null) -> approve -> confirm; an absent level is derived from the server's annotations, so only confirm is above it.
      if (to === "confirm") return from !== "confirm";
      return from === null && typeof to === "string" && (LEVEL_RANK[to] ?? 0) > 0;
    }
    case "self_approval":
      return to === false && from !== false;
    case "read_only":
      return from === true && to !== true;
    case "escalate_after": {
      if (from === undefined) return false;
      if (to === undefined) return true;
      const a = typeof from === "string" ? durationSeconds(from) : undefined;
      const b = typeof to === "string" ? durationSeconds(to) : undefined;
      return a !== undefined && b !== undefined && b > a;
    }
    case "remind_before":
      return true;
    default:
      return false;
  }
}

/** `sub` lists only members of `of`, and fewer of them (as sets). */
function isStrictSubset(sub: readonly unknown[], of: readonly unknown[]): boolean {
  const whole = new Set(of.map((v) => canonicalize(v)));
  const part = new Set(sub.map((v) => canonicalize(v)));
  return [...part].every((v) => whole.has(v)) && part.size < whole.size;
}

/** A limit's change, position by position: lowering `max` or lengthening `per` (nothing else) tightens. */
function limitTightens(from: Record<string, unknown>, to: Record<string, unknown>): boolean {
  const keys = new Set([...Object.keys(from), ...Object.keys(to)]);
  let changed = false;
  for (const key of keys) {
    if (same(from[key], to[key])) continue;
    changed = true;
    if (key === "max") {
      if (!(typeof from.max === "number" && typeof to.max === "number" && to.max < from.max)) return false;
    } else if (key === "per") {
      const a = typeof from.per === "string" ? durationSeconds(from.per) : undefined;
      const b = typeof to.per === "string" ? durationSeconds(to.per) : undefined;
      if (a === undefined || b === undefined || b <= a) return false;
    } else {
      return false;
    }
  }
  return changed;
}

function limitsLoosen(path: string, from: unknown, to: unknown, out: Loosening[]): void {
  const a = Array.isArray(from) ? from : [];
  const b = Array.isArray(to) ? to : [];
  if ((from !== undefined && !Array.isArray(from)) || (to !== undefined && !Array.isArray(to))) {
    if (!same(from, to)) out.push({ path, from: from ?? null, to: to ?? null });
    return;
  }
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] as Record<string, unknown> | undefined;
    const y = b[i] as Record<string, unknown> | undefined;
    if (same(x, y)) continue;
    // Adding a limit tightens; removing one loosens; a change loosens unless it only lowers max or lengthens per.
    if (x === undefined) continue;
    if (y === undefined || typeof x !== "object" || typeof y !== "object" || x === null || y === null || !limitTightens(x, y)) {
      out.push({ path: `${path}/${i}`, from: x ?? null, to: y ?? null });
    }
  }
}

function entryOf(tools: PolicyShape["tools"], name: string): Readonly<Record<string, unknown>> | undefined {
  return tools !== undefined && Object.hasOwn(tools, name) ? tools[name] : undefined;
}

/** The value a field has for a tool: its own, else (for the inherited fields) `"*"`'s. */
function applied(tools: PolicyShape["tools"], name: string, field: string): unknown {
  const own = entryOf(tools, name);
  if (own !== undefined && own[field] !== undefined) return own[field];
  if (name === POLICY_DEFAULTS_KEY || !INHERITED.has(field)) return undefined;
  return entryOf(tools, POLICY_DEFAULTS_KEY)?.[field];
}

function toolsLoosen(from: PolicyShape["tools"], to: PolicyShape["tools"], out: Loosening[]): void {
  const names = new Set([...Object.keys(from ?? {}), ...Object.keys(to ?? {})]);
  // `"*"` first, then the tools in name order, so the list is stable.
  const ordered = [...names].sort((a, b) => (a === POLICY_DEFAULTS_KEY ? -1 : b === POLICY_DEFAULTS_KEY ? 1 : a < b ? -1 : a > b ? 1 : 0));
  for (const name of ordered) {
    const a = entryOf(from, name);
    const b = entryOf(to, name);
    if (a !== undefined && b !== undefined && typeof a !== "object") continue;
    const fields = new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})]);
    if (name !== POLICY_DEFAULTS_KEY) for (const field of INHERITED) fields.add(field);
    for (const field of [...fields].sort()) {
      const path = pointer("tools", name, field);
      if (field === "limits") {
        limitsLoosen(path, a?.[field], b?.[field], out);
        continue;
      }
      // Loosening as written (the entry's own field) or as it applies (over `"*"`): either one needs a second person.
      const x = applied(from, name, field);
      const y = applied(to, name, field);
      const ownX = a?.[field];
      const ownY = b?.[field];
      if (!same(x, y) && !tightens(field, x, y)) out.push({ path, from: x ?? null, to: y ?? null });
      else if (!same(ownX, ownY) && !tightens(field, ownX, ownY)) out.push({ path, from: ownX ?? null, to: ownY ?? null });
    }
  }
}

function groupsLoosen(from: PolicyShape["groups"], to: PolicyShape["groups"], out: Loosening[]): void {
  const names = new Set([...Object.keys(from ?? {}), ...Object.keys(to ?? {})]);
  for (const name of [...names].sort()) {
    const a = from !== undefined && Object.hasOwn(from, name) ? from[name] : undefined;
    const b = to !== undefined && Object.hasOwn(to, name) ? to[name] : undefined;
    if (same(a, b)) continue;
    // Removing members (a whole group included) tightens; any member added loosens.
    const before = new Set((a ?? []).map(String));
    if ((b ?? []).every((m) => before.has(String(m))) && Array.isArray(a ?? []) && Array.isArray(b ?? [])) continue;
    out.push({ path: pointer("groups", name), from: a ?? null, to: b ?? null });
  }
}

function budgetLoosen(from: PolicyShape["budget"], to: PolicyShape["budget"], out: Loosening[]): void {
  const names = new Set([...Object.keys(from ?? {}), ...Object.keys(to ?? {})]);
  for (const name of [...names].sort()) {
    const a = from !== undefined && Object.hasOwn(from, name) ? from[name] : undefined;
    const b = to !== undefined && Object.hasOwn(to, name) ? to[name] : undefined;
    if (same(a, b)) continue;
    // Lowering a budget, or removing the tool from it, tightens; anything else loosens.
    if (b === undefined || (typeof a === "number" && typeof b === "number" && b < a)) continue;
    out.push({ path: pointer("budget", name), from: a ?? null, to: b ?? null });
  }
}

/** Every loosening change of `to` against `from` (the active version); [] when it only tightens (or changes nothing). */
export function loosenings(from: PolicyShape, to: PolicyShape): Loosening[] {
  const out: Loosening[] = [];
  toolsLoosen(from.tools, to.tools, out);
  groupsLoosen(from.groups, to.groups, out);
  budgetLoosen(from.budget, to.budget, out);
  // A member of the document beyond the three (none validate today) fails closed.
  const known = new Set(["tools", "groups", "budget"]);
  const a = from as Record<string, unknown>;
  const b = to as Record<string, unknown>;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (!known.has(key) && !same(a[key], b[key])) out.push({ path: pointer(key), from: a[key] ?? null, to: b[key] ?? null });
  }
  return out;
}
