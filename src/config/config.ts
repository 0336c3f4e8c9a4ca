// Host configuration: the deployment's wrangler vars and secrets, validated
// with zod once per env object. A bad value is reported (503 bad_config on
// every /api route) instead of running half-configured; a missing API_TOKEN is
// 503 not_configured, so the API fails closed.
import { registerExactSecret } from "./exact-secrets";
import { setLogLevel } from "./log-level";
import { z } from "zod";
import { rolesSchema } from "../wire/roles";
import { APPROVER_PATTERN_REGEX, GROUP_REFERENCE_REGEX, MAX_APPROVALS_REQUIRED, POLICY_DEFAULTS_KEY } from "./policy-words";
import { isTokenKey } from "./token-key";
import { webhooksSchema } from "./webhooks-setting";
import { durationSeconds } from "./durations";

/** Defaults of contract section 13; each one is the contract's, not a guess. */
const DEFAULT_MAX_TOOL_CALLS = 25;
const DEFAULT_APPROVAL_TIMEOUT_MS = 300_000;
const DEFAULT_ADMISSION_TIMEOUT_MS = 300_000;
const DEFAULT_HEARTBEAT_INTERVAL_MS = 15_000;
/** Longest life of one SSE or WebSocket stream before it is closed for the client to resume (contract section 27). */
const DEFAULT_STREAM_MAX_SECONDS = 3_600;
export const DEFAULT_STORAGE_WAIT_MS = 5_000;
const DEFAULT_STORAGE_LEASE_MS = 120_000;
export const DEFAULT_MCP_CONNECT_TIMEOUT_MS = 30_000;
const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;
const DEFAULT_MCP_MAX_RESPONSE_BYTES = 1_048_576;
/** Contract section 21: rounds of questions one MCP tools/call may ask before it ends input_unsupported. */
const DEFAULT_MCP_MAX_INPUT_ROUNDS = 3;
/** Contract section 23: the oldest tool listing a mutation may be checked against (0: each call lists for itself). */
const DEFAULT_MCP_TOOL_LIST_MAX_AGE_MS = 60_000;
const DEFAULT_RUN_RETENTION_SECONDS = 86_400;
const DEFAULT_RUN_MAX_EVENTS = 10_000;
/** Most callers waiting in line for a storage-pool slot (section 9); past it an acquire is refused at once. */
const DEFAULT_STORAGE_POOL_MAX_WAITERS = 256;
/** Contract section 13/14: the Web API's public base, and how long the outbox keeps retrying one post (10 minutes). */
const DEFAULT_SLACK_API_BASE_URL = "https://slack.com/api/";
/** Contract section 26: where the browser is sent to authorize an installation (`<base>oauth/v2/authorize`). */
const DEFAULT_SLACK_OAUTH_BASE_URL = "https://slack.com/";
/** Contract section 19: at most once per user per 5 seconds. */
const DEFAULT_SLACK_HOME_REPUBLISH_MS = 5_000;
const DEFAULT_SLACK_DELIVERY_MAX_MS = 600_000;
/** Contract section 26: a webhook notification is retried for up to a day; the first retry after 5 s, doubling up to every 10 minutes. */
const DEFAULT_WEBHOOK_DELIVERY_MAX_MS = 86_400_000;
const DEFAULT_WEBHOOK_RETRY_BASE_MS = 5_000;
const DEFAULT_WEBHOOK_RETRY_MAX_INTERVAL_MS = 600_000;
/** Contract section 16: a console session lasts 12 hours unless the host says otherwise. */
const DEFAULT_CONSOLE_SESSION_TTL_SECONDS = 43_200;
/** Contract section 18: triggers per principal per minute (0 turns the limit off). */
const DEFAULT_TRIGGER_RATE_PER_MINUTE = 120;
/** Contract section 18: API_TOKEN is the deployment's bootstrap secret; shorter ones are guessable. */
const MIN_API_TOKEN_CHARS = 32;
/** The console's cookie is HMAC-SHA256-signed with this secret; shorter keys are guessable. */
const MIN_CONSOLE_SESSION_SECRET_CHARS = 32;
/** The outbox's first retry after 1 s, doubling per attempt up to once a minute: a flapping Slack is retried briskly, a down one gently. */
export const DEFAULT_SLACK_RETRY_BASE_MS = 1_000;
export const DEFAULT_SLACK_RETRY_MAX_INTERVAL_MS = 60_000;
/** Contract section 22: how long retention keeps each kind of row, in (decimal) days. */
const DEFAULT_RECEIPT_RETENTION_DAYS = 30;
const DEFAULT_INDEX_RETENTION_DAYS = 90;
const DEFAULT_AUDIT_RETENTION_DAYS = 400;
const DEFAULT_SYSTEM_PROMPT =
  "You are an operations assistant. Use the tools to inspect and change dashboards, KPIs and alerts. " +
  "Changes need a person's approval; say clearly what you are about to change and why.";

/** Vars arrive as strings from wrangler (or as numbers from a JSON config); accept both. */
const intVar = (fallback: number, min = 0) =>
  z
    .union([z.string(), z.number()])
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return fallback;
      const n = typeof v === "number" ? v : Number(v.trim());
      if (!Number.isInteger(n) || n < min) {
        ctx.addIssue({ code: "custom", message: `expected an integer >= ${min}, got ${JSON.stringify(v)}` });
        return z.NEVER;
      }
      return n;
    });

/** Decimal days (contract section 22: "the settings take decimal days"), > 0; `fallback` undefined keeps the setting off when unset. */
const daysVar = <F extends number | undefined>(fallback: F) =>
  z
    .union([z.string(), z.number()])
    .optional()
    .transform((v, ctx): number | F => {
      if (v === undefined || v === "") return fallback;
      const n = typeof v === "number" ? v : Number(v.trim());
      if (!Number.isFinite(n) || n <= 0) {
        ctx.addIssue({ code: "custom", message: `expected a number of days > 0 (decimals allowed), got ${JSON.stringify(v)}` });
        return z.NEVER;
      }
      return n;
    });

/** JSON-valued vars: a string holding JSON (wrangler --var, .dev.vars) or an object ([vars] tables). */
const jsonVar = <T extends z.ZodType>(schema: T, fallback: z.output<T>) =>
  z
    .unknown()
    .optional()
    .transform((v, ctx): unknown => {
      if (v === undefined || v === "") return fallback;
      if (typeof v !== "string") return v;
      try {
        return JSON.parse(v);
      } catch {
        ctx.addIssue({ code: "custom", message: "is not valid JSON" });
        return z.NEVER;
      }
    })
    .pipe(schema);

const toolName = z.string().min(1);

const mcpServersSchema = z.record(
  // A double underscore separates server and tool in `mcp__<server>__<tool>`, so it cannot appear in a server name.
  z.string().regex(/^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/, "server names are letters, digits, - and single _"),
  z
    .object({
      url: z.url(),
      headers: z.record(z.string(), z.string()).optional(),
      // Contract section 21: annotations are the server's claims; its readOnlyHint counts only when the host trusts it.
      trust_annotations: z.boolean().default(false),
      // Contract section 21: the engine is this server's OAuth 2.1 client (needs MCP_TOKEN_KEY and PUBLIC_URL).
      oauth: z
        .object({
          client_id: z.string().min(1).max(2_048).optional(),
          // RFC 6749 section 3.3 scope tokens.
          scopes: z
            .array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, "a scope token (no spaces or quotes)"))
            .max(100)
            .optional(),
        })
        .strict()
        .optional(),
    })
    .strict(),
);
/** Contract section 19: an approver is a principal pattern (`*` wildcards) or `group:<name>`; anything else is a typo, refused. */
const approverEntrySchema = z
  .string()
  .refine(
    (v) => APPROVER_PATTERN_REGEX.test(v) || GROUP_REFERENCE_REGEX.test(v),
    "a principal pattern (token:…, access:…, access-service:…, slack:…; * matches any run of characters) or group:<name>",
  );
const approvalPolicyFields = {
  // An empty list would leave the tool's calls undecidable by anyone; refused rather than guessed at.
  approvers: z.array(approverEntrySchema).min(1).max(1_000).optional(),
  approvals_required: z.number().int().min(1).max(MAX_APPROVALS_REQUIRED).optional(),
  self_approval: z.boolean().optional(),
};
/** A duration of contract section 23 (src/config/durations.ts), kept importable from here. */
export { durationSeconds };
/** Contract section 23: a limit's `per` is 30s to 30d. */
const MIN_LIMIT_SECONDS = 30;
const MAX_LIMIT_SECONDS = 30 * 86_400;
const mutationLimitSchema = z
  .object({
    max: z.number().int().min(1).max(10_000),
    per: z.string().refine((v) => {
      const seconds = durationSeconds(v);
      return seconds !== undefined && seconds >= MIN_LIMIT_SECONDS && seconds <= MAX_LIMIT_SECONDS;
    }, "a duration <n>s|m|h|d (n a positive integer) from 30s to 30d"),
    by: z.enum(["principal", "channel", "all"]),
  })
  .strict();
/** Contract section 24: `remind_before` and `escalate_after` are durations from 1s to 30d (and shorter than the approval's timeout). */
const MIN_NUDGE_SECONDS = 1;
const MAX_NUDGE_SECONDS = 30 * 86_400;
const nudgeDurationSchema = z.string().refine((v) => {
  const seconds = durationSeconds(v);
  return seconds !== undefined && seconds >= MIN_NUDGE_SECONDS && seconds <= MAX_NUDGE_SECONDS;
}, "a duration <n>s|m|h|d (n a positive integer) from 1s to 30d");
/** Contract section 24: reminders and escalation of a pending approval (and its call's MCP questions). */
const nudgePolicyFields = {
  remind_before: nudgeDurationSchema.optional(),
  escalate_after: nudgeDurationSchema.optional(),
  escalate_to: z.array(approverEntrySchema).min(1).max(1_000).optional(),
};
/** Fields the `"*"` entry may not carry (contract sections 19, 23, 24): everything else gives every tool's defaults. */
const NOT_DEFAULTS = ["level", "read_only"] as const;
export const toolPolicySchema = z
  .record(
    toolName,
    z
      .object({
        level: z.enum(["approve", "confirm"]).nullable().optional(),
        read_only: z.boolean().optional(),
        ...approvalPolicyFields,
        // Contract section 23: mutation limits; under "*" they count every tool's mutations together.
        limits: z.array(mutationLimitSchema).min(1).max(20).optional(),
        ...nudgePolicyFields,
      })
      .strict(),
  )
  .superRefine((entries, ctx) => {
    // The `"*"` key gives defaults and may carry only the fields of sections 19, 23 and 24.
    const defaults = Object.hasOwn(entries, POLICY_DEFAULTS_KEY) ? entries[POLICY_DEFAULTS_KEY] : undefined;
    for (const field of NOT_DEFAULTS) {
      if (defaults?.[field] !== undefined)
        ctx.addIssue({
          code: "custom",
          path: [POLICY_DEFAULTS_KEY, field],
          message: `"*" may carry only approvers, approvals_required, self_approval, limits, remind_before, escalate_after and escalate_to, not ${field}`,
        });
    }
  });
/** APPROVER_GROUPS: `{"<group>": [patterns]}`; groups do not nest, so a member may not be `group:…`. */
export const approverGroupsSchema = z.record(
  z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/, "a group name: letters, digits, - and _"),
  z
    .array(
      z.string().regex(APPROVER_PATTERN_REGEX, "a principal pattern (token:…, access:…, access-service:…, slack:…); groups do not nest"),
    )
    .min(1)
    .max(1_000),
);
export const mutationBudgetSchema = z.record(toolName, z.number().int().min(0));

/** "true"/"false" (wrangler vars are strings) or a JSON boolean. */
const boolVar = (fallback: boolean) =>
  z
    .union([z.string(), z.boolean()])
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return fallback;
      if (typeof v === "boolean") return v;
      const text = v.trim().toLowerCase();
      if (text === "true") return true;
      if (text === "false") return false;
      ctx.addIssue({ code: "custom", message: `expected true or false, got ${JSON.stringify(v)}` });
      return z.NEVER;
    });

/** Slack user ids (U…, W…): the people who may decide any run's approvals. */
/** SLACK_APPROVERS (contract section 19): `U…` for a user of the installation's team, or `<team>:<user>`. */
const slackApproversSchema = z
  .array(
    z
      .string()
      .regex(
        /^(?:[TE][A-Z0-9]{1,30}:)?[UW][A-Z0-9]{1,30}$/,
        "a Slack user id of the installation's team (U0123ABCD) or <team>:<user> (T0123ABCD:U0123ABCD)",
      ),
  )
  .max(1_000);

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === "" ? undefined : v));

/**
 * OTEL_EXPORTER_OTLP_HEADERS: `k=v,k2=v2` (the OpenTelemetry convention; values
 * may be percent-encoded). Hand-parsed: the format is one split per comma and '='.
 */
const otlpHeadersVar = optionalText.transform((v, ctx) => {
  const headers: Record<string, string> = {};
  if (v === undefined) return headers;
  for (const pair of v.split(",")) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("=");
    const name = at > 0 ? pair.slice(0, at).trim() : "";
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      // Never echo the value: it is a credential.
      ctx.addIssue({ code: "custom", message: "expected k=v,k2=v2 with header names as keys" });
      return z.NEVER;
    }
    let value = pair.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // Not percent-encoded after all: taken as written.
    }
    headers[name.toLowerCase()] = value;
  }
  return headers;
});

const base64url32 = z.string().regex(/^[A-Za-z0-9_-]{43}$/, "32 bytes, unpadded base64url");

/**
 * AUDIT_SIGNING_KEY (contract section 25): a secret Ed25519 private JWK,
 * `{"kty":"OKP","crv":"Ed25519","d","x"}`, as JSON text. Never echoed.
 */
const auditSigningKeyVar = optionalText
  .transform((v, ctx) => {
    if (v === undefined) return undefined;
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({ code: "custom", message: 'expected an Ed25519 private JWK as JSON: {"kty":"OKP","crv":"Ed25519","d":…,"x":…}' });
      return z.NEVER;
    }
  })
  .pipe(
    z
      .object(
        { kty: z.literal("OKP"), crv: z.literal("Ed25519"), d: base64url32, x: base64url32 },
        { error: 'expected an Ed25519 private JWK: {"kty":"OKP","crv":"Ed25519","d":…,"x":…}' },
      )
      .loose()
      .transform(({ kty, crv, d, x }) => ({ kty, crv, d, x }))
      .optional(),
  );

/**
 * ACCESS_TEAM_DOMAIN (contract section 18): https, or plain http only on
 * loopback with a port (a local JWKS server in tests); no path.
 */
const accessTeamDomainSchema = z
  .string()
  .transform((v) => v.replace(/\/+$/, ""))
  .refine((v) => {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      return false;
    }
    if (url.pathname !== "/" || url.search !== "" || url.hash !== "") return false;
    if (url.protocol === "https:") return true;
    return url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname) && url.port !== "";
  }, "https://<team>.cloudflareaccess.com (plain http only for 127.0.0.1, localhost or [::1] with a port)");

/** ACCESS_ROLES: `{"<email> | *@<domain> | access-service:<common_name> | *": [roles]}`; `*` grants at most viewer and requester. */
const accessRolesSchema = z
  .record(
    z.string().regex(/^(\*|\*@[^\s@]+|[^\s@*]+@[^\s@]+|access-service:\S+)$/, "an email, *@<domain>, access-service:<common_name> or *"),
    rolesSchema,
  )
  .superRefine((rules, ctx) => {
    const wide = rules["*"]?.filter((r) => r !== "viewer" && r !== "requester") ?? [];
    if (wide.length > 0)
      ctx.addIssue({ code: "custom", path: ["*"], message: `"*" may grant only viewer and requester, not ${wide.join(", ")}` });
  });

/**
 * SLACK_INSTALL_KEY (contract section 26): base64 of 32 bytes, or a JSON list of such (the
 * first encrypts, all decrypt). Always read as the list.
 */
const slackInstallKeySchema = z.string().transform((text, ctx): string[] => {
  const trimmed = text.trim();
  let keys: unknown = [trimmed];
  if (trimmed.startsWith("[")) {
    try {
      keys = JSON.parse(trimmed);
    } catch {
      keys = null;
    }
  }
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((k) => typeof k === "string" && isTokenKey(k))) {
    ctx.addIssue({ code: "custom", message: "base64 of 32 random bytes (e.g. `openssl rand -base64 32`), or a JSON list of such" });
    return z.NEVER;
  }
  return keys as string[];
});

export const hostConfigSchema = z.object({
  API_TOKEN: optionalText.pipe(
    z.string().min(MIN_API_TOKEN_CHARS, `at least ${MIN_API_TOKEN_CHARS} characters (e.g. \`openssl rand -base64 32\`)`).optional(),
  ),
  MODEL_PROVIDER: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? "scripted" : v))
    .pipe(z.enum(["scripted", "anthropic", "openai"])),
  MODEL_NAME: optionalText,
  MODEL_BASE_URL: optionalText.pipe(z.url().optional()),
  MODEL_API_KEY: optionalText,
  SYSTEM_PROMPT: optionalText.transform((v) => v ?? DEFAULT_SYSTEM_PROMPT),
  MCP_SERVERS: jsonVar(mcpServersSchema, {}),
  TOOL_POLICY: jsonVar(toolPolicySchema, {}),
  APPROVER_GROUPS: jsonVar(approverGroupsSchema, {}),
  MUTATION_BUDGET: jsonVar(mutationBudgetSchema, {}),
  MAX_TOOL_CALLS: intVar(DEFAULT_MAX_TOOL_CALLS),
  APPROVAL_TIMEOUT_MS: intVar(DEFAULT_APPROVAL_TIMEOUT_MS, 1),
  ADMISSION_TIMEOUT_MS: intVar(DEFAULT_ADMISSION_TIMEOUT_MS, 1),
  HEARTBEAT_INTERVAL_MS: intVar(DEFAULT_HEARTBEAT_INTERVAL_MS, 1),
  STREAM_MAX_SECONDS: intVar(DEFAULT_STREAM_MAX_SECONDS, 1),
  STORAGE_WAIT_MS: intVar(DEFAULT_STORAGE_WAIT_MS, 1),
  // Contract section 23: persons needed to release a halt, 1..5.
  HALT_RELEASE_APPROVALS: intVar(1, 1).pipe(z.number().max(5, "expected at most 5 persons")),
  STORAGE_LEASE_MS: intVar(DEFAULT_STORAGE_LEASE_MS, 1),
  MCP_CONNECT_TIMEOUT_MS: intVar(DEFAULT_MCP_CONNECT_TIMEOUT_MS, 1),
  MCP_CALL_TIMEOUT_MS: intVar(DEFAULT_MCP_CALL_TIMEOUT_MS, 1),
  MCP_MAX_RESPONSE_BYTES: intVar(DEFAULT_MCP_MAX_RESPONSE_BYTES, 1),
  MCP_MAX_INPUT_ROUNDS: intVar(DEFAULT_MCP_MAX_INPUT_ROUNDS, 1),
  MCP_TOOL_LIST_MAX_AGE_MS: intVar(DEFAULT_MCP_TOOL_LIST_MAX_AGE_MS),
  RUN_RETENTION_SECONDS: intVar(DEFAULT_RUN_RETENTION_SECONDS),
  // Contract section 22: the least level the engine's log lines are written at.
  LOG_LEVEL: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? "info" : v))
    .pipe(z.enum(["debug", "info", "warn", "error"])),
  RUN_MAX_EVENTS: intVar(DEFAULT_RUN_MAX_EVENTS, 2),
  // 0 is allowed: no line at all, a full pool refuses at once.
  STORAGE_POOL_MAX_WAITERS: intVar(DEFAULT_STORAGE_POOL_MAX_WAITERS),
  // The Slack app (contract section 14): on only when both the signing secret and the bot token are set.
  SLACK_SIGNING_SECRET: optionalText,
  SLACK_BOT_TOKEN: optionalText,
  SLACK_API_BASE_URL: optionalText.pipe(z.url().optional()).transform((v) => v ?? DEFAULT_SLACK_API_BASE_URL),
  SLACK_APPROVERS: jsonVar(slackApproversSchema, []),
  // Contract section 19: channels shared with other organisations, and users from them, are off unless allowed.
  SLACK_ALLOW_EXTERNAL_CHANNELS: boolVar(false),
  SLACK_ALLOW_EXTERNAL_USERS: boolVar(false),
  // Contract sections 13 and 19: teams whose users' verified emails make them access: persons; unset: the installation's team.
  SLACK_EMAIL_TRUSTED_TEAMS: jsonVar(
    z
      .array(z.string().regex(/^[TE][A-Z0-9]{1,30}$/, "a Slack team id such as T0123ABCD (or E0123ABCD on Grid)"))
      .max(1_000)
      .optional(),
    undefined,
  ),
  // The installation's team (T… workspace, or E… enterprise on Grid); unset: asked of auth.test for the bot token.
  SLACK_TEAM_ID: optionalText.pipe(
    z
      .string()
      .regex(/^[TE][A-Z0-9]{1,30}$/, "a Slack team id such as T0123ABCD (or the enterprise id E0123ABCD on Enterprise Grid)")
      .optional(),
  ),
  SLACK_BOT_USER_ID: optionalText.pipe(
    z
      .string()
      .regex(/^[UW][A-Z0-9]+$/, "a Slack user id such as U0123ABCD")
      .optional(),
  ),
  SLACK_DELIVERY_MAX_MS: intVar(DEFAULT_SLACK_DELIVERY_MAX_MS, 1),
  // Contract section 19: the Home tab is published to one user at most once per this long (tests set it short).
  SLACK_HOME_REPUBLISH_MS: intVar(DEFAULT_SLACK_HOME_REPUBLISH_MS, 1),
  // Contract section 13: the deployment's public origin, for console links from Slack (unset: the request's origin).
  PUBLIC_URL: optionalText.pipe(z.url().optional()).transform((v) => (v === undefined ? undefined : new URL(v).origin)),
  // The operator console (contract section 16): on only when its signing secret is set.
  CONSOLE_SESSION_SECRET: optionalText.pipe(
    z
      .string()
      .min(MIN_CONSOLE_SESSION_SECRET_CHARS, `at least ${MIN_CONSOLE_SESSION_SECRET_CHARS} characters (e.g. \`openssl rand -hex 32\`)`)
      .optional(),
  ),
  CONSOLE_SESSION_TTL_SECONDS: intVar(DEFAULT_CONSOLE_SESSION_TTL_SECONDS, 60),
  TRIGGER_RATE_PER_MINUTE: intVar(DEFAULT_TRIGGER_RATE_PER_MINUTE),
  // Cloudflare Access (contract section 18): on when both the team domain and the audience tag are set.
  ACCESS_TEAM_DOMAIN: optionalText.pipe(accessTeamDomainSchema.optional()),
  ACCESS_AUD: optionalText,
  ACCESS_ROLES: jsonVar(accessRolesSchema, {}),
  // The outbox's retry backoff: the first wait, doubling up to the cap (short in tests; the defaults suit Slack).
  SLACK_RETRY_BASE_MS: intVar(DEFAULT_SLACK_RETRY_BASE_MS, 1),
  SLACK_RETRY_MAX_INTERVAL_MS: intVar(DEFAULT_SLACK_RETRY_MAX_INTERVAL_MS, 1),
  // Retention by the Cron Trigger (contract section 22, src/operate/retention.ts).
  RECEIPT_RETENTION_DAYS: daysVar(DEFAULT_RECEIPT_RETENTION_DAYS),
  INDEX_RETENTION_DAYS: daysVar(DEFAULT_INDEX_RETENTION_DAYS),
  AUDIT_RETENTION_DAYS: daysVar(DEFAULT_AUDIT_RETENTION_DAYS),
  // Unset: mutation outcome rows are kept for ever (they are the audit record of section 8).
  MUTATION_RETENTION_DAYS: daysVar(undefined),
  // Traces (contract section 22): off unless the endpoint is set; the headers are a secret.
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalText.pipe(z.url().optional()),
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeadersVar,
  // Contract section 25: signs audit checkpoints (an Ed25519 private JWK); unset, the audit is unsigned.
  AUDIT_SIGNING_KEY: auditSigningKeyVar,
  // Contract section 26: the Slack app installed into many workspaces (instead of SLACK_BOT_TOKEN's one).
  SLACK_CLIENT_ID: optionalText,
  SLACK_CLIENT_SECRET: optionalText,
  SLACK_INSTALL_KEY: optionalText.pipe(slackInstallKeySchema.optional()),
  SLACK_ALLOWED_TEAMS: jsonVar(
    z
      .array(z.string().regex(/^[TE][A-Z0-9]{1,30}$/, "a Slack team id such as T0123ABCD (or an enterprise id E0123ABCD)"))
      .min(1, "at least one team or enterprise id")
      .max(1_000)
      .optional(),
    undefined,
  ),
  SLACK_OAUTH_BASE_URL: optionalText
    .pipe(z.url().optional())
    .transform((v) => (v === undefined ? DEFAULT_SLACK_OAUTH_BASE_URL : v.endsWith("/") ? v : `${v}/`)),
  // Contract section 21: encrypts MCP OAuth tokens at rest; OAuth is off until it is set.
  MCP_TOKEN_KEY: optionalText.pipe(z.string().refine(isTokenKey, "base64 of 32 random bytes (e.g. `openssl rand -base64 32`)").optional()),
  // Contract section 26: signed notifications (a secret: the endpoints' signing secrets are in it); none when unset.
  WEBHOOKS: jsonVar(webhooksSchema, []),
  WEBHOOK_DELIVERY_MAX_MS: intVar(DEFAULT_WEBHOOK_DELIVERY_MAX_MS, 1),
  // The webhook outboxes' retry backoff: the first wait, doubling up to the cap (short in tests).
  WEBHOOK_RETRY_BASE_MS: intVar(DEFAULT_WEBHOOK_RETRY_BASE_MS, 1),
  WEBHOOK_RETRY_MAX_INTERVAL_MS: intVar(DEFAULT_WEBHOOK_RETRY_MAX_INTERVAL_MS, 1),
});

export type HostConfig = z.output<typeof hostConfigSchema>;

export type ConfigResult =
  | { state: "ready"; config: HostConfig }
  | { state: "not_configured"; config: HostConfig; message: string }
  | { state: "bad_config"; message: string; details: { path: string; message: string }[] };

const cache = new WeakMap<object, ConfigResult>();

/** Parses the host config from a Worker or Durable Object env; cached per env object. */
export function loadConfig(env: object): ConfigResult {
  const cached = cache.get(env);
  if (cached) return cached;
  const result = parseConfig(env as Record<string, unknown>);
  cache.set(env, result);
  return result;
}

export function parseConfig(env: Record<string, unknown>): ConfigResult {
  const parsed = hostConfigSchema.safeParse(env);
  if (!parsed.success) {
    return {
      state: "bad_config",
      message: "The host configuration is invalid; fix the named wrangler vars or secrets and redeploy.",
      details: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
    };
  }
  const config = parsed.data;
  setLogLevel(config.LOG_LEVEL);
  // The deployment's own secrets are redacted by exact value wherever they might be echoed (contract section 18).
  for (const secret of [
    config.API_TOKEN,
    config.MODEL_API_KEY,
    config.SLACK_SIGNING_SECRET,
    config.SLACK_BOT_TOKEN,
    config.CONSOLE_SESSION_SECRET,
    config.MCP_TOKEN_KEY,
    config.AUDIT_SIGNING_KEY?.d,
    config.SLACK_CLIENT_SECRET,
    ...(config.SLACK_INSTALL_KEY ?? []),
    ...config.WEBHOOKS.flatMap((endpoint) => endpoint.secrets),
  ]) {
    registerExactSecret(secret);
  }
  if ((config.ACCESS_TEAM_DOMAIN === undefined) !== (config.ACCESS_AUD === undefined)) {
    const missing = config.ACCESS_AUD === undefined ? "ACCESS_AUD" : "ACCESS_TEAM_DOMAIN";
    return {
      state: "bad_config",
      message: "The host configuration is invalid; fix the named wrangler vars or secrets and redeploy.",
      details: [{ path: missing, message: "Cloudflare Access needs both ACCESS_TEAM_DOMAIN and ACCESS_AUD" }],
    };
  }
  // Contract section 21: OAuth fails closed without its key and the callback's origin.
  const oauthGaps = oauthSettingGaps(config);
  if (oauthGaps.length > 0) {
    return {
      state: "bad_config",
      message: "The host configuration is invalid; fix the named wrangler vars or secrets and redeploy.",
      details: oauthGaps,
    };
  }
  // Contract section 26: one Slack mode or the other, each whole.
  const slackGaps = slackModeGaps(config);
  if (slackGaps.length > 0) {
    return {
      state: "bad_config",
      message: "The host configuration is invalid; fix the named wrangler vars or secrets and redeploy.",
      details: slackGaps,
    };
  }
  // Contract section 19: a `group:` an approvers list names must exist, else the list would silently name nobody.
  const unknownGroups = unknownGroupReferences(config);
  if (unknownGroups.length > 0) {
    return {
      state: "bad_config",
      message: "The host configuration is invalid; fix the named wrangler vars or secrets and redeploy.",
      details: unknownGroups,
    };
  }
  // Contract section 24: a reminder or an escalation must come before the approval expires.
  const lateNudges = nudgesNotBeforeTimeout(config.TOOL_POLICY, config.APPROVAL_TIMEOUT_MS);
  if (lateNudges.length > 0) {
    return {
      state: "bad_config",
      message: "The host configuration is invalid; fix the named wrangler vars or secrets and redeploy.",
      details: lateNudges,
    };
  }
  // Contract section 23: rows must outlive every limit's window, or the limit would count too few.
  const shortRetention = limitsOutlivingRetention(config);
  if (shortRetention.length > 0) {
    return {
      state: "bad_config",
      message: "The host configuration is invalid; fix the named wrangler vars or secrets and redeploy.",
      details: shortRetention,
    };
  }
  // Contract section 18: not_configured only when neither API_TOKEN nor Access is configured.
  if (config.API_TOKEN === undefined && config.ACCESS_TEAM_DOMAIN === undefined) {
    return {
      state: "not_configured",
      config,
      message:
        "Neither API_TOKEN nor Cloudflare Access is set. Set API_TOKEN with `wrangler secret put API_TOKEN` (production) or in .dev.vars (local).",
    };
  }
  // Contract section 18: the exact API_TOKEN is redacted wherever text leaves the engine.
  return { state: "ready", config };
}

/**
 * Contract section 24: every `remind_before` or `escalate_after` of a TOOL_POLICY (the settings' or a
 * policy version's `tools`) not shorter than the approval's timeout, named by its entry (`path` under
 * `prefix`). The settings answer bad_config with these details, a policy version 400.
 * @public (the policy versions' validation calls it too)
 */
export function nudgesNotBeforeTimeout(
  toolPolicy: HostConfig["TOOL_POLICY"],
  approvalTimeoutMs: number,
  prefix = "TOOL_POLICY",
): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  for (const [tool, entry] of Object.entries(toolPolicy)) {
    for (const field of ["remind_before", "escalate_after"] as const) {
      const text = entry[field];
      if (text !== undefined && (durationSeconds(text) ?? 0) * 1000 >= approvalTimeoutMs)
        out.push({
          path: `${prefix}.${tool}.${field}`,
          message: `${text} is not shorter than the approval's timeout (APPROVAL_TIMEOUT_MS ${approvalTimeoutMs} ms)`,
        });
    }
  }
  return out;
}

/** Every TOOL_POLICY limit whose `per` is longer than MUTATION_RETENTION_DAYS keeps rows (contract section 23). */
export function limitsOutlivingRetention(
  config: Pick<HostConfig, "MUTATION_RETENTION_DAYS" | "TOOL_POLICY">,
): { path: string; message: string }[] {
  const days = config.MUTATION_RETENTION_DAYS;
  if (days === undefined) return [];
  const out: { path: string; message: string }[] = [];
  for (const [tool, entry] of Object.entries(config.TOOL_POLICY)) {
    (entry.limits ?? []).forEach((limit, i) => {
      if ((durationSeconds(limit.per) ?? 0) > days * 86_400)
        out.push({
          path: `TOOL_POLICY.${tool}.limits.${i}.per`,
          message: `${limit.per} is longer than MUTATION_RETENTION_DAYS (${days} days): rows would be deleted while the limit still counts them`,
        });
    });
  }
  return out;
}

/** What a server with `oauth` needs and the host lacks: MCP_TOKEN_KEY (the tokens' key) and PUBLIC_URL (the callback's origin). */
function oauthSettingGaps(config: HostConfig): { path: string; message: string }[] {
  const servers = Object.entries(config.MCP_SERVERS).filter(([, settings]) => settings.oauth !== undefined);
  if (servers.length === 0) return [];
  const first = `MCP_SERVERS.${servers[0]![0]}.oauth`;
  const out: { path: string; message: string }[] = [];
  if (config.MCP_TOKEN_KEY === undefined)
    out.push({ path: "MCP_TOKEN_KEY", message: `${first} needs MCP_TOKEN_KEY to keep its tokens encrypted` });
  if (config.PUBLIC_URL === undefined) out.push({ path: "PUBLIC_URL", message: `${first} needs PUBLIC_URL for its /oauth/callback` });
  return out;
}

/** The settings of Slack's installation mode (contract section 26); any one of them set means that mode. */
const INSTALLATION_SETTINGS = ["SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET", "SLACK_INSTALL_KEY", "SLACK_ALLOWED_TEAMS"] as const;
/** What the single-workspace mode sets and installation mode must not (the installation's own come from oauth.v2.access). */
const SINGLE_WORKSPACE_SETTINGS = ["SLACK_BOT_TOKEN", "SLACK_TEAM_ID", "SLACK_BOT_USER_ID"] as const;

/** True when the Slack app runs with installations (contract section 26) rather than one SLACK_BOT_TOKEN. */
export function isInstallationMode(config: HostConfig): boolean {
  return INSTALLATION_SETTINGS.some((name) => config[name] !== undefined);
}

/**
 * Contract section 26: installation mode needs all of its settings (with SLACK_SIGNING_SECRET and
 * PUBLIC_URL) and none of the single workspace's (SLACK_BOT_TOKEN, SLACK_TEAM_ID, SLACK_BOT_USER_ID,
 * a bare `U…` in SLACK_APPROVERS). The single-workspace mode is checked as before (off until both set).
 */
function slackModeGaps(config: HostConfig): { path: string; message: string }[] {
  if (!isInstallationMode(config)) return [];
  const out: { path: string; message: string }[] = [];
  for (const name of [...INSTALLATION_SETTINGS, "SLACK_SIGNING_SECRET", "PUBLIC_URL"] as const) {
    if (config[name] === undefined) out.push({ path: name, message: `Slack installations (SLACK_CLIENT_ID, ...) need ${name} too` });
  }
  for (const name of SINGLE_WORKSPACE_SETTINGS) {
    if (config[name] !== undefined)
      out.push({ path: name, message: `${name} is the single-workspace mode's; with installations each installation has its own` });
  }
  config.SLACK_APPROVERS.forEach((entry, i) => {
    if (!entry.includes(":"))
      out.push({
        path: `SLACK_APPROVERS.${i}`,
        message: "with installations a Slack approver is <team>:<user> (which installation's user)",
      });
  });
  return out;
}

/** Every `group:<name>` in TOOL_POLICY approvers or escalate_to that APPROVER_GROUPS does not define. */
export function unknownGroupReferences(config: Pick<HostConfig, "TOOL_POLICY" | "APPROVER_GROUPS">): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  for (const [tool, entry] of Object.entries(config.TOOL_POLICY)) {
    for (const field of ["approvers", "escalate_to"] as const) {
      (entry[field] ?? []).forEach((approver, i) => {
        const group = GROUP_REFERENCE_REGEX.exec(approver)?.[1];
        if (group !== undefined && !Object.hasOwn(config.APPROVER_GROUPS, group)) {
          out.push({ path: `TOOL_POLICY.${tool}.${field}.${i}`, message: `${approver} is not defined in APPROVER_GROUPS` });
        }
      });
    }
  }
  return out;
}
