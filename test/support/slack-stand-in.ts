// A local stand-in for Slack's Web API: a Node HTTP server on loopback that
// answers chat.postMessage, chat.update, chat.postEphemeral, views.open, views.publish,
// conversations.info, conversations.open (a direct message's channel is `D<user>`), reactions.add, auth.test (naming
// its team) and users.info in Slack's wire format (form-encoded
// requests, `{"ok":...}` JSON answers), records every call, and can be told
// to answer 429 with Retry-After, 500, or hang, for the next N calls. For Slack
// installations (contract section 26) it also plays Slack's OAuth: GET
// /oauth/v2/authorize (records the PKCE challenge, redirects back with a code
// for the grant queued by queueGrant), oauth.v2.access (the code with its
// code_verifier, or a refresh token, spent once: token rotation), auth.revoke
// and apps.uninstall (the token stops working); each call records the bearer
// token it came with. Used by
// the tests (in-process, or over HTTP at /_control from inside workerd) and
// by the local demo, whose posts are drawn at GET / (roughly as Slack draws
// them, test/support/block-kit-html.ts) and listed as JSON at /_calls.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash } from "node:crypto";
import { standInPage } from "./block-kit-html";

export interface RecordedCall {
  seq: number;
  method: string;
  /** Form fields, with JSON-valued ones (blocks, view) parsed. */
  params: Record<string, unknown>;
  at: number;
  /** What the stand-in answered: "ok", an error code, "429", "500" or "hang". */
  answered: string;
  /** The bearer token the call came with ("" without one). */
  token: string;
}

/** What oauth.v2.access answers for the next authorize (contract section 26): one installation's grant. */
export interface InstallGrant {
  team_id?: string;
  enterprise_id?: string;
  is_enterprise_install?: boolean;
  /** The Slack user who clicked Allow. */
  user_id: string;
  bot_user_id: string;
  /** With token rotation: the bot token lives this long (seconds) and comes with a refresh token. */
  expires_in?: number;
  /** Error Slack redirects back with instead of a code (e.g. access_denied). */
  error?: string;
}

interface ChannelShareFlags {
  is_ext_shared?: boolean;
  is_pending_ext_shared?: boolean;
  is_shared?: boolean;
  is_org_shared?: boolean;
}

const EXTERNAL_BY_DEFAULT: ChannelShareFlags = { is_ext_shared: true, is_shared: true };

type Fault = { kind: "429"; retry_after_s: number } | { kind: "500" } | { kind: "hang" } | { kind: "error"; error: string };

export interface SlackStandIn {
  /** Base URL to use as SLACK_API_BASE_URL (ends with /api/). */
  apiBaseUrl: string;
  url: string;
  calls(method?: string): RecordedCall[];
  /** The next `count` calls (any method) get `fault`. */
  failNext(count: number, fault: Fault): void;
  /** Calls posting to `channel` are refused with `error` (e.g. channel_not_found). */
  refuseChannel(channel: string, error: string): void;
  /**
   * conversations.info reports `channel` as shared with another organisation: by default
   * `is_ext_shared` and `is_shared`, or exactly the flags given.
   */
  markExternal(channel: string, flags?: ChannelShareFlags): void;
  /** users.info reports `user` with this email, confirmed or not (other users have none). */
  setUserEmail(user: string, email: string, confirmed?: boolean): void;
  /** The next GET /oauth/v2/authorize grants this (in order of queueing). */
  queueGrant(grant: InstallGrant): void;
  /** Every bot token issued (by a code or a refresh), in order, with its installation's team or enterprise. */
  issuedTokens(): { token: string; installation: string; refresh_token?: string }[];
  /** Refresh tokens presented to oauth.v2.access, in order, with what was answered. */
  refreshAttempts(): { refresh_token: string; answered: string }[];
  /** Refreshed tokens live this long (seconds); default 43200. */
  setRefreshedExpiresIn(seconds: number): void;
  reset(): void;
  /** Resolves when `predicate` holds for the recorded calls, or rejects after `timeoutMs`. */
  waitFor(predicate: (calls: RecordedCall[]) => boolean, timeoutMs?: number): Promise<RecordedCall[]>;
  stop(): Promise<void>;
}

const JSON_FIELDS = new Set(["blocks", "view", "attachments", "metadata"]);
const WAIT_POLL_MS = 20;

export interface SlackStandInOptions {
  botToken?: string;
  port?: number;
  quiet?: boolean;
  /** Called as each Web API call is recorded, before it is answered (the benchmark times arrivals here). */
  onCall?: (call: RecordedCall) => void;
  /** The team auth.test names for the bot token (default T0001, the signing helpers' team). */
  teamId?: string;
  /** On Enterprise Grid, the enterprise auth.test names too. */
  enterpriseId?: string;
}

export async function startSlackStandIn(options: SlackStandInOptions = {}): Promise<SlackStandIn> {
  const calls: RecordedCall[] = [];
  const faults: Fault[] = [];
  const refused = new Map<string, string>();
  const external = new Map<string, ChannelShareFlags>();
  const emails = new Map<string, { email: string; confirmed: boolean }>();
  const hung = new Set<ServerResponse>();
  const grants: InstallGrant[] = [];
  /** Codes issued by the authorize page: their grant, PKCE challenge and redirect URI; spent once. */
  const codes = new Map<string, { grant: InstallGrant; challenge: string; redirect_uri: string; spent: boolean }>();
  const issued: { token: string; installation: string; refresh_token?: string }[] = [];
  const revoked = new Set<string>();
  /** Refresh token -> its installation's grant, until spent. */
  const refreshTokens = new Map<string, { grant: InstallGrant; spent: boolean }>();
  const refreshAttempts: { refresh_token: string; answered: string }[] = [];
  let refreshedExpiresIn = 43_200;
  let tokenCounter = 0;
  let seq = 0;
  let tsCounter = 0;

  const nextTs = () => `${Math.floor(Date.now() / 1000)}.${String(++tsCounter).padStart(6, "0")}`;

  function issueTokens(grant: InstallGrant, expiresIn: number | undefined): Record<string, unknown> {
    const n = ++tokenCounter;
    const installation = (grant.is_enterprise_install ? grant.enterprise_id : grant.team_id) ?? "";
    const token = `xoxb-stand-in-${installation}-${n}`;
    const refresh = expiresIn === undefined ? undefined : `xoxe-1-stand-in-${installation}-${n}`;
    issued.push({ token, installation, ...(refresh === undefined ? {} : { refresh_token: refresh }) });
    if (refresh !== undefined) refreshTokens.set(refresh, { grant, spent: false });
    return {
      access_token: token,
      ...(refresh === undefined ? {} : { refresh_token: refresh, expires_in: expiresIn }),
    };
  }

  function oauthAccess(params: Record<string, unknown>): Record<string, unknown> {
    if (params.grant_type === "refresh_token") {
      const presented = String(params.refresh_token ?? "");
      const known = refreshTokens.get(presented);
      if (!known || known.spent) {
        refreshAttempts.push({ refresh_token: presented, answered: "invalid_refresh_token" });
        return { ok: false, error: "invalid_refresh_token" };
      }
      known.spent = true;
      refreshAttempts.push({ refresh_token: presented, answered: "ok" });
      return { ok: true, token_type: "bot", ...issueTokens(known.grant, refreshedExpiresIn) };
    }
    const code = codes.get(String(params.code ?? ""));
    if (!code || code.spent) return { ok: false, error: "invalid_code" };
    if (params.redirect_uri !== code.redirect_uri) return { ok: false, error: "bad_redirect_uri" };
    const verifier = String(params.code_verifier ?? "");
    const challenge = createHash("sha256").update(verifier).digest("base64url");
    if (challenge !== code.challenge) return { ok: false, error: "invalid_code_verifier" };
    code.spent = true;
    const g = code.grant;
    return {
      ok: true,
      app_id: "A0STANDIN",
      token_type: "bot",
      scope: "app_mentions:read,chat:write",
      bot_user_id: g.bot_user_id,
      authed_user: { id: g.user_id },
      team: g.is_enterprise_install ? null : { id: g.team_id, name: "Stand-in" },
      enterprise: g.enterprise_id ? { id: g.enterprise_id, name: "Stand-in Grid" } : null,
      is_enterprise_install: g.is_enterprise_install ?? false,
      ...issueTokens(g, g.expires_in),
    };
  }

  function answer(method: string, params: Record<string, unknown>, token: string): Record<string, unknown> {
    if (method === "oauth.v2.access") return oauthAccess(params);
    if (token !== "" && revoked.has(token)) return { ok: false, error: "token_revoked" };
    if (method === "auth.revoke" || method === "apps.uninstall") {
      revoked.add(typeof params.token === "string" ? params.token : token);
      return method === "auth.revoke" ? { ok: true, revoked: true } : { ok: true };
    }
    const channel = typeof params.channel === "string" ? params.channel : undefined;
    if (channel && refused.has(channel)) return { ok: false, error: refused.get(channel) };
    switch (method) {
      case "chat.postMessage":
        return { ok: true, channel, ts: nextTs(), message: { text: params.text, blocks: params.blocks } };
      case "chat.update":
        return { ok: true, channel, ts: params.ts, text: params.text };
      case "chat.postEphemeral":
        return { ok: true, message_ts: nextTs() };
      case "views.open":
        return { ok: true, view: { id: `V${String(++tsCounter).padStart(8, "0")}`, ...(params.view as object) } };
      case "views.publish":
        return { ok: true, view: { id: `V${String(++tsCounter).padStart(8, "0")}`, ...(params.view as object) } };
      case "conversations.info": {
        const flags = (channel !== undefined ? external.get(channel) : undefined) ?? {};
        return {
          ok: true,
          channel: {
            id: channel,
            is_ext_shared: flags.is_ext_shared ?? false,
            is_pending_ext_shared: flags.is_pending_ext_shared ?? false,
            is_shared: flags.is_shared ?? false,
            is_org_shared: flags.is_org_shared ?? false,
          },
        };
      }
      case "auth.test":
        return {
          ok: true,
          url: "https://stand-in.slack.com/",
          team: "Stand-in",
          user: "bot",
          team_id: options.teamId ?? "T0001",
          user_id: "UBOT0001",
          bot_id: "B0001",
          ...(options.enterpriseId !== undefined ? { enterprise_id: options.enterpriseId, is_enterprise_install: false } : {}),
        };
      case "reactions.add":
        return { ok: true };
      // Contract section 24: the app's direct message with one user (`D` and the user id, so a test can tell whose it is).
      case "conversations.open": {
        const users = String(params.users ?? "");
        if (!/^[UW][A-Z0-9]+$/.test(users)) return { ok: false, error: "user_not_found" };
        return { ok: true, channel: { id: `D${users}` } };
      }
      case "users.info": {
        const user = String(params.user ?? "");
        const known = emails.get(user);
        return {
          ok: true,
          user: { id: user, is_email_confirmed: known?.confirmed ?? false, profile: known ? { email: known.email } : {} },
        };
      }
      default:
        return { ok: false, error: "unknown_method" };
    }
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }

  function parseForm(body: string, contentType: string | undefined): Record<string, unknown> {
    if (contentType?.includes("application/json")) return JSON.parse(body || "{}") as Record<string, unknown>;
    const params: Record<string, unknown> = {};
    for (const [key, value] of new URLSearchParams(body)) {
      if (JSON_FIELDS.has(key)) {
        try {
          params[key] = JSON.parse(value);
          continue;
        } catch {
          // keep the raw text
        }
      }
      params[key] = value;
    }
    return params;
  }

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
  }

  const server: Server = createServer(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://stand-in").pathname;
    const body = await readBody(req);
    if (path === "/" && req.method === "GET") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(standInPage(calls));
      return;
    }
    if (path === "/_calls") return send(res, 200, calls);
    if (path === "/_refresh_attempts") return send(res, 200, refreshAttempts);
    if (path === "/oauth/v2/authorize" && req.method === "GET") {
      // Slack's authorize page, agreed at once: back to redirect_uri with a code for the next queued grant.
      const query = new URL(req.url ?? "/", "http://stand-in").searchParams;
      const grant = grants.shift();
      const redirect = new URL(query.get("redirect_uri") ?? "http://invalid/");
      redirect.searchParams.set("state", query.get("state") ?? "");
      if (!grant || grant.error) redirect.searchParams.set("error", grant?.error ?? "access_denied");
      else {
        const code = `code-${++tokenCounter}`;
        codes.set(code, {
          grant,
          challenge: query.get("code_challenge_method") === "S256" ? (query.get("code_challenge") ?? "") : "",
          redirect_uri: query.get("redirect_uri") ?? "",
          spent: false,
        });
        redirect.searchParams.set("code", code);
      }
      res.writeHead(302, { location: redirect.toString() });
      res.end();
      return;
    }
    if (path === "/_control" && req.method === "POST") {
      const command = JSON.parse(body || "{}") as {
        reset?: boolean;
        fail?: { count: number; fault: Fault };
        refuse?: { channel: string; error: string };
        external?: string;
        external_flags?: ChannelShareFlags;
        email?: { user: string; email: string; confirmed?: boolean };
        /** A refresh token the stand-in honours once (a runtime test's installation, made without the browser flow). */
        seed_refresh?: { refresh_token: string; team_id: string };
      };
      if (command.seed_refresh)
        refreshTokens.set(command.seed_refresh.refresh_token, {
          grant: { team_id: command.seed_refresh.team_id, user_id: "U0SEED", bot_user_id: "UBOTSEED" },
          spent: false,
        });
      if (command.reset) control.reset();
      if (command.fail) control.failNext(command.fail.count, command.fail.fault);
      if (command.refuse) control.refuseChannel(command.refuse.channel, command.refuse.error);
      if (command.external) control.markExternal(command.external, command.external_flags);
      if (command.email) control.setUserEmail(command.email.user, command.email.email, command.email.confirmed);
      return send(res, 200, { ok: true });
    }
    if (!path.startsWith("/api/")) return send(res, 404, { ok: false, error: "not_found" });
    const method = path.slice("/api/".length);
    const params = parseForm(body, req.headers["content-type"]);
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    const record: RecordedCall = { seq: ++seq, method, params, at: Date.now(), answered: "ok", token: bearer };
    calls.push(record);
    options.onCall?.(record);
    const fault = faults.shift();
    if (fault?.kind === "hang") {
      record.answered = "hang";
      hung.add(res);
      res.on("close", () => hung.delete(res));
      return;
    }
    if (fault?.kind === "429") {
      record.answered = "429";
      return send(res, 429, { ok: false, error: "ratelimited" }, { "retry-after": String(fault.retry_after_s) });
    }
    if (fault?.kind === "500") {
      record.answered = "500";
      return send(res, 500, "internal error");
    }
    if (fault?.kind === "error") {
      record.answered = fault.error;
      return send(res, 200, { ok: false, error: fault.error });
    }
    if (options.botToken !== undefined && method !== "oauth.v2.access" && req.headers.authorization !== `Bearer ${options.botToken}`) {
      record.answered = "invalid_auth";
      return send(res, 200, { ok: false, error: "invalid_auth" });
    }
    const result = answer(method, params, bearer);
    record.answered = result.ok ? "ok" : String(result.error);
    if (!options.quiet) console.log(`[slack stand-in] ${method} ${record.answered} ${JSON.stringify(params).slice(0, 300)}`);
    return send(res, 200, result);
  });

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  const control: SlackStandIn = {
    apiBaseUrl: `${url}/api/`,
    url,
    calls: (method) => calls.filter((c) => method === undefined || c.method === method),
    failNext(count, fault) {
      for (let i = 0; i < count; i++) faults.push(fault);
    },
    refuseChannel: (channel, error) => void refused.set(channel, error),
    markExternal: (channel, flags = EXTERNAL_BY_DEFAULT) => void external.set(channel, flags),
    setUserEmail: (user, email, confirmed = true) => void emails.set(user, { email, confirmed }),
    queueGrant: (grant) => void grants.push(grant),
    issuedTokens: () => [...issued],
    refreshAttempts: () => [...refreshAttempts],
    setRefreshedExpiresIn: (seconds) => {
      refreshedExpiresIn = seconds;
    },
    reset() {
      calls.length = 0;
      faults.length = 0;
      refused.clear();
      external.clear();
      emails.clear();
    },
    async waitFor(predicate, timeoutMs = 10_000) {
      const started = Date.now();
      for (;;) {
        if (predicate(calls)) return calls;
        if (Date.now() - started > timeoutMs) {
          throw new Error(
            `the Slack stand-in did not see the expected calls within ${timeoutMs} ms; it saw: ${calls.map((c) => `${c.method}:${c.answered}`).join(", ")}`,
          );
        }
        await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
      }
    },
    async stop() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return control;
}
