// `npm run secret-rules [-- <path or URL of gitleaks.toml>]`: regenerates
// src/execution/gitleaks-rules.ts (the value rules of gitleaks' default
// config, contract section 20) and test/fixtures/gitleaks-samples.ts (one
// sample per rule) from gitleaks' own config/gitleaks.toml (MIT,
// https://github.com/gitleaks/gitleaks). Without an argument it reads the
// config at GITLEAKS_REF below from GitHub; pass a local copy to work offline.
//
// Which rules: gitleaks' *prefix* rules, the ones whose pattern is a
// credential on its own (`dop_v1_…`, `PMAK-…`, `AGE-SECRET-KEY-1…`). The
// others need context this module does not judge: an assignment to a
// keyword (`adafruit_key = …`: the engine redacts by the key's name, section
// 17), a file path, a curl command line or a YAML document. An alternative of
// a rule that is an assignment is dropped and the rest kept
// (atlassian-api-token keeps its `ATATT3…` shape).
//
// How: each RE2 pattern is parsed (the subset gitleaks uses) and written out
// as a JavaScript one. A pattern with any case-insensitive part is made
// case-insensitive as a whole, and open quantifiers get an upper bound: both
// only ever widen or cut what a rule takes, and redaction errs towards more.
// A leading `(?:^|[delimiters])` becomes a lookbehind and a trailing
// `(?:[delimiters]|$)` a lookahead (so the match is the secret itself); the
// delimiters after a secret also take gitleaks' usual ones and `,)]}<>`
// (text quoting a value, JSON).
// Entropy thresholds and allowlists are not applied (more is redacted);
// keywords are, as gitleaks applies them (a rule runs only on text holding one).
//
// Samples: generated from the RE2 pattern as gitleaks wrote it (not from the
// converted one), so the tests check the conversion; each is checked here
// against the converted pattern. They are fake, and the fixture keeps them
// cut into parts (`·` every four characters, joined at test time), so that
// no secret scanner takes the committed file for secrets.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parse } from "smol-toml";

const GITLEAKS_REF = "b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b";
const DEFAULT_SOURCE = `https://raw.githubusercontent.com/gitleaks/gitleaks/${GITLEAKS_REF}/config/gitleaks.toml`;
const ROOT = resolve(import.meta.dirname, "..");
const RULES_OUT = join(ROOT, "src/execution/gitleaks-rules.ts");
const SAMPLES_OUT = join(ROOT, "test/fixtures/gitleaks-samples.ts");

/** Rules left out whole, and why (each must still exist upstream, or the script says so). */
const EXCLUDED: Record<string, string> = {
  "generic-api-key": "an assignment to any credential-like name: the engine's key-name rules (section 17)",
  "curl-auth-header": "a curl command line: the engine's header and flag-pair rules",
  "curl-auth-user": "a curl command line: the engine's flag-pair and URL userinfo rules",
  "kubernetes-secret-yaml": "a YAML document's structure, not a value",
};
/** Parts of patterns cut out, and why. */
const CUT: Record<string, { part: string; why: string }> = {
  "sourcegraph-access-token": { part: "|[a-fA-F0-9]{40}", why: "a bare 40-digit hex string is every git commit id" },
};
/** The upper bound given to an open quantifier (`+`, `*`, `{n,}`). */
const OPEN_BOUND = 8192;
/** gitleaks' "end of a secret" group, and the wider one used here. */
const GITLEAKS_END = String.raw`(?:[\x60'"\s;]|\\[nr]|$)`;
const WIDER_END = String.raw`(?=[\x60'"\s;,)\]}<>]|\\[nr]|$)`;

// ---------------------------------------------------------------------------------------------
// RE2 (the subset gitleaks' config uses)

type Node =
  | { t: "alt"; alts: Node[][] }
  | { t: "group"; kind: "capture" | "plain"; ci?: boolean; body: Node }
  | { t: "flags"; ci: boolean }
  | { t: "lit"; ch: string; src: string }
  | { t: "esc"; src: string }
  | { t: "class"; src: string; js: string }
  | { t: "dot" }
  | { t: "anchor"; src: string }
  | { t: "quant"; node: Node; min: number; max: number | null; lazy: boolean; src: string };

const POSIX: Record<string, string> = { alnum: "A-Za-z0-9", alpha: "A-Za-z", digit: "0-9", upper: "A-Z", lower: "a-z" };

function parseRe2(src: string): Node {
  let i = 0;
  const fail = (why: string): never => {
    throw new Error(`${why} at ${i} in ${src}`);
  };
  const parseAlt = (): Node => {
    const alts: Node[][] = [[]];
    while (i < src.length && src[i] !== ")") {
      if (src[i] === "|") {
        i++;
        alts.push([]);
        continue;
      }
      const atom = parseAtom();
      alts[alts.length - 1]?.push(parseQuant(atom));
    }
    return { t: "alt", alts };
  };
  const parseQuant = (node: Node): Node => {
    const start = i;
    let min: number;
    let max: number | null;
    const c = src[i];
    if (c === "*") [min, max] = [0, null];
    else if (c === "+") [min, max] = [1, null];
    else if (c === "?") [min, max] = [0, 1];
    else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i));
      if (!m) return node;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === "" ? null : Number(m[3]);
      i += m[0].length - 1;
    } else return node;
    i++;
    const lazy = src[i] === "?";
    if (lazy) i++;
    return parseQuant({ t: "quant", node, min, max, lazy, src: src.slice(start, i) });
  };
  const parseClass = (): Node => {
    const start = i;
    i++; // [
    let js = "[";
    if (src[i] === "^") {
      js += "^";
      i++;
    }
    let first = true;
    while (i < src.length && (src[i] !== "]" || first)) {
      first = false;
      if (src.startsWith("[:", i)) {
        const m = /^\[:([a-z]+):\]/.exec(src.slice(i)) ?? fail("bad POSIX class");
        js += POSIX[m[1] ?? ""] ?? fail(`unknown POSIX class ${m[1]}`);
        i += m[0].length;
      } else if (src[i] === "\\") {
        const e = src.slice(i, i + 2);
        if (e === "\\x") {
          js += src.slice(i, i + 4);
          i += 4;
        } else {
          js += e;
          i += 2;
        }
      } else {
        js += src[i] === "/" || src[i] === "[" ? `\\${src[i]}` : src[i];
        i++;
      }
    }
    if (src[i] !== "]") fail("unclosed class");
    i++;
    return { t: "class", src: src.slice(start, i), js: `${js}]` };
  };
  const parseAtom = (): Node => {
    const c = src[i] ?? fail("unexpected end");
    if (c === "(") {
      i++;
      let kind: "capture" | "plain" = "capture";
      let ci: boolean | undefined;
      if (src[i] === "?") {
        const m = /^\?(?:P<\w+>|(-?i)?(:|\))|:)/.exec(src.slice(i)) ?? fail("unknown group");
        i += m[0].length;
        if (m[0].startsWith("?P<")) kind = "capture";
        else if (m[2] === ")") return { t: "flags", ci: m[1] === "i" };
        else {
          kind = "plain";
          if (m[1]) ci = m[1] === "i";
        }
      }
      const body = parseAlt();
      if (src[i] !== ")") fail("unclosed group");
      i++;
      return { t: "group", kind, ci, body };
    }
    if (c === "[") return parseClass();
    if (c === ".") {
      i++;
      return { t: "dot" };
    }
    if (c === "^" || c === "$") {
      i++;
      return { t: "anchor", src: c };
    }
    if (c === "\\") {
      const e = src.slice(i, i + 2);
      if (e === "\\x") {
        const hex = src.slice(i + 2, i + 4);
        i += 4;
        return { t: "lit", ch: String.fromCharCode(Number.parseInt(hex, 16)), src: `\\x${hex}` };
      }
      i += 2;
      if (/^\\[dDwWsSbB]$/.test(e)) return { t: "esc", src: e };
      if (e === "\\z") return { t: "anchor", src: "$" };
      if (e === "\\A") return { t: "anchor", src: "^" };
      if (/^\\[nrt]$/.test(e))
        return { t: "lit", ch: ({ n: "\n", r: "\r", t: "\t" } as Record<string, string>)[e.slice(1)] as string, src: e };
      if (/^\\[^A-Za-z0-9]$/.test(e)) return { t: "lit", ch: e.slice(1), src: e };
      return fail(`unknown escape ${e}`);
    }
    if (c === "*" || c === "+" || c === "?" || c === "|" || c === ")") fail(`unexpected ${c}`);
    i++;
    return { t: "lit", ch: c, src: /[/]/.test(c) ? `\\${c}` : c };
  };
  const tree = parseAlt();
  if (i !== src.length) fail("trailing text");
  return tree;
}

/** Whether any part of the pattern is case-insensitive. */
function anyCaseInsensitive(node: Node): boolean {
  switch (node.t) {
    case "alt":
      return node.alts.some((seq) => seq.some(anyCaseInsensitive));
    case "group":
      return node.ci === true || anyCaseInsensitive(node.body);
    case "flags":
      return node.ci;
    case "quant":
      return anyCaseInsensitive(node.node);
    default:
      return false;
  }
}

const isAnchorOnly = (seq: Node[]) => seq.length > 0 && seq.every((n) => n.t === "anchor");
const hasAnchorAlt = (node: Node) =>
  node.t === "group" && node.kind === "plain" && node.body.t === "alt" && node.body.alts.some(isAnchorOnly);

function toJs(node: Node): string {
  switch (node.t) {
    case "alt":
      return node.alts.map((seq) => seq.map(toJs).join("")).join("|");
    case "group":
      return `${node.kind === "capture" ? "(" : "(?:"}${toJs(node.body)})`;
    case "flags":
      return "";
    case "lit":
      return node.src === node.ch && /[\\^$.*+?()[\]{}|/]/.test(node.ch) ? `\\${node.ch}` : node.src;
    case "esc":
      return node.src;
    case "class":
      return node.js;
    case "dot":
      return ".";
    case "anchor":
      return node.src;
    case "quant": {
      const max = node.max ?? Math.max(node.min, OPEN_BOUND);
      const q = node.min === max ? `{${max}}` : node.min === 0 && max === 1 ? "?" : `{${node.min},${max}}`;
      return `${toJs(node.node)}${q}${node.lazy ? "?" : ""}`;
    }
  }
}

/** A top-level alternative as JavaScript, its leading and trailing delimiter groups as lookarounds. */
function seqToJs(seq: Node[]): string {
  const parts = seq.map(toJs);
  const first = seq[0];
  const last = seq[seq.length - 1];
  if (first && hasAnchorAlt(first) && toJs(first).startsWith("(?:^|")) parts[0] = `(?<=${toJs(first).slice(3)}`;
  if (seq.length > 1 && last && hasAnchorAlt(last)) {
    const end = toJs(last);
    parts[parts.length - 1] = end === GITLEAKS_END ? WIDER_END : `(?=${end.slice(3, -1)}|${WIDER_END.slice(3)}`;
  }
  return parts.join("");
}

// ---------------------------------------------------------------------------------------------
// Samples, from the RE2 tree as written

const PREFERRED = "aB3dE5gH7jK9mN1pQ2sT4vW6yZ8cF0iLxRoUtSwYbCeGhMnPqVzAkDfJl_-.+/=";
const ASCII = Array.from({ length: 95 }, (_, k) => String.fromCharCode(32 + k)).join("");
const AVOID = new Set(['"', "'", "`", "\\", "<", ">", "&", " ", ",", ";", ")", "]", "}", "·"]);

/** A sample, and the part of it gitleaks takes for the secret (its first group, when that stands in the top level). */
function sampleOf(node: Extract<Node, { t: "alt" }>): { sample: string; secret: string } {
  const counters = new Map<string, number>();
  const pick = (js: string): string => {
    const re = new RegExp(`^${js}$`);
    const pool = [...PREFERRED, ...ASCII].filter((ch) => !AVOID.has(ch) && re.test(ch));
    if (pool.length === 0) throw new Error(`no sample character for ${js}`);
    const n = counters.get(js) ?? 0;
    counters.set(js, n + 1);
    return pool[n % new Set(pool).size] as string;
  };
  const gen = (n: Node): string => {
    switch (n.t) {
      case "alt": {
        const seq = n.alts.find(isAnchorOnly) ?? n.alts[0] ?? [];
        return seq.map(gen).join("");
      }
      case "group":
        return gen(n.body);
      case "flags":
      case "anchor":
        return "";
      case "lit":
        return n.ch;
      case "esc":
        return /\\[bB]/.test(n.src) ? "" : pick(n.src);
      case "class":
        return pick(n.js);
      case "dot":
        return "."; // a host name's dots are as gitleaks wrote them (and hold its keywords)
      case "quant": {
        let out = "";
        for (let k = 0; k < n.min; k++) out += gen(n.node);
        return out;
      }
    }
  };
  const seq = node.alts.find(isAnchorOnly) ?? node.alts[0] ?? [];
  let sample = "";
  let secret: string | undefined;
  for (const part of seq) {
    const text = gen(part);
    if (secret === undefined && part.t === "group" && part.kind === "capture") secret = text;
    sample += text;
  }
  return { sample, secret: secret ?? sample };
}

// ---------------------------------------------------------------------------------------------

const ASSIGNMENT = String.raw`(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`;

interface Rule {
  id: string;
  description?: string;
  regex?: string;
  path?: string;
  keywords?: string[];
}

const source = process.argv[2] ?? DEFAULT_SOURCE;
const toml = /^https?:/.test(source) ? await (await fetch(source)).text() : await readFile(source, "utf8");
const digest = createHash("sha256").update(toml).digest("hex");
const config = parse(toml) as unknown as { rules: Rule[] };

for (const id of [...Object.keys(EXCLUDED), ...Object.keys(CUT)]) {
  if (!config.rules.some((r) => r.id === id)) console.warn(`note: ${id} is no longer in gitleaks' config`);
}

const out: { id: string; description: string; js: string; flags: string; keywords: string[]; sample: string; secret: string }[] = [];
const skipped: string[] = [];
for (const rule of config.rules) {
  if (rule.regex === undefined || rule.path !== undefined || rule.id in EXCLUDED) {
    skipped.push(rule.id);
    continue;
  }
  let regex = rule.regex;
  const cut = CUT[rule.id];
  if (cut) {
    if (!regex.includes(cut.part)) throw new Error(`${rule.id}: "${cut.part}" is gone; review CUT`);
    regex = regex.replace(cut.part, "");
  }
  const tree = parseRe2(regex) as Extract<Node, { t: "alt" }>;
  const kept = tree.alts.filter((seq) => !seq.map(toJs).join("").includes(ASSIGNMENT));
  if (kept.length === 0) {
    skipped.push(rule.id);
    continue;
  }
  const keptTree = { t: "alt" as const, alts: kept };
  const flags = anyCaseInsensitive(tree) ? "gi" : "g";
  const js = kept.map(seqToJs).join("|");
  const { sample, secret } = sampleOf(keptTree);
  const compiled = new RegExp(js, flags);
  // gitleaks runs a rule only on text holding one of its keywords (in lower case); so does the engine.
  // A rule whose own shape need not hold a keyword (airtable-personnal-access-token: `pat…`) always runs.
  const keywords = (rule.keywords ?? []).map((k) => k.toLowerCase());
  const alwaysRuns = kept.some(
    (seq) =>
      !keywords.some((k) =>
        sampleOf({ t: "alt", alts: [seq] })
          .sample.toLowerCase()
          .includes(k),
      ),
  );
  if (alwaysRuns) keywords.length = 0;
  for (const context of [`before ${sample} after`, JSON.stringify({ v: sample }), sample]) {
    const m = [...context.matchAll(compiled)];
    if (!m.some((x) => x[0].includes(sample.slice(0, -2)))) throw new Error(`${rule.id}: sample ${sample} not matched in ${context}`);
  }
  out.push({ id: `gitleaks:${rule.id}`, description: rule.description ?? rule.id, js, flags, keywords, sample, secret });
}

const header = (what: string) =>
  [
    `// ${what}`,
    "// GENERATED by scripts/generate-secret-rules.ts (npm run secret-rules): do not edit.",
    `// From gitleaks' config/gitleaks.toml (MIT, Copyright (c) 2019 Zachary Rice), commit ${GITLEAKS_REF},`,
    `// sha256 ${digest}.`,
    `// ${out.length} prefix rules; left out: ${skipped.length} rules that need context (assignments, paths).`,
  ].join("\n");

const regexLiteral = (js: string, flags: string) => `/${js}/${flags}`;
const rules = [
  header("gitleaks' prefix rules as JavaScript patterns (contract section 20; src/execution/secret-rules.ts runs them)."),
  "",
  "/**",
  " * gitleaks' value rules that stand on their own, by `gitleaks:<rule id>`. A rule runs only on text that holds one",
  " * of its `keywords` (lower case; none: always), as in gitleaks: every text its pattern matches holds one.",
  " */",
  "export const GITLEAKS_RULES: ReadonlyArray<{ id: string; keywords: readonly string[]; pattern: RegExp }> = [",
  ...out.map(
    (r) =>
      `  // ${r.description.replace(/\s+/g, " ").slice(0, 120)}\n  { id: ${JSON.stringify(r.id)}, keywords: ${JSON.stringify(r.keywords)}, pattern: ${regexLiteral(r.js, r.flags)} },`,
  ),
  "];",
  "",
].join("\n");

const split = (s: string) => s.match(/.{1,4}/gs)?.join("·") ?? "";
const samples = [
  header("One fake sample per gitleaks rule of src/execution/gitleaks-rules.ts, cut into parts."),
  "",
  "/** `·` marks where a sample is cut: no whole sample is in this file's text. */",
  'const joined = (parts: string) => parts.replaceAll("·", "");',
  "",
  "/** Each rule's sample, and the part of it that is the secret when not all of it (a URL's userinfo). */",
  "export const GITLEAKS_SAMPLES: readonly { rule: string; value: string; secret?: string }[] = (",
  "  [",
  ...out.map(
    (r) =>
      `    [${[r.id, split(r.sample), ...(r.secret === r.sample ? [] : [split(r.secret)])].map((x) => JSON.stringify(x)).join(", ")}],`,
  ),
  "  ] as [string, string, string?][]",
  ").map(([rule, parts, secret]) => ({ rule, value: joined(parts), ...(secret === undefined ? {} : { secret: joined(secret) }) }));",
  "",
].join("\n");

await writeFile(RULES_OUT, rules);
await writeFile(SAMPLES_OUT, samples);
execFileSync(join(ROOT, "node_modules/.bin/biome"), ["check", "--write", RULES_OUT], { stdio: "pipe" });
console.log(`wrote ${out.length} rules to ${RULES_OUT} and their samples to ${SAMPLES_OUT}; left out ${skipped.join(", ")}`);
