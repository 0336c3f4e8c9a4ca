// The one redaction module (contract section 17). Everything that leaves the
// engine or rests in it beyond what a call needs goes through here:
//  - redactSecrets(value): structured values (tool arguments, results). A key
//    that names a credential has its value replaced, at any depth, whatever
//    the value's type; header pairs given as arrays or {name, value} /
//    {key, value} objects count as keys, and so does a command-line flag
//    (`["--password", "v"]`) for the string after it; every string (and key)
//    also goes through redactText.
//  - redactText(text): free text (questions, MCP result summaries, error
//    messages, log lines). The exact values of the deployment's own secrets
//    (API_TOKEN...: registerExactSecret), values that are credentials on
//    their own by the maintained rule sets of secret-rules.ts (secretlint's
//    recommended preset, gitleaks' defaults) and by scheme here (`Bearer
//    ...`, `Basic ...`, user:password@ in URLs), `key: value` / `key=value`
//    pairs whose key names a credential, header pairs written in text
//    (`"X-Api-Key","v"`, `"name":"Cookie","value":"v"`), flags followed by
//    their value (`--token v`, `--token=v`), and JSON text (parsed and
//    redacted as a structure).
// The key-name and pair rules are hand-written: the rule sets match values,
// not names; every pattern here is linear (bounded quantifiers).
// Redaction is idempotent: redacting redacted output changes nothing.
import { redactExactSecrets as replaceExactSecrets } from "../config/exact-secrets";
import { replaceSecretSpans } from "./secret-rules";

export const REDACTED = "[redacted]";

/** The deployment's own secrets, by exact value (registered by the configuration as it loads: src/config/exact-secrets.ts). */
const redactExactSecrets = (text: string): string => replaceExactSecrets(text, REDACTED);

/**
 * Deeper than this a structure is replaced whole. Request bodies are limited to
 * 64 levels (src/http/json-limits.ts), so real arguments never reach it; a deeper
 * MCP result is not worth the risk of walking.
 */
export const MAX_REDACTION_DEPTH = 80;

/** Text longer than this is not parsed as JSON (a bound on work); the text rules still apply. */
const MAX_JSON_TEXT_CHARS = 2 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Keys

/**
 * Stems matched anywhere in the key once it is lower-cased with separators removed
 * (`X-API-KEY`, `apikey`, `dbPassword`, `my_access_token`). Long enough not to occur
 * inside ordinary words. "token" is followed by anything but "iz"/"is" (tokenizer,
 * tokenise are not secrets); a count such as `tokens_used` IS redacted: harmless.
 */
const SQUASHED_STEMS =
  /passw(?:or)?d|passphrase|passcode|pwd|secret(?!ar)|credential|apikey|accesskey|privatekey|privkey|sshkey|pgpkey|gpgkey|licen[cs]ekey|accountkey|clientkey|signingkey|encryptionkey|masterkey|authkey|authori[sz]ation|bearer|cookie|signature|token(?!i[sz])|session|jwt/;

/**
 * Words matched only as a whole word of the key (split on separators, camelCase and
 * digits): too short to match inside other words (`passage`, `compass`, `design`).
 */
const WHOLE_WORDS = new Set(["pass", "sig", "creds", "cred", "otp", "csrf", "xsrf"]);

/**
 * Words that name a credential only when their value is a scalar (`auth: "xyz"` is redacted,
 * `auth: {user, password}` is walked). A bare `key` is not one: it names ids far more often.
 */
const SCALAR_ONLY_WORDS = new Set(["auth"]);

/** The key's words: `X-Api-Key` → x, api, key; `clientSecretV2` → client, secret, v, 2. */
function keyWords(key: string): string[] {
  return key
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .replace(/([A-Za-z])([0-9])|([0-9])([A-Za-z])/g, "$1$3 $2$4")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "");
}

/** Keys longer than this are text, not names; they are not treated as naming a credential. */
const MAX_KEY_CHARS = 128;

/** True when `key` names a credential, in any case and separator style. */
export function isSecretKey(key: string): boolean {
  if (key.length > MAX_KEY_CHARS) return false;
  const squashed = key.toLowerCase().replace(/[^a-z0-9]+/g, "");
  if (SQUASHED_STEMS.test(squashed)) return true;
  return keyWords(key).some((w) => WHOLE_WORDS.has(w));
}

/** A command-line flag (`--password`, `-p` is too short to tell) whose name names a credential; `--token=v` carries its own value. */
function isSecretFlag(arg: string): boolean {
  return /^--?[A-Za-z][A-Za-z0-9_-]{1,63}$/.test(arg) && isSecretKey(arg);
}

/** Weaker than isSecretKey: a key (`auth`, `key`) whose scalar value is taken for a credential. */
function isScalarSecretKey(key: string): boolean {
  if (key.length > MAX_KEY_CHARS) return false;
  const words = keyWords(key);
  return words.length > 0 && words.length <= 3 && words.some((w) => SCALAR_ONLY_WORDS.has(w));
}

/** Fields that name the entry in `{name: "authorization", value: "..."}` shaped header lists. */
const NAME_FIELDS = ["name", "key", "header", "field", "param", "parameter"] as const;

// ---------------------------------------------------------------------------------------------
// Structured values

/**
 * Actor fields the engine writes itself (contract section 18). Their value is a principal id:
 * `token:<name>` names a token, it is not one, so `token:ci` is kept as is there (free text
 * elsewhere is still redacted as `token: <value>`).
 */
const ACTOR_KEYS = new Set(["decided_by", "answered_by", "reconciled_by", "approved_by", "requested_by", "principal"]);
const PRINCIPAL_ID = /^(?:token:[a-z0-9][a-z0-9-]{0,62}|access:[^\s@]+@[^\s@]+|access-service:\S{1,200}|slack:[A-Z0-9:]{1,64})$/;

export function redactSecrets(value: unknown): unknown {
  return redactValue(value, 0);
}

function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === "string") return redactTextAt(value, depth);
  if (value === null || typeof value !== "object") return value;
  if (depth >= MAX_REDACTION_DEPTH) return REDACTED;
  if (Array.isArray(value)) {
    // A header pair: ["Authorization", "Bearer x"].
    if (value.length === 2 && typeof value[0] === "string" && isSecretKey(value[0])) {
      return [redactTextAt(value[0], depth), REDACTED];
    }
    // A command line: ["curl", "--password", "v"]: the string after a flag that names a credential.
    return value.map((item, i) => {
      const before = value[i - 1];
      if (typeof item === "string" && typeof before === "string" && isSecretFlag(before)) return REDACTED;
      return redactValue(item, depth + 1);
    });
  }
  const entries = Object.entries(value as Record<string, unknown>);
  // A named entry: {name: "authorization", value: "..."}: everything but the name is redacted.
  const nameField = NAME_FIELDS.find((f) => {
    const named = (value as Record<string, unknown>)[f];
    return typeof named === "string" && isSecretKey(named);
  });
  const out: Record<string, unknown> = {};
  for (const [key, inner] of entries) {
    // Defined, not assigned: a `__proto__` key of parsed JSON stays data, as it was.
    const put = (v: unknown) =>
      Object.defineProperty(out, redactTextAt(key, depth), { value: v, enumerable: true, writable: true, configurable: true });
    // The name is kept (it says which secret the entry holds), its text redacted like any other: a "name" may carry one.
    if (key === nameField) put(redactTextAt(inner as string, depth));
    else if (ACTOR_KEYS.has(key) && typeof inner === "string" && PRINCIPAL_ID.test(inner)) put(inner);
    else if (nameField !== undefined || isSecretKey(key)) put(REDACTED);
    else if (isScalarSecretKey(key) && (inner === null || typeof inner !== "object")) put(inner === null ? null : REDACTED);
    else put(redactValue(inner, depth + 1));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Free text

/** Credentials recognisable by their shape alone. Each is linear: bounded or possessive-free classes. */
const VALUE_PATTERNS: ReadonlyArray<{ pattern: RegExp; replace: string | ((match: string, ...groups: string[]) => string) }> = [
  // Userinfo in a URL: scheme://user:password@host, scheme://token@host.
  { pattern: /\b([a-z][a-z0-9+.-]{0,20}:\/\/)[^\s/?#@"'<>\\]{1,512}@/gi, replace: `$1${REDACTED}@` },
  // Authorization schemes followed by their credential.
  { pattern: /\b(bearer)(\s+)[A-Za-z0-9\-._~+/]{1,4096}=*/gi, replace: `$1$2${REDACTED}` },
  {
    pattern: /\b(basic)(\s+)([A-Za-z0-9+/]{4,4096}={0,2})/gi,
    replace: (match, scheme, space, encoded) => (isBasicCredential(encoded) ? `${scheme}${space}${REDACTED}` : match),
  },
];

function isBasicCredential(encoded: string): boolean {
  try {
    return atob(encoded).includes(":");
  } catch {
    return false;
  }
}

/**
 * `key: value`, `key=value`, `"key": "value"` and escaped `\"key\":\"value\"` in text.
 * Only the key and separator are matched here (bounded); the value is scanned by hand.
 */
const KEY_VALUE = /(?:(\\{0,2}["'])([^"'\\\r\n]{1,64})\1|(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{1,64}))[ \t]{0,8}[:=][ \t]{0,8}/g;

/** Header-like keys whose value runs to the end of the line (`Authorization: Digest a=1, b=2`). */
const LINE_VALUE_KEY = /authori[sz]ation|cookie/;

export function redactText(text: string): string {
  return redactTextAt(text, 0);
}

function redactTextAt(raw: string, depth: number): string {
  // The deployment's own secrets first, so one inside JSON text goes too.
  const text = redactExactSecrets(raw);
  const fromJson = redactJsonText(text, depth);
  if (fromJson !== undefined) return fromJson;
  let out = text;
  // The scheme rules first: they keep a URL's host when only its userinfo is a credential.
  for (const { pattern, replace } of VALUE_PATTERNS) {
    pattern.lastIndex = 0;
    out = typeof replace === "string" ? out.replace(pattern, replace) : out.replace(pattern, replace);
  }
  out = replaceSecretSpans(out, REDACTED);
  out = redactTextPairs(out);
  out = redactTextFlags(out);
  return redactKeyValues(out);
}

// ---------------------------------------------------------------------------------------------
// Pairs and flags written in text

/** `"X-Api-Key", "v"`: a quoted name, a comma, then a quoted value (header pairs printed as arrays). */
const TEXT_ARRAY_PAIR =
  /(\\{0,2}["'])([^"'\\\r\n]{1,64})\1[ \t]{0,8},[ \t]{0,8}(?=\\{0,2}["'])(?!\\{0,2}["'][^"'\r\n]{0,64}["'][ \t]{0,8}:)/g;
/** `"name": "Cookie", "value": "v"` (or `key`, `header`...): a name field naming a credential, then its value field. */
const TEXT_NAMED_PAIR =
  /(\\{0,2}["'])(?:name|key|header|field|param|parameter)\1[ \t]{0,8}:[ \t]{0,8}\1([^"'\\\r\n]{1,64})\1[ \t]{0,8},[ \t]{0,8}\1value\1[ \t]{0,8}:[ \t]{0,8}/g;
/** `--token v`: a flag naming a credential, spaces, then a bare value. `--token=v` is a key=value pair. */
const TEXT_FLAG = /(?<![A-Za-z0-9_-])(--?[A-Za-z][A-Za-z0-9_-]{1,63})[ \t]{1,8}(?=[^\s-])/g;

function redactTextPairs(text: string): string {
  const out = replaceValuesAfter(text, TEXT_NAMED_PAIR, (m) => isSecretKey(m[2] ?? ""));
  // A name, not a value: `"--token=v", "--api-key", "w"` names nothing with its first string.
  return replaceValuesAfter(
    out,
    TEXT_ARRAY_PAIR,
    (m) => /^[^=:]+$/.test(m[2] ?? "") && !(m[2] ?? "").includes(REDACTED) && isSecretKey(m[2] ?? ""),
  );
}

function redactTextFlags(text: string): string {
  return replaceValuesAfter(text, TEXT_FLAG, (m) => isSecretKey(m[1] ?? ""));
}

/** Replaces the value that starts where each match of `pattern` ends, when `names` says the match names a credential. */
function replaceValuesAfter(text: string, pattern: RegExp, names: (m: RegExpExecArray) => boolean): string {
  let out = "";
  let copied = 0;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    if (!names(m)) continue;
    const valueStart = m.index + m[0].length;
    const valueEnd = scanValueEnd(text, valueStart, "", false);
    if (valueEnd === valueStart) continue;
    out += text.slice(copied, valueStart) + redactedValueText(text.slice(valueStart, valueEnd));
    copied = valueEnd;
    pattern.lastIndex = valueEnd;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Text that is a JSON object or array: parsed, redacted as a structure, printed again. */
function redactJsonText(text: string, depth: number): string | undefined {
  const trimmed = text.trim();
  const first = trimmed[0];
  if ((first !== "{" && first !== "[") || trimmed.length > MAX_JSON_TEXT_CHARS) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object") return undefined;
  const redacted = JSON.stringify(redactValue(parsed, depth + 1));
  let original: string | undefined;
  try {
    original = JSON.stringify(parsed);
  } catch {
    // Too deep to print (a RangeError): the redacted form, cut at MAX_REDACTION_DEPTH, is what goes out.
  }
  // Unchanged by redaction: the text keeps its own formatting.
  return redacted === original ? text : redacted;
}

function redactKeyValues(text: string): string {
  let out = "";
  let copied = 0;
  KEY_VALUE.lastIndex = 0;
  for (let m = KEY_VALUE.exec(text); m !== null; m = KEY_VALUE.exec(text)) {
    const [whole, openQuote = "", quotedKey, bareKey] = m;
    const key = quotedKey ?? bareKey ?? "";
    const valueStart = m.index + whole.length;
    if (!namesCredentialInText(text, m.index, key, bareKey !== undefined, text[valueStart])) continue;
    const valueEnd = scanValueEnd(text, valueStart, openQuote, LINE_VALUE_KEY.test(key.toLowerCase()));
    if (valueEnd === valueStart) continue;
    const value = text.slice(valueStart, valueEnd);
    out += text.slice(copied, valueStart) + redactedValueText(value);
    copied = valueEnd;
    KEY_VALUE.lastIndex = valueEnd;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Whether a `key: value` pair in text is a credential. A bare key may be the last word of a
 * spaced name (`api key=...`, `client secret: ...`): the word before it counts too. A
 * scalar-only key (`auth`) counts unless its value opens an object or array.
 */
function namesCredentialInText(text: string, keyStart: number, key: string, bare: boolean, valueFirst: string | undefined): boolean {
  if (isSecretKey(key)) return true;
  if (isScalarSecretKey(key) && valueFirst !== "{" && valueFirst !== "[") return true;
  if (!bare) return false;
  const before = /([A-Za-z0-9_.-]{1,32}) $/.exec(text.slice(Math.max(0, keyStart - 33), keyStart));
  return before !== null && isSecretKey(`${before[1]} ${key}`);
}

/** Keeps a value's quotes (and their escapes) around the marker, so JSON text stays JSON. */
function redactedValueText(value: string): string {
  const quoted = /^(\\{0,2}["'])[\s\S]*\1$/.exec(value);
  if (quoted && value.length >= 2 * quoted[1]!.length) return `${quoted[1]}${REDACTED}${quoted[1]}`;
  return REDACTED;
}

/** Where a `key: value` pair's value ends: its closing quote, the line's end, or a delimiter. */
function scanValueEnd(text: string, start: number, keyQuote: string, toEndOfLine: boolean): number {
  // Already redacted (its brackets would end a bare value early): the marker is the value.
  if (!toEndOfLine && text.startsWith(REDACTED, start)) return start + REDACTED.length;
  const opening = /^\\{0,2}["']/.exec(text.slice(start, start + 3))?.[0];
  if (opening !== undefined) {
    // A quoted value: up to the same (escaped) quote, not counting a backslash-escaped one.
    let i = start + opening.length;
    while (i < text.length) {
      const found = text.indexOf(opening, i);
      if (found === -1) return text.length;
      if (opening.length === 1 && text[found - 1] === "\\") {
        i = found + 1;
        continue;
      }
      return found + opening.length;
    }
    return text.length;
  }
  let i = start;
  const stop = toEndOfLine ? /[\r\n]/ : keyQuote !== "" ? /[\s,;&}\]\\"'<>)]/ : /[\s,;&}\]"'<>)]/;
  while (i < text.length && !stop.test(text[i]!)) i++;
  return i;
}
