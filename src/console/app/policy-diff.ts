// The Policy page's diff of two policy versions (contract section 24): each
// document flattened to its leaves by RFC 6901 pointer (the unit the
// loosening detector's `loosens` paths use; an array is one leaf, shown
// whole), and the pointers whose value differs, in pointer order, each
// marked when the newer version's `loosens` names it (or a path inside it).
// Pure (no DOM), so it is unit-tested.

export interface DiffRow {
  /** An RFC 6901 pointer into the documents. */
  path: string;
  kind: "added" | "removed" | "changed";
  /** The value in the first version; undefined where absent. */
  from?: unknown;
  /** The value in the second version; undefined where absent. */
  to?: unknown;
  /** Whether the second version's `loosens` names this path, one inside it or one containing it. */
  loosens: boolean;
}

/** RFC 6901: `~` as `~0`, `/` as `~1`. */
function token(key: string): string {
  return `/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Every leaf of `value` by pointer: a non-object value (arrays included) or an empty object is a leaf. */
export function leaves(value: unknown, at = "", out = new Map<string, unknown>()): Map<string, unknown> {
  if (isObject(value) && Object.keys(value).length > 0) {
    for (const [key, inner] of Object.entries(value)) leaves(inner, `${at}${token(key)}`, out);
  } else {
    out.set(at, value);
  }
  return out;
}

/** The same JSON value, member order aside. */
function same(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function related(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

/** What changed from `from` to `to`, by pointer; `loosens` is the second version's list (its paths are marked). */
export function policyDiff(from: unknown, to: unknown, loosens: readonly { path: string }[] = []): DiffRow[] {
  const before = leaves(from);
  const after = leaves(to);
  const paths = [...new Set([...before.keys(), ...after.keys()])].sort();
  const rows: DiffRow[] = [];
  for (const path of paths) {
    const had = before.has(path);
    const has = after.has(path);
    const a = before.get(path);
    const b = after.get(path);
    if (had && has && same(a, b)) continue;
    // An empty object on one side whose members the other side lists: the members say it all.
    const other = had ? after : before;
    if (!(had && has) && isObject(had ? a : b) && [...other.keys()].some((p) => p.startsWith(`${path}/`))) continue;
    rows.push({
      path,
      kind: !had ? "added" : !has ? "removed" : "changed",
      ...(had ? { from: a } : {}),
      ...(has ? { to: b } : {}),
      loosens: loosens.some((l) => related(l.path, path)),
    });
  }
  return rows;
}

/** A value as one line of JSON for the diff; absent as an em dash. */
export function shownValue(value: unknown): string {
  return value === undefined ? "—" : (JSON.stringify(value) ?? "null");
}
