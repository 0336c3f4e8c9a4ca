// Halt scopes (contract section 23): the one parse of a scope string and the
// one rule for whether an active halt covers a mutating call or a trigger.
// Pure: the D1 side (src/outcomes/halts.ts) states the same rule as SQL in
// the checkpoint's statement; test/unit/halt-scope.test.ts holds them to it.
//
// `all` covers every mutating call; `server:<s>` the tools of MCP_SERVERS'
// `s`; `tool:<t>` the tool `t` (`mcp__<server>__<tool>`); `principal:<id>`
// the runs whose requester or on_behalf_of is that principal, or whose
// person is that principal's person (its other credentials too).

export type HaltScope =
  | { kind: "all" }
  | { kind: "server"; value: string }
  | { kind: "tool"; value: string }
  | { kind: "principal"; value: string };

/** What a run and its call show a halt: who asked for it (and their persons), and which tool on which server. */
export interface HaltSubject {
  requested_by: string;
  on_behalf_of?: string | undefined;
  /** Every person the run stands for (the requester's, the on_behalf_of's); nulls are nobody. */
  persons: readonly (string | null | undefined)[];
  /** Absent for a trigger: only `all` and `principal:` halts refuse triggers. */
  call?: { tool_name: string; server: string | undefined };
}

/** An active halt as the run reads it. */
export interface ActiveHalt {
  halt_id: string;
  scope_kind: HaltScope["kind"];
  scope_value: string | null;
  /** The person of a `principal:` halt's principal (null: it is no person). */
  scope_person: string | null;
  engaged_at: string;
}

export type ScopeParse = { ok: true; scope: HaltScope } | { ok: false; message: string };

const PRINCIPAL_KINDS = /^(access|access-service|slack|token):./;

/** A scope string as given; `known` says whether a server or tool names something configured. */
export function parseHaltScope(
  raw: string,
  known: { server: (name: string) => boolean; tool: (name: string) => string | undefined },
): ScopeParse {
  if (raw === "all") return { ok: true, scope: { kind: "all" } };
  const colon = raw.indexOf(":");
  const kind = colon === -1 ? raw : raw.slice(0, colon);
  const value = colon === -1 ? "" : raw.slice(colon + 1);
  if (value === "" && kind !== raw)
    return { ok: false, message: `"${kind}:" names nothing; write ${kind}:<${kind === "tool" ? "tool_name" : kind}>` };
  switch (kind) {
    case "server":
      return known.server(value)
        ? { ok: true, scope: { kind: "server", value } }
        : { ok: false, message: `no MCP server "${value}" is configured (MCP_SERVERS)` };
    case "tool": {
      const why = known.tool(value);
      return why === undefined ? { ok: true, scope: { kind: "tool", value } } : { ok: false, message: why };
    }
    case "principal":
      return PRINCIPAL_KINDS.test(value) && value === value.trim()
        ? { ok: true, scope: { kind: "principal", value } }
        : { ok: false, message: "a principal is access:<email>, access-service:<id>, slack:<team>:<user> or token:<name>" };
    default:
      return { ok: false, message: 'a scope is "all", "server:<server>", "tool:<tool_name>" or "principal:<principal id>"' };
  }
}

/** The scope as written back (the `scope` of the halt's JSON). */
export function scopeText(scope: HaltScope): string {
  return scope.kind === "all" ? "all" : `${scope.kind}:${scope.value}`;
}

/** Whether an active halt covers the subject (a mutating call, or a trigger when `call` is absent). */
export function haltCovers(halt: ActiveHalt, subject: HaltSubject): boolean {
  switch (halt.scope_kind) {
    case "all":
      return true;
    case "server":
      return subject.call !== undefined && subject.call.server === halt.scope_value;
    case "tool":
      return subject.call !== undefined && subject.call.tool_name === halt.scope_value;
    case "principal": {
      if (halt.scope_value === subject.requested_by || halt.scope_value === subject.on_behalf_of) return true;
      const person = halt.scope_person;
      return person !== null && subject.persons.some((p) => p === person);
    }
  }
}

/** The oldest active halt covering the subject (contract section 23 names that one), or null. */
export function coveringHalt(halts: readonly ActiveHalt[], subject: HaltSubject): ActiveHalt | null {
  let oldest: ActiveHalt | null = null;
  for (const halt of halts) {
    if (!haltCovers(halt, subject)) continue;
    if (oldest === null || halt.engaged_at < oldest.engaged_at || (halt.engaged_at === oldest.engaged_at && halt.halt_id < oldest.halt_id))
      oldest = halt;
  }
  return oldest;
}
