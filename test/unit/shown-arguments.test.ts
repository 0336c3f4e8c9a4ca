// What an approver is shown of a call's arguments (contract section 19): the
// arguments cut nowhere but at secrets, and `hidden`, an RFC 6901 pointer and
// the JSON length of every withheld value. Properties: every hidden path
// resolves in the original arguments, and with the hidden values set aside
// the shown arguments are the original ones.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { REDACTED } from "../../src/execution/redaction";
import { pointerToken, shownArguments } from "../../src/execution/shown-arguments";
import { SECRET_SAMPLES } from "../fixtures/secret-samples";

const RUNS = Number(env.FUZZ_RUNS || 300);

/**
 * RFC 6901 evaluation, written here from the RFC so the module's pointers are checked by
 * another implementation than the one that wrote them. `undefined` when the path does not resolve.
 */
function resolve(doc: unknown, pointer: string): { value: unknown } | undefined {
  if (pointer === "") return { value: doc };
  if (!pointer.startsWith("/")) return undefined;
  let at: unknown = doc;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (Array.isArray(at)) {
      if (!/^(?:0|[1-9][0-9]*)$/.test(token) || Number(token) >= at.length) return undefined;
      at = at[Number(token)];
    } else if (at !== null && typeof at === "object" && Object.hasOwn(at, token)) {
      at = (at as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return { value: at };
}

/** A copy of `doc` with the value at each pointer replaced by `marker`. */
function setAside(doc: unknown, pointers: string[], marker: unknown): unknown {
  const copy = structuredClone(doc);
  let root = copy;
  for (const pointer of pointers) {
    if (pointer === "") {
      root = marker;
      continue;
    }
    const tokens = pointer
      .slice(1)
      .split("/")
      .map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
    const last = tokens.pop()!;
    const parent = tokens.reduce<unknown>((at, t) => (at as Record<string, unknown>)[t], root) as Record<string, unknown>;
    Object.defineProperty(parent, last, { value: marker, enumerable: true, writable: true, configurable: true });
  }
  return root;
}

describe("shownArguments", () => {
  it("shows the SQL under a plain key whole and withholds only the password, naming it", () => {
    const sql = `DROP TABLE customers; ${"-- and more\n".repeat(300)}`;
    const out = shownArguments({ query: sql, db: { host: "db.internal", password: "hunter2-long" } });
    expect(out.arguments).toEqual({ query: sql, db: { host: "db.internal", password: REDACTED } });
    expect(out.hidden).toEqual([{ path: "/db/password", reason: "secret", chars: JSON.stringify("hunter2-long").length }]);
  });

  it("lists a value under a name the contract keeps secret (`session`), with its length", () => {
    const value = "DROP TABLE customers; --";
    const out = shownArguments({ session: value, note: "ok" });
    expect(out.arguments).toEqual({ session: REDACTED, note: "ok" });
    expect(out.hidden).toEqual([{ path: "/session", reason: "secret", chars: value.length + 2 }]);
  });

  it("escapes `~` as ~0 and `/` as ~1 in pointers (RFC 6901), `~` first", () => {
    expect(pointerToken("a/b")).toBe("a~1b");
    expect(pointerToken("m~n")).toBe("m~0n");
    expect(pointerToken("~1")).toBe("~01");
    expect(pointerToken("/~")).toBe("~1~0");
    const out = shownArguments({ "a/b": { "m~n": [{ token: "x" }] }, "~1": { password: 12 } });
    expect(out.hidden.map((h) => h.path)).toEqual(["/a~1b/m~0n/0/token", "/~01/password"]);
    expect(out.hidden.map((h) => h.chars)).toEqual([3, 2]);
  });

  it("lists a whole structure withheld under a credential key, and a string redacted in part", () => {
    const sample = SECRET_SAMPLES.find((s) => s.rule === "gitleaks:github-pat")!.value;
    const command = `curl -H 'X-Token: ${sample}' https://example.com`;
    const out = shownArguments({ credentials: { user: "u", pass: "p" }, cmd: command, headers: [["Authorization", "Basic x"]] });
    expect(out.hidden).toEqual([
      { path: "/credentials", reason: "secret", chars: JSON.stringify({ user: "u", pass: "p" }).length },
      { path: "/cmd", reason: "secret", chars: JSON.stringify(command).length },
      { path: "/headers/0/1", reason: "secret", chars: JSON.stringify("Basic x").length },
    ]);
    const shown = out.arguments as { cmd: string };
    expect(shown.cmd).toContain("https://example.com");
    expect(shown.cmd).not.toContain(sample);
  });

  it("withholds an object whole when a key of it is itself a secret, so no pointer carries one", () => {
    const sample = SECRET_SAMPLES.find((s) => s.rule === "gitleaks:github-pat")!.value;
    const out = shownArguments({ ok: 1, map: { [sample]: "owner" } });
    expect(out.arguments).toEqual({ ok: 1, map: REDACTED });
    expect(out.hidden).toEqual([{ path: "/map", reason: "secret", chars: JSON.stringify({ [sample]: "owner" }).length }]);
    expect(JSON.stringify(out)).not.toContain(sample);
  });

  it("hides nothing from arguments without secrets, and keeps a `__proto__` key as data", () => {
    expect(shownArguments({ a: [1, "two", null, { b: true }] })).toEqual({ arguments: { a: [1, "two", null, { b: true }] }, hidden: [] });
    const parsed = JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as unknown;
    const out = shownArguments(parsed);
    expect(out.hidden).toEqual([]);
    expect(JSON.stringify(out.arguments)).toBe('{"__proto__":{"x":1},"y":2}');
    expect(Object.getPrototypeOf(out.arguments)).toBe(Object.prototype);
  });
});

const keyArb = fc.oneof(
  fc.constantFrom("title", "query", "a/b", "m~n", "~1", "", "password", "session", "api_key", "Authorization", "name", "value", "auth"),
  fc.string({ maxLength: 6 }),
);
const leafArb = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(...SECRET_SAMPLES.map((s) => s.value)),
  fc.constantFrom(...SECRET_SAMPLES.map((s) => `run ${s.value} now`)),
);
const treeArb = fc.letrec<{ tree: unknown }>((tie) => ({
  tree: fc.oneof(
    { depthSize: "small" },
    leafArb,
    fc.array(tie("tree"), { maxLength: 4 }),
    fc.tuple(fc.constantFrom("Authorization", "--password", "title"), tie("tree")),
    fc.dictionary(keyArb, tie("tree"), { maxKeys: 5 }),
  ),
})).tree;

describe("shownArguments properties", () => {
  it("every hidden path resolves in the original arguments, its length is that value's JSON text, and nothing else differs", () => {
    fc.assert(
      fc.property(treeArb, (args) => {
        const { arguments: shown, hidden } = shownArguments(args);
        const paths = hidden.map((h) => h.path);
        for (const h of hidden) {
          const found = resolve(args, h.path);
          expect(found).toBeDefined();
          expect(h.chars).toBe(JSON.stringify(found!.value).length);
          expect(h.reason).toBe("secret");
        }
        // No pointer inside another: each withheld value is listed once, at its own place.
        for (const p of paths) expect(paths.filter((q) => q === p || q.startsWith(`${p}/`))).toEqual([p]);
        // Set aside what is hidden: the rest is the original, to the value.
        expect(setAside(shown, paths, "HIDDEN")).toEqual(setAside(args, paths, "HIDDEN"));
      }),
      { numRuns: RUNS },
    );
  });

  it("shows no secret sample and no pointer holding one", () => {
    fc.assert(
      fc.property(treeArb, (args) => {
        const text = JSON.stringify(shownArguments(args));
        for (const sample of SECRET_SAMPLES) expect(text).not.toContain(sample.secret ?? sample.value);
      }),
      { numRuns: Math.min(RUNS, 100) },
    );
  });
});
