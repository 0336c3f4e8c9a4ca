// Which spans of a text are secrets by their value alone (contract section
// 20), from maintained rule sets rather than from memory:
//  - secretlint's recommended preset (@secretlint/secretlint-rule-preset-recommend,
//    pinned in package.json): its rules run here as they are. Each rule is a
//    creator whose `file(source)` handler matches the text and reports
//    ranges; the handlers are synchronous for text sources, so they are made
//    once and called with a context that only collects the ranges. Two rules
//    are left out: filter-comments (a `secretlint-disable` comment in a
//    model's text would switch redaction off) and gcp (it reads only .json
//    and .p12 files, never text).
//  - gitleaks' default config: its prefix rules (a value that is a credential
//    on its own), generated from its config/gitleaks.toml into
//    gitleaks-rules.ts by scripts/generate-secret-rules.ts (`npm run
//    secret-rules` refreshes them). gitleaks ships no npm package that runs
//    in a Worker (its npm wrappers download a Go binary).
//  - the engine's own: `aee_` API tokens (contract section 18).
import { rules as secretlintRules } from "@secretlint/secretlint-rule-preset-recommend";
import { GITLEAKS_RULES } from "./gitleaks-rules";

/** A span `[start, end)` of a text that a rule takes for a secret. */
export interface SecretSpan {
  rule: string;
  start: number;
  end: number;
}

/** The part of a secretlint rule creator this module calls (the preset's own types package is not installed). */
interface SecretlintRuleCreator {
  meta: { id: string; supportedContentTypes?: string[] };
  create(
    context: {
      createTranslator: () => (key: string) => string;
      report: (d: { range: readonly [number, number] }) => void;
      ignore: () => void;
    },
    options: Record<string, unknown>,
  ): { file?: (source: { content: string; filePath: string; ext: string; contentType: "text" }) => unknown };
}

const SECRETLINT_EXCLUDED = new Set(["@secretlint/secretlint-rule-filter-comments", "@secretlint/secretlint-rule-gcp"]);

/** Texts shorter than this hold no value any rule matches (the shortest, gitleaks' slack-legacy-workspace-token, is 13 characters). */
const MIN_SCAN_CHARS = 12;
/**
 * A cheap test first (running every rule costs tens of microseconds per text): every value any
 * rule matches holds a run of 12 token characters (keys, ids, base64 bodies), a URL (userinfo,
 * connection strings, webhooks) or a PEM header. Text with none of them is ordinary prose.
 */
const MAY_HOLD_SECRET = /[A-Za-z0-9_\-+/=.]{12}|:\/\/|-----BEGIN/;

let collecting: { rule: string; spans: SecretSpan[] } | null = null;

const secretlintHandlers = (secretlintRules as unknown as SecretlintRuleCreator[])
  .filter((rule) => !SECRETLINT_EXCLUDED.has(rule.meta.id))
  .map((rule) => ({
    id: rule.meta.id,
    handler: rule.create(
      {
        createTranslator: () => (key) => key,
        report: ({ range }) => collecting?.spans.push({ rule: collecting.rule, start: range[0], end: range[1] }),
        ignore: () => {},
      },
      // The AWS rule scans for access key ids only when asked; no other rule reads this option.
      { enableIDScanRule: true },
    ),
  }));

/** The secretlint rule ids this module runs. */
export const SECRETLINT_RULE_IDS: readonly string[] = secretlintHandlers.map((h) => h.id);

/** gitleaks' prefix rules (generated) and the engine's own, by id. */
export const VALUE_RULES: ReadonlyArray<{ id: string; keywords?: readonly string[]; pattern: RegExp }> = [
  ...GITLEAKS_RULES,
  // gitleaks' private-key, also for a block cut off before its END line (a tool's output cut short).
  {
    id: "engine:private-key-block",
    pattern: /-----BEGIN[ A-Za-z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,65536}?(?:KEY(?: BLOCK)?-----|$)/gi,
  },
  // Any `sk-` key (OpenAI's and Anthropic's older shapes, which gitleaks' generic-api-key rule catches by entropy).
  { id: "engine:sk-key", pattern: /\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{16,512}/g },
  // Shapes this engine redacted before section 20, looser than the lists above (a shorter body is
  // still taken for a key: over-redacting costs nothing): Stripe keys and webhook secrets, GitHub and
  // GitLab tokens, any `xox?-` Slack token, AWS key ids, npm and SendGrid keys, short JWTs.
  {
    id: "engine:prefixed-token",
    pattern:
      /\b(?:[sr]k_(?:live|test)_[A-Za-z0-9]{8,512}|gh[pousr]_[A-Za-z0-9]{20,512}|github_pat_[A-Za-z0-9_]{20,512}|glpat-[A-Za-z0-9_-]{16,512}|xapp-[A-Za-z0-9-]{10,512}|(?:AKIA|ASIA)[A-Z0-9]{16}|npm_[A-Za-z0-9]{36}|SG\.[A-Za-z0-9_-]{16,128}\.[A-Za-z0-9_-]{16,128})/g,
  },
  { id: "engine:stripe-webhook-secret", pattern: /\bwhsec_[A-Za-z0-9]{16,512}/g },
  { id: "engine:slack-token", pattern: /\bxox[a-z]-[A-Za-z0-9-]{10,512}/g },
  { id: "engine:jwt", pattern: /\beyJ[A-Za-z0-9_-]{4,8192}\.eyJ[A-Za-z0-9_-]{4,8192}\.[A-Za-z0-9_-]{0,8192}/g },
  // The engine's API tokens: `aee_` + at least 32 random bytes in base64url (43 characters).
  { id: "engine:aee-token", pattern: /\baee_[A-Za-z0-9_-]{40,512}/g },
];

/** Every span of `text` that a rule takes for a secret (overlapping spans included, in no order). */
export function findSecretSpans(text: string): SecretSpan[] {
  if (text.length < MIN_SCAN_CHARS || !MAY_HOLD_SECRET.test(text)) return [];
  const spans: SecretSpan[] = [];
  for (const { id, handler } of secretlintHandlers) {
    collecting = { rule: id, spans };
    try {
      handler.file?.({ content: text, filePath: "text.txt", ext: ".txt", contentType: "text" });
    } finally {
      collecting = null;
    }
  }
  let lower: string | undefined;
  for (const { id, keywords, pattern } of VALUE_RULES) {
    if (keywords !== undefined && keywords.length > 0) {
      lower ??= text.toLowerCase();
      if (!keywords.some((k) => (lower as string).includes(k))) continue;
    }
    pattern.lastIndex = 0;
    for (const m of text.matchAll(pattern)) {
      if (m[0].length > 0) spans.push({ rule: id, start: m.index, end: m.index + m[0].length });
    }
  }
  return spans;
}

/** `text` with every secret span (merged where they overlap) replaced by `marker`. */
export function replaceSecretSpans(text: string, marker: string): string {
  const spans = findSecretSpans(text).sort((a, b) => a.start - b.start);
  if (spans.length === 0) return text;
  let out = "";
  let copied = 0;
  let open: { start: number; end: number } | null = null;
  for (const span of spans) {
    if (open !== null && span.start <= open.end) {
      open.end = Math.max(open.end, span.end);
      continue;
    }
    if (open !== null) {
      out += text.slice(copied, open.start) + marker;
      copied = open.end;
    }
    open = { start: span.start, end: span.end };
  }
  if (open !== null) {
    out += text.slice(copied, open.start) + marker;
    copied = open.end;
  }
  return out + text.slice(copied);
}
