// The HTTP side of MCP OAuth (contract section 21): `POST
// /api/mcp/servers/{server}/connect` (admin; the router's guard has already
// checked the principal), `GET /oauth/callback` (the authorization server
// redirects the admin's browser here: the state must be live and unused, and
// the request must carry the same principal that asked to connect, by its
// console cookie or Access assertion, else 403 with the state left usable),
// and `GET /oauth/client.json` (the engine's client ID metadata document).
import { z } from "zod";
import { queueRefusal } from "../audit/queue-refusal";
import { authenticate } from "../auth/authenticate";
import type { HostConfig } from "../config/config";
import { loadConfig } from "../config/config";
import type { Env } from "../config/env";
import { apiError, errorJson, jsonResponse } from "../base/api-error";
import { beginConnect, clientMetadataDocument, finishConnect, issuerMatches, OAuthFlowError } from "./oauth-flow";
import { OAuthStore } from "./oauth-store";
import { listMcpTools } from "../execution/mcp-tool-list";
import { recordMcpContact } from "../execution/mcp-contacts";
import { redactText } from "../execution/redaction";

export const callbackQuerySchema = z.object({
  state: z.string().min(1).max(512),
  code: z.string().min(1).max(4_096).optional(),
  iss: z.string().max(2_048).optional(),
  error: z.string().max(256).optional(),
});

/** The store of a host whose config makes OAuth possible (MCP_TOKEN_KEY and PUBLIC_URL; config.ts refuses oauth without them). */
function oauthStore(db: D1Database, config: HostConfig): { store: OAuthStore; publicUrl: string } | null {
  if (config.MCP_TOKEN_KEY === undefined || config.PUBLIC_URL === undefined) return null;
  return { store: new OAuthStore(db, config.MCP_TOKEN_KEY), publicUrl: config.PUBLIC_URL };
}

export async function handleConnect(db: D1Database, config: HostConfig, server: string, principal: string): Promise<Response> {
  const settings = Object.hasOwn(config.MCP_SERVERS, server) ? config.MCP_SERVERS[server] : undefined;
  if (settings === undefined)
    throw apiError(404, { error: "not_found", message: `No MCP server ${JSON.stringify(server)} in MCP_SERVERS.` });
  const oauth = oauthStore(db, config);
  if (settings.oauth === undefined || oauth === null) {
    throw apiError(409, {
      error: "not_oauth",
      message: `${server} has no "oauth" in MCP_SERVERS; add "oauth": {} (with MCP_TOKEN_KEY and PUBLIC_URL set) to connect it.`,
    });
  }
  try {
    const authorizationUrl = await beginConnect(oauth.store, oauth.publicUrl, server, settings, principal);
    return jsonResponse(200, { authorization_url: authorizationUrl });
  } catch (error) {
    if (error instanceof OAuthFlowError) throw apiError(502, { error: error.code, message: error.message });
    throw error;
  }
}

export async function handleCallback(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const loaded = loadConfig(env);
  if (loaded.state === "bad_config") return errorJson(503, { error: "bad_config", message: loaded.message });
  const oauth = oauthStore(env.DB, loaded.config);
  if (oauth === null) return errorJson(404, { error: "not_found", message: "OAuth is off: set MCP_TOKEN_KEY and PUBLIC_URL." });
  const query = callbackQuerySchema.safeParse(Object.fromEntries(new URL(request.url).searchParams));
  if (!query.success) {
    return errorJson(400, {
      error: "bad_state",
      message: "The callback needs the state the connect made; start again with POST /api/mcp/servers/{server}/connect.",
      details: query.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
    });
  }
  const { state, code, iss, error } = query.data;
  const badState = errorJson(400, {
    error: "bad_state",
    message: "This state is unknown, used or older than 10 minutes; connect again to get a new authorization URL.",
  });
  const peeked = await oauth.store.peekState(state);
  if (peeked === null) return badState;
  const auth = await authenticate(request.headers, { db: env.DB, config: loaded.config, waitUntil: (p) => ctx.waitUntil(p) });
  if (auth.kind !== "authenticated" || auth.principal.id !== peeked.principal) {
    // Audited as any 403 of a known principal is (contract section 18, access.refused).
    if (auth.kind === "authenticated") await queueRefusal(env, auth.principal.id, "GET /oauth/callback", "forbidden");
    // The state stays usable: the right person may still arrive with it.
    return errorJson(403, {
      error: "forbidden",
      message: `Open this link signed in as the principal that asked to connect ${peeked.server} (console or Cloudflare Access).`,
    });
  }
  const pending = await oauth.store.takeState(state);
  if (pending === null) return badState;
  if (!issuerMatches(pending, iss)) {
    return errorJson(400, {
      error: "bad_iss",
      message: `The callback's iss is not ${pending.grant.metadata.issuer}, the issuer this connect started with (RFC 9207); connect again.`,
    });
  }
  if (error !== undefined || code === undefined) {
    return errorJson(400, {
      error: "authorization_failed",
      message: `The authorization server answered ${error ?? "without a code"}; connect again.`,
    });
  }
  try {
    await finishConnect(oauth.store, pending, code, iss);
  } catch (failure) {
    if (failure instanceof OAuthFlowError) return errorJson(502, { error: failure.code, message: failure.message });
    throw failure;
  }
  return connectedPage(pending.server, await firstContact(env.DB, oauth.store, loaded.config, pending.server));
}

type FirstContact = { ok: true; tools: number } | { ok: false; message: string };

/**
 * Contract section 21: before the callback answers, the server is contacted once with the new
 * token (its tool listing), recorded as every contact is, so the page and GET /api/mcp/servers
 * say `connected` and `tools` at once, or name what failed.
 */
async function firstContact(db: D1Database, store: OAuthStore, config: HostConfig, server: string): Promise<FirstContact> {
  const settings = config.MCP_SERVERS[server];
  if (settings === undefined) return { ok: false, message: `${server} is no longer configured.` };
  // The token just obtained, as it is: a token that expires soon is refreshed before a call, not here.
  const accessToken = (await store.readTokens(server))?.tokens?.accessToken;
  if (accessToken === undefined) return { ok: false, message: "the token just obtained could not be read back" };
  try {
    const listing = await listMcpTools(
      { ...settings, accessToken },
      {
        connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
        callTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
        maxResponseBytes: config.MCP_MAX_RESPONSE_BYTES,
      },
    );
    await recordMcpContact(db, server, { kind: "connected", protocol_version: listing.protocolVersion, tools: listing.tools.length });
    return { ok: true, tools: listing.tools.length };
  } catch (err) {
    await recordMcpContact(db, server, { kind: "failed" });
    return { ok: false, message: redactText(err instanceof Error ? err.message : String(err)) };
  }
}

export function handleClientDocument(env: Env): Response {
  const loaded = loadConfig(env);
  const publicUrl = loaded.state === "bad_config" ? undefined : loaded.config.PUBLIC_URL;
  if (publicUrl === undefined)
    return errorJson(404, { error: "not_found", message: "Set PUBLIC_URL to serve the client metadata document." });
  return jsonResponse(200, clientMetadataDocument(publicUrl), { "cache-control": "public, max-age=300" });
}

function connectedPage(server: string, contact: FirstContact): Response {
  const name = server.replace(/[^A-Za-z0-9_-]/g, "");
  const said = contact.ok
    ? `<p>${name} is connected: it lists ${contact.tools} tool${contact.tools === 1 ? "" : "s"}. You can close this tab.</p>`
    : `<p>${name} is authorized, but contacting it with the new token failed: ${escapeHtml(contact.message)}</p><p>GET /api/mcp/servers shows it as not connected; the next call tries again.</p>`;
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${contact.ok ? "Connected" : "Authorized, not connected"}</title></head><body>${said}</body></html>`;
  return new Response(html, {
    status: 200,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "content-security-policy": "default-src 'none'" },
  });
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
