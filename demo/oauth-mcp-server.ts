// A local OAuth 2.1 authorization server and a protected MCP resource server
// (the v2 server package, stateless, 2026-07-28 only), over real loopback
// HTTP: the MCP OAuth end-to-end tests start it in their own process
// (contract section 21), and `npm start` runs it as a process beside the demo
// MCP server (`npx tsx demo/oauth-mcp-server.ts`: the resource server on
// DEMO_OAUTH_PORT, default 3002, the authorization server on any free port;
// one stdout line, `demo-oauth-mcp-server listening on http://127.0.0.1:<port>/mcp`),
// so the README's `mcp connect` example runs locally. Two origins, as hosted servers have them: the resource
// server publishes its protected resource metadata (RFC 9728) naming the
// authorization server, which publishes RFC 8414 metadata (with
// `authorization_response_iss_parameter_supported` and client ID metadata
// documents, which it fetches and checks; or instead dynamic registration,
// or only client ids known in advance) and implements the authorization
// code grant with PKCE S256 and `resource`, and refresh with rotation (a
// refresh token is taken once; a reused one is refused with invalid_grant),
// optionally answered late so that concurrent refreshes overlap. /authorize needs no
// person: it redirects at once, so a test reads the Location and delivers
// the callback itself (or tampers with it). The resource server takes only
// live access tokens this authorization server issued. Every authorization
// and token request is recorded without its secrets (the code verifier and
// tokens are checked here, never kept in a log).
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";

interface TokenRequestSeen {
  grant_type: string;
  resource: string | null;
  client_id: string | null;
  ok: boolean;
}

interface McpRequestSeen {
  /** The JSON-RPC method, or the HTTP method for a body-less request. */
  method: string;
  status: number;
  /** Which issued access token it carried (its index in issue order), or null for none or an unknown one. */
  token: number | null;
}

export interface OAuthMcpServerOptions {
  /** Advertise and accept client ID metadata documents (default true). */
  clientIdMetadataDocuments?: boolean;
  /** Offer dynamic client registration at /register (default false). */
  registration?: boolean;
  /** Client ids known in advance (a host's configured `oauth.client_id`). */
  preregistered?: string[];
  /** The resource server's port (default 0: any free one); the authorization server always takes a free one. */
  port?: number;
}

export interface OAuthMcpServer {
  /** The MCP endpoint (the protected resource). */
  url: string;
  /** The authorization server's issuer. */
  issuer: string;
  authorizeRequests(): URLSearchParams[];
  tokenRequests(): TokenRequestSeen[];
  mcpRequests(): McpRequestSeen[];
  /** The client metadata of each dynamic registration. */
  registrations(): Record<string, unknown>[];
  /** Every token value issued so far, to check that none leaks anywhere. */
  issuedSecrets(): string[];
  items(): string[];
  /** Lifetime of the access tokens issued from now on, in seconds. */
  setExpiresIn(seconds: number): void;
  /** Answer refresh-grant token requests only after `ms` (0: at once), so that refreshes sent together overlap. */
  delayRefreshes(ms: number): void;
  /** Answer every tools/call 401 (a token the server no longer takes), other methods as usual. */
  refuseToolCalls(on: boolean): void;
  resetLogs(): void;
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 64 * 1024;

export async function startOAuthMcpServer(options: OAuthMcpServerOptions = {}): Promise<OAuthMcpServer> {
  const cimd = options.clientIdMetadataDocuments ?? true;
  const registrationLog: Record<string, unknown>[] = [];
  /** Registered and preregistered clients → their redirect URIs (null: any). */
  const clients = new Map<string, string[] | null>((options.preregistered ?? []).map((id) => [id, null]));
  const secrets: string[] = [];
  const authorizeLog: URLSearchParams[] = [];
  const tokenLog: TokenRequestSeen[] = [];
  const mcpLog: McpRequestSeen[] = [];
  const items: string[] = [];
  /** Live access tokens → their issue index and expiry. */
  const accessTokens = new Map<string, { index: number; expiresAtMs: number }>();
  const refreshTokens = new Map<string, { clientId: string; resource: string }>();
  const codes = new Map<string, { clientId: string; redirectUri: string; challenge: string; resource: string }>();
  let issued = 0;
  let expiresIn = 3600;
  let refuseCalls = false;
  let refreshDelayMs = 0;

  const as = await listen((req, res, body) => serveAuthorizationServer(req, res, body));
  const rs = await listen((req, res, body) => serveResource(req, res, body), options.port ?? 0);
  const issuer = `http://127.0.0.1:${as.port}`;
  const resource = `http://127.0.0.1:${rs.port}/mcp`;

  function issue(clientId: string, resourceValue: string): Record<string, unknown> {
    const accessToken = randomBytes(24).toString("base64url");
    const refreshToken = randomBytes(24).toString("base64url");
    accessTokens.set(accessToken, { index: issued, expiresAtMs: Date.now() + expiresIn * 1000 });
    issued += 1;
    refreshTokens.set(refreshToken, { clientId, resource: resourceValue });
    secrets.push(accessToken, refreshToken);
    return { access_token: accessToken, token_type: "Bearer", expires_in: expiresIn, refresh_token: refreshToken };
  }

  async function serveAuthorizationServer(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const url = new URL(req.url ?? "/", issuer);
    if (url.pathname === "/.well-known/oauth-authorization-server") {
      return json(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: cimd,
        ...(options.registration ? { registration_endpoint: `${issuer}/register` } : {}),
      });
    }
    if (url.pathname === "/register" && req.method === "POST" && options.registration) {
      const metadata = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
      registrationLog.push(metadata);
      const clientId = `dcr-${randomBytes(6).toString("hex")}`;
      clients.set(clientId, (metadata.redirect_uris as string[] | undefined) ?? []);
      return json(res, 201, { ...metadata, client_id: clientId });
    }
    if (url.pathname === "/authorize") {
      const q = url.searchParams;
      authorizeLog.push(new URLSearchParams(q));
      const clientId = q.get("client_id") ?? "";
      const redirectUri = q.get("redirect_uri") ?? "";
      // A known client, or a client ID metadata document fetched from its URL; the redirect must be one it lists.
      const known = clients.get(clientId);
      let clientOk = known !== undefined && (known === null || known.includes(redirectUri));
      if (known === undefined && cimd && clientId.startsWith("http")) {
        const document = (await fetch(clientId).then((r) => (r.ok ? r.json() : null))) as {
          client_id?: string;
          redirect_uris?: string[];
        } | null;
        clientOk = document?.client_id === clientId && (document.redirect_uris ?? []).includes(redirectUri);
      }
      const valid =
        clientOk &&
        q.get("response_type") === "code" &&
        q.get("code_challenge_method") === "S256" &&
        (q.get("code_challenge") ?? "").length >= 43 &&
        q.get("resource") === resource;
      if (!valid) return json(res, 400, { error: "invalid_request" });
      const code = randomBytes(16).toString("base64url");
      codes.set(code, { clientId, redirectUri, challenge: q.get("code_challenge")!, resource });
      const location = new URL(redirectUri);
      location.searchParams.set("code", code);
      location.searchParams.set("state", q.get("state") ?? "");
      location.searchParams.set("iss", issuer);
      res.writeHead(302, { location: location.href }).end();
      return;
    }
    if (url.pathname === "/token" && req.method === "POST") {
      const form = new URLSearchParams(body.toString("utf8"));
      const seen: TokenRequestSeen = {
        grant_type: form.get("grant_type") ?? "",
        resource: form.get("resource"),
        client_id: form.get("client_id"),
        ok: false,
      };
      tokenLog.push(seen);
      if (seen.grant_type === "authorization_code") {
        const grant = codes.get(form.get("code") ?? "");
        codes.delete(form.get("code") ?? "");
        const verifier = form.get("code_verifier") ?? "";
        const challenge = createHash("sha256").update(verifier).digest("base64url");
        if (
          !grant ||
          grant.challenge !== challenge ||
          grant.redirectUri !== form.get("redirect_uri") ||
          grant.clientId !== seen.client_id ||
          grant.resource !== seen.resource
        )
          return json(res, 400, { error: "invalid_grant" });
        seen.ok = true;
        return json(res, 200, issue(grant.clientId, grant.resource));
      }
      if (seen.grant_type === "refresh_token") {
        if (refreshDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, refreshDelayMs));
        const grant = refreshTokens.get(form.get("refresh_token") ?? "");
        if (!grant || grant.clientId !== seen.client_id || grant.resource !== seen.resource)
          return json(res, 400, { error: "invalid_grant" });
        refreshTokens.delete(form.get("refresh_token") ?? "");
        seen.ok = true;
        return json(res, 200, issue(grant.clientId, grant.resource));
      }
      return json(res, 400, { error: "unsupported_grant_type" });
    }
    return json(res, 404, { error: "not_found" });
  }

  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: "demo-oauth-items", version: "1.0.0" });
      server.registerTool(
        "create_item",
        { description: "Create an item.", inputSchema: z.object({ name: z.string() }) },
        async ({ name }) => {
          items.push(name);
          return { content: [{ type: "text", text: `created item ${items.length}: ${name}` }] };
        },
      );
      return server;
    },
    { legacy: "reject" },
  );

  async function serveResource(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const url = new URL(req.url ?? "/", resource);
    if (url.pathname.startsWith("/.well-known/oauth-protected-resource")) {
      return json(res, 200, { resource, authorization_servers: [issuer], bearer_methods_supported: ["header"] });
    }
    if (url.pathname !== "/mcp") return json(res, 404, { error: "not_found" });
    let method = req.method ?? "?";
    try {
      const parsed = JSON.parse(body.toString("utf8")) as { method?: unknown };
      if (typeof parsed.method === "string") method = parsed.method;
    } catch {
      // a body-less request
    }
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    const live = bearer === undefined ? undefined : accessTokens.get(bearer);
    const token = live !== undefined && live.expiresAtMs > Date.now() ? live.index : null;
    if (token === null || (refuseCalls && method === "tools/call")) {
      mcpLog.push({ method, status: 401, token });
      res
        .writeHead(401, {
          "content-type": "application/json",
          "www-authenticate": `Bearer resource_metadata="http://127.0.0.1:${rs.port}/.well-known/oauth-protected-resource/mcp"`,
        })
        .end(JSON.stringify({ error: "invalid_token" }));
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const init: RequestInit = { method: req.method ?? "GET", headers, ...(hasBody ? { body: new Uint8Array(body) } : {}) };
    const response = await handler.fetch(new Request(resource, init));
    mcpLog.push({ method, status: response.status, token });
    const out: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      out[name] = value;
    });
    res.writeHead(response.status, out).end(Buffer.from(await response.arrayBuffer()));
  }

  return {
    url: resource,
    issuer,
    authorizeRequests: () => [...authorizeLog],
    tokenRequests: () => [...tokenLog],
    mcpRequests: () => [...mcpLog],
    registrations: () => [...registrationLog],
    issuedSecrets: () => [...secrets],
    items: () => [...items],
    setExpiresIn: (seconds) => {
      expiresIn = seconds;
    },
    delayRefreshes: (ms) => {
      refreshDelayMs = ms;
    },
    refuseToolCalls: (on) => {
      refuseCalls = on;
    },
    resetLogs: () => {
      authorizeLog.length = 0;
      tokenLog.length = 0;
      mcpLog.length = 0;
    },
    stop: async () => {
      await Promise.all([as.stop(), rs.stop()]);
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function listen(
  serve: (req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<void>,
  port = 0,
): Promise<{ port: number; stop: () => Promise<void> }> {
  const http: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).byteLength;
        if (size > MAX_BODY_BYTES) return void res.writeHead(413).end();
        chunks.push(chunk as Buffer);
      }
      await serve(req, res, Buffer.concat(chunks));
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, "127.0.0.1", () => {
      http.off("error", reject);
      resolve();
    });
  });
  return {
    port: (http.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// Process entry point (`npm start` runs it beside the demo MCP server)

const DEFAULT_PORT = 3002;
const SHUTDOWN_GRACE_MS = 5_000;

async function main(): Promise<void> {
  const raw = process.env.DEMO_OAUTH_PORT;
  const port = raw === undefined || raw === "" ? DEFAULT_PORT : Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`DEMO_OAUTH_PORT=${raw} is not a port`);
  // Dynamic registration too, so a host that names no client id and serves no metadata document still connects.
  const server = await startOAuthMcpServer({ port, registration: true });
  process.stdout.write(`demo-oauth-mcp-server listening on ${server.url}\n`);
  const shutdown = () => {
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    server.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", shutdown);
  process.once("SIGINT", shutdown);
}

const entryScript = process.argv[1];
if (entryScript !== undefined && import.meta.url === pathToFileURL(entryScript).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`demo-oauth-mcp-server: failed to start: ${String(error)}\n`);
    process.exit(1);
  });
}
