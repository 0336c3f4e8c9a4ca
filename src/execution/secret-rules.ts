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
//  - the rules of gitleaks' default config that the preset lacks (the
//    preset has no JWT, Google API key, generic hf_/sk-/AWS-id shapes, PGP
//    blocks, or Slack webhook paths other than /services/). gitleaks ships
//    no npm package that runs in a Worker (its npm wrappers download a Go
//    binary), so these few regexes are copied from its default config,
//    each under the gitleaks rule id it comes from, converted from RE2 to
//    JavaScript (inline `(?i)` becomes a class; bounded quantifiers added
//    where gitleaks leaves them open, to keep every pattern linear).
//  - the engine's own: `aee_` API tokens (contract section 18).
import { rules as secretlintRules } from "@secretlint/secretlint-rule-preset-recommend";

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

/** Texts shorter than this hold no value any rule matches (the shortest, an AWS key id, is 20 characters). */
const MIN_SCAN_CHARS = 16;
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

/** After a match: a delimiter or the end (gitleaks' `(?:[\x60'"\s;]|\\[nr]|$)`), as a lookahead. */
const END = String.raw`(?=[\x60'"\s;,)\]}<>]|\\[nr]|$)`;

/** Patterns from gitleaks' default config (its rule ids) and the engine's own, by id. */
export const VALUE_RULES: ReadonlyArray<{ id: string; pattern: RegExp }> = [
  // gitleaks private-key, with its `(?i)` and open `{64,}?` bounded; a block cut off before its END line counts too.
  {
    id: "gitleaks:private-key",
    pattern: /-----BEGIN[ A-Za-z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,65536}?(?:KEY(?: BLOCK)?-----|$)/gi,
  },
  {
    id: "gitleaks:jwt",
    pattern: new RegExp(
      String.raw`\bey[a-zA-Z0-9]{17,8192}\.ey[a-zA-Z0-9\/\\_-]{17,8192}\.(?:[a-zA-Z0-9\/\\_-]{10,8192}={0,2})?${END}`,
      "g",
    ),
  },
  { id: "gitleaks:gcp-api-key", pattern: new RegExp(String.raw`\bAIza[\w-]{35}${END}`, "g") },
  {
    id: "gitleaks:slack-webhook-url",
    pattern: /(?:https?:\/\/)?hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9+/]{43,56}/g,
  },
  { id: "gitleaks:huggingface-access-token", pattern: new RegExp(String.raw`\bhf_[a-zA-Z]{34}${END}`, "g") },
  { id: "gitleaks:huggingface-organization-api-token", pattern: new RegExp(String.raw`\bapi_org_[a-zA-Z]{34}${END}`, "g") },
  { id: "gitleaks:github-pat", pattern: /ghp_[0-9a-zA-Z]{36}/g },
  { id: "gitleaks:github-oauth", pattern: /gho_[0-9a-zA-Z]{36}/g },
  { id: "gitleaks:github-app-token", pattern: /(?:ghu|ghs)_[0-9a-zA-Z]{36}/g },
  { id: "gitleaks:github-fine-grained-pat", pattern: /github_pat_\w{82}/g },
  { id: "gitleaks:aws-access-token", pattern: /\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b/g },
  { id: "gitleaks:slack-bot-token", pattern: /xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]{0,512}/g },
  { id: "gitleaks:slack-user-token", pattern: /xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}/g },
  { id: "gitleaks:slack-app-token", pattern: /xapp-\d-[A-Za-z0-9]{1,512}-\d{1,32}-[A-Za-z0-9]{1,512}/g },
  { id: "gitleaks:slack-legacy-token", pattern: /xox[os]-\d{1,32}-\d{1,32}-\d{1,32}-[a-fA-F\d]{1,512}/g },
  { id: "gitleaks:slack-config-access-token", pattern: /xoxe.xox[bpBP]-\d-[A-Za-z0-9]{163,166}/g },
  // gitleaks openai-api-key, and the older `sk-` shapes its generic-api-key rule catches by entropy.
  { id: "gitleaks:openai-api-key", pattern: /\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{16,512}/g },
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
  for (const { id, pattern } of VALUE_RULES) {
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
