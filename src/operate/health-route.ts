// GET /api/health (contract section 22, viewer; exempt from bad_config): the
// real probes behind src/operate/health.ts. Registered ahead of the router's
// API guard, so it checks the credential itself: with a bad configuration
// against the raw settings (any valid viewer credential but Access), and the
// answer says `config: "bad"` instead of refusing. The route table
// (src/http/route-table.ts) hands it the route's role and the Slack app's
// "stop posting" record, so this floor imports neither the table nor Slack.
import { loadConfig, DEFAULT_MCP_CONNECT_TIMEOUT_MS, DEFAULT_STORAGE_WAIT_MS, isInstallationMode } from "../config/config";
import type { Env } from "../config/env";
import { authenticate, rawAuthSettings } from "../auth/authenticate";
import type { Principal } from "../auth/principal";
import { countAuthFailure } from "../auth/rate-limits";
import { authorize, lacksRole, type RouteRule } from "../auth/authorize";
import { apiError, jsonResponse } from "../base/api-error";
import { McpTransportError } from "../execution/mcp-errors";
import { listMcpTools } from "../execution/mcp-tool-list";
import type { McpServerConfig } from "../execution/mcp-transport";
import { oauthAuthorization } from "../mcp-oauth/server-access";
import { globalStoragePool } from "../outcomes/storage-pool-rpc";
import { checkHealth, type Component, McpProbeCache, type McpState, within } from "./health";
import { auditHealth } from "../audit/audit-health";
import { webhooksHealth } from "../webhooks/webhook-health";
import { isBadPolicy, readActivePolicy } from "../outcomes/policy-store";

/** One cache per isolate: the contract's 30 s is per server, not per request. */
const mcpProbes = new McpProbeCache();

/** What the route table gives the route: its rule, and whether Slack said to stop posting with a bot token. */
export interface HealthRoute {
  rule: RouteRule;
  isPostingStopped: (db: D1Database, botToken: string) => Promise<boolean>;
}

/**
 * Without the table's (the probes' own tests): section 22's viewer, and a Slack app that was
 * never told to stop. The Worker always passes the table's entry.
 */
const UNROUTED: HealthRoute = { rule: { role: "viewer" }, isPostingStopped: async () => false };

export async function handleHealth(
  request: Request,
  env: Env,
  ctx: Pick<ExecutionContext, "waitUntil">,
  cache: McpProbeCache = mcpProbes,
  route: HealthRoute = UNROUTED,
): Promise<Response> {
  const loaded = loadConfig(env);
  if (loaded.state === "not_configured") throw apiError(503, { error: "not_configured", message: loaded.message });
  await admitViewer(request, env, ctx, loaded, route.rule);
  const config = loaded.state === "ready" ? loaded.config : null;
  const waitMs = config?.STORAGE_WAIT_MS ?? DEFAULT_STORAGE_WAIT_MS;
  const connectMs = config?.MCP_CONNECT_TIMEOUT_MS ?? DEFAULT_MCP_CONNECT_TIMEOUT_MS;
  const ok = (): Component => "ok";
  const health = await checkHealth({
    configOk: config !== null,
    d1: () => within(waitMs, env.DB.prepare(`SELECT 1 AS ok`).first().then(ok), "degraded"),
    // The pool refuses to start on a bad configuration: nothing to ask.
    storagePool: async () => (config ? within(waitMs, globalStoragePool(env.STORAGE_POOL).stats().then(ok), "degraded") : "degraded"),
    slack: async () => {
      const botToken = config?.SLACK_BOT_TOKEN;
      if (!config) return "degraded";
      // Contract section 26: with installations, degraded while any installation is refresh_failed.
      if (isInstallationMode(config)) {
        const failed = env.DB.prepare(`SELECT 1 AS failed FROM slack_installations WHERE status = 'refresh_failed' LIMIT 1`).first();
        return within(
          waitMs,
          failed.then((row): Component => (row === null ? "ok" : "degraded")),
          "degraded",
        );
      }
      if (config.SLACK_SIGNING_SECRET === undefined || botToken === undefined) return "off";
      // Uninstalled or revoked: every post is stopped until the app is installed again.
      return within(
        waitMs,
        route.isPostingStopped(env.DB, botToken).then((stopped): Component => (stopped ? "degraded" : "ok")),
        "degraded",
      );
    },
    audit: () =>
      within(
        waitMs,
        auditHealth(env.DB, { signed: config?.AUDIT_SIGNING_KEY !== undefined, bucket: env.AUDIT_BUCKET !== undefined, now: Date.now() }),
        "degraded",
      ),
    // Contract section 26: off without WEBHOOKS.
    ...(config && config.WEBHOOKS.length > 0
      ? { webhooks: () => within(waitMs, webhooksHealth(env.DB, config.WEBHOOKS, Date.now()), "degraded" as Component) }
      : {}),
    mcp: Object.fromEntries(
      Object.entries(config?.MCP_SERVERS ?? {}).map(([name, server]) => [
        name,
        () =>
          cache.get(name, probeKey(server), Date.now(), async () => {
            // An OAuth server is probed with its token (contract section 21); without a usable one it needs authorization.
            const access = config ? await oauthAuthorization(env.DB, config).access(name, server) : { kind: "ready" as const, server };
            if (access.kind === "authorization_required") return "authorization_required";
            return probeMcp(access.server, connectMs, config?.MCP_MAX_RESPONSE_BYTES);
          }),
      ]),
    ),
    // Contract section 23: active halts only inform; read within STORAGE_WAIT_MS (an index seek on status).
    haltsActive: async () => {
      const counted = env.DB.prepare(`SELECT COUNT(*) AS n FROM halts WHERE status = 'active'`)
        .first<{ n: number }>()
        .then((row) => Number(row?.n ?? 0));
      const n = await within<number | null>(waitMs, counted, null);
      if (n === null) throw new Error("halts unread");
      return n;
    },
    // Contract section 24: the active version, its hash, and whether it still validates.
    ...(config === null
      ? {}
      : {
          policy: async () => {
            const read = await within(waitMs, readActivePolicy(env.DB, config), null);
            if (read === null) throw new Error("policy unread");
            return { version: read.version, hash: read.hash, state: isBadPolicy(read) ? ("bad" as const) : ("ok" as const) };
          },
        }),
  });
  return jsonResponse(health.status === "ok" ? 200 : 503, health);
}

/** A server's cache key: its URL and which headers it sends (never their values). */
function probeKey(server: { url: string; headers?: Record<string, string> }): string {
  return JSON.stringify([server.url, Object.keys(server.headers ?? {}).sort()]);
}

/** tools/list over the engine's own transport, the whole probe within MCP_CONNECT_TIMEOUT_MS. */
function probeMcp(server: McpServerConfig, connectMs: number, maxBytes = 1_048_576): Promise<McpState> {
  const listed = listMcpTools(server, { connectTimeoutMs: connectMs, callTimeoutMs: connectMs, maxResponseBytes: maxBytes })
    .then((): McpState => "ok")
    .catch((err: unknown): McpState => {
      const status = err instanceof McpTransportError ? err.httpStatus : undefined;
      return status === 401 || status === 403 ? "authorization_required" : "unreachable";
    });
  return within(connectMs, listed, "unreachable");
}

/**
 * The router's guard, for the one route ahead of it: the principal is proven as on every
 * route (section 18) and needs the route table's role. With a bad configuration there is no
 * parsed config, so the credential is proven against the raw settings (rawAuthSettings:
 * API_TOKEN, named tokens, console sessions; not Access): a valid viewer still sees which
 * component is down. As on every /api route, a failed authentication counts against the
 * client address (429 past the limit) and a 403 names its principal on the request, so the
 * router's refusal audit sees it.
 */
async function admitViewer(
  request: Request,
  env: Env,
  ctx: Pick<ExecutionContext, "waitUntil">,
  loaded: ReturnType<typeof loadConfig>,
  rule: RouteRule,
): Promise<void> {
  const settings = loaded.state === "ready" ? loaded.config : rawAuthSettings(env);
  const auth = await authenticate(request.headers, { db: env.DB, config: settings, waitUntil: (p) => ctx.waitUntil(p) });
  if (auth.kind !== "authenticated") {
    throw (
      (await countAuthFailure(env, request.headers)) ??
      apiError(401, { error: "unauthorized", message: "Send Authorization: Bearer <token> (API_TOKEN or a named token)." })
    );
  }
  const verdict = authorize(auth.principal.roles, rule);
  if (verdict.kind !== "allowed") {
    (request as Request & { principal?: Principal }).principal = auth.principal;
    throw apiError(403, { error: "forbidden", message: lacksRole(auth.principal.id, verdict.role) });
  }
}
