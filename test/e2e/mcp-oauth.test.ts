// OAuth for hosted MCP servers end to end (contract section 21), over
// loopback against a local authorization server and a protected v2 MCP
// resource server in the test process (test/support/oauth-mcp-server.ts).
// Its own Worker: PUBLIC_URL must name the Worker's own origin, and the
// console (whose cookie proves the principal at the callback) must be on.
// An admin connects (the connect route, then the callback with the same
// principal); calls get the token before the checkpoint, refreshed when it
// expires within 60 s (one refresh for two runs that need it at once, against
// an authorization server that rotates refresh tokens); a missing or refused token ends the call
// not_executed(authorization_required) and nothing is sent again.
import { consoleCookie } from "../support/e2e-client";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineClient, type EngineEvent, type ScriptTurn } from "../../src/client";
import { startOAuthMcpServer, type OAuthMcpServer } from "../../demo/oauth-mcp-server";
import { runCli } from "../support/cli-process";
import { freePort, startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const CREATE_ITEM = "mcp__hosted__create_item";
const TOKEN_KEY = randomBytes(32).toString("base64");

let hosted: OAuthMcpServer;
/** An authorization server without client ID metadata documents, offering dynamic registration. */
let registering: OAuthMcpServer;
/** One that knows the host's configured client id only. */
let preregistered: OAuthMcpServer;
/** Every event of every run here, to check no token appears in one. */
const allEvents: EngineEvent[] = [];
let server: WorkerServer;
let engine: EngineClient;
let rootCookie: string;
let otherCookie: string;

beforeAll(async () => {
  hosted = await startOAuthMcpServer();
  registering = await startOAuthMcpServer({ clientIdMetadataDocuments: false, registration: true });
  preregistered = await startOAuthMcpServer({ clientIdMetadataDocuments: false, preregistered: ["engine-configured"] });
  const port = await freePort();
  server = await startWorkerServer(
    {
      ...e2eVars("http://127.0.0.1:9/unused"),
      APPROVAL_TIMEOUT_MS: "30000",
      MCP_CALL_TIMEOUT_MS: "5000",
      MCP_SERVERS: JSON.stringify({
        hosted: { url: hosted.url, oauth: {} },
        registered: { url: registering.url, oauth: {} },
        configured: { url: preregistered.url, oauth: { client_id: "engine-configured", scopes: ["items:write"] } },
        plain: { url: hosted.url },
      }),
      MUTATION_BUDGET: JSON.stringify({ [CREATE_ITEM]: 5 }),
      TOOL_POLICY: "{}",
      MCP_TOKEN_KEY: TOKEN_KEY,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      CONSOLE_SESSION_SECRET: randomBytes(24).toString("hex"),
    },
    { port },
  );
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
  rootCookie = await signIn(server.token);
  const other = await engine.createToken({ name: "other-admin", roles: ["admin"] });
  otherCookie = await signIn(other.token);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await Promise.all([hosted?.stop(), registering?.stop(), preregistered?.stop()]);
});

const signIn = (token: string): Promise<string> => consoleCookie(server.url, token);

/** Runs `script` to its end, approving every approval it asks for. */
async function runApproving(script: ScriptTurn[]): Promise<EngineEvent[]> {
  const { run_id: runId } = await engine.trigger({ message: "m", channel_id: `C-oauth-${randomBytes(4).toString("hex")}`, script });
  const events: EngineEvent[] = [];
  for await (const event of engine.events(runId)) {
    events.push(event);
    allEvents.push(event);
    if (event.type === "approval_requested") await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
  }
  return events;
}

const createItem = (id: string, name: string): ScriptTurn[] => [
  { tool_calls: [{ tool_name: CREATE_ITEM, tool_call_id: id, arguments: { name } }] },
];
const executionOf = (events: EngineEvent[], toolCallId: string) =>
  events.find((e): e is Extract<EngineEvent, { type: "tool_execution" }> => e.type === "tool_execution" && e.tool_call_id === toolCallId);

/** The connect route's answer for `name`: its authorization URL. */
async function connect(name: string): Promise<URL> {
  const started = await server.api(`/api/mcp/servers/${name}/connect`, { method: "POST" });
  expect(started.status).toBe(200);
  return new URL(((await started.json()) as { authorization_url: string }).authorization_url);
}

/** `approved-exec <args>` as a process against the Worker, to its exit. */
const cli = (args: string[]) => runCli(server, args);

/** The connect route's authorization URL, opened at the authorization server: the callback URL it redirects to. */
async function authorize(): Promise<URL> {
  const url = await connect("hosted");
  const redirect = await fetch(url, { redirect: "manual" });
  expect(redirect.status).toBe(302);
  return new URL(redirect.headers.get("location")!);
}

const callback = (url: URL, cookie?: string) => fetch(url, { headers: cookie === undefined ? {} : { cookie } });

describe("MCP OAuth: connect, call with the token, refresh, refusal", () => {
  it("lists the server as oauth and not connected before anyone connects it", async () => {
    const [listed] = await engine.listMcpServers();
    expect(listed).toMatchObject({ server: "hosted", auth: "oauth", connected: false });
    expect(listed).not.toHaveProperty("issuer");
  });

  it("without a token the call ends not_executed(authorization_required) and nothing reaches the server", async () => {
    hosted.resetLogs();
    const events = await runApproving(createItem("first", "nope"));
    expect(executionOf(events, "first")).toMatchObject({ execution_status: "not_executed", reason: "authorization_required" });
    expect(hosted.mcpRequests()).toEqual([]);
    expect(hosted.items()).toEqual([]);
  });

  it("refuses connect for an unknown server (404) or one without oauth (409); the client document is served at PUBLIC_URL", async () => {
    expect((await server.api("/api/mcp/servers/nope/connect", { method: "POST" })).status).toBe(404);
    const plain = await server.api("/api/mcp/servers/plain/connect", { method: "POST" });
    expect(plain.status).toBe(409);
    expect(await plain.json()).toMatchObject({ error: "not_oauth" });
    const document = await (await fetch(`${server.url}/oauth/client.json`)).json();
    expect(document).toMatchObject({
      client_id: `${server.url}/oauth/client.json`,
      redirect_uris: [`${server.url}/oauth/callback`],
      application_type: "web",
    });
  });

  it("connects: PKCE S256 and resource on both requests; only the principal that asked may finish, once", async () => {
    hosted.resetLogs();
    hosted.setExpiresIn(30); // expires within 60 s: the next call refreshes it first
    const back = await authorize();
    const [asked] = hosted.authorizeRequests();
    expect(asked?.get("code_challenge_method")).toBe("S256");
    expect(asked?.get("resource")).toBe(hosted.url);
    expect(asked?.get("client_id")).toBe(`${server.url}/oauth/client.json`);
    expect(`${back.origin}${back.pathname}`).toBe(`${server.url}/oauth/callback`);

    // Another admin, or nobody: 403, and the state stays usable.
    expect((await callback(back, otherCookie)).status).toBe(403);
    expect((await callback(back)).status).toBe(403);
    expect(hosted.tokenRequests()).toEqual([]);
    await expect
      .poll(
        async () =>
          (await (await server.api("/api/audit?principal=token:other-admin&action=access.refused")).json()) as { entries: unknown[] },
      )
      .toMatchObject({ entries: [expect.objectContaining({ target: "GET /oauth/callback", result: "refused" })] });

    const done = await callback(back, rootCookie);
    expect(done.status).toBe(200);
    expect(done.headers.get("content-type")).toContain("text/html");
    // Contract section 21: before answering, the callback contacted the server once with the new token (its tool
    // listing), so the page and the listing say connected and tools without waiting for a call.
    expect(await done.text()).toMatch(/hosted is connected: it lists [1-9]\d* tools?/);
    expect(hosted.mcpRequests().filter((r) => r.method === "tools/list")).toEqual([
      expect.objectContaining({ status: 200, token: expect.any(Number) }),
    ]);
    expect(hosted.mcpRequests().filter((r) => r.method === "tools/call")).toEqual([]);
    const [afterConnect] = await engine.listMcpServers();
    expect(afterConnect).toMatchObject({
      server: "hosted",
      connected: true,
      tools: expect.any(Number),
      last_contact_at: expect.any(String),
    });
    expect(afterConnect?.tools).toBeGreaterThan(0);
    expect(hosted.tokenRequests()).toEqual([
      { grant_type: "authorization_code", resource: hosted.url, client_id: asked?.get("client_id"), ok: true },
    ]);

    // Single use.
    const again = await callback(back, rootCookie);
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: "bad_state" });
  });

  it("is a configured client_id as it is, else a dynamically registered web client, kept per issuer; the CLI prints the URL", async () => {
    const configured = await connect("configured");
    expect(configured.searchParams.get("client_id")).toBe("engine-configured");
    expect(configured.searchParams.get("scope")).toBe("items:write");
    expect(configured.searchParams.get("resource")).toBe(preregistered.url);

    const registered = await connect("registered");
    expect(registering.registrations()).toEqual([
      expect.objectContaining({
        application_type: "web",
        redirect_uris: [`${server.url}/oauth/callback`],
        token_endpoint_auth_method: "none",
      }),
    ]);
    const clientId = registered.searchParams.get("client_id");
    expect(clientId).toMatch(/^dcr-/);
    // The same issuer again: the registered client is reused, not registered twice.
    expect((await connect("registered")).searchParams.get("client_id")).toBe(clientId);
    expect(registering.registrations()).toHaveLength(1);
    const redirect = await fetch(registered, { redirect: "manual" });
    expect(redirect.status).toBe(302);

    const printed = await cli(["mcp", "connect", "hosted"]);
    expect(printed).toMatchObject({ code: 0, stderr: "" });
    const url = new URL(printed.stdout.trim());
    expect(`${url.origin}${url.pathname}`).toBe(`${hosted.issuer}/authorize`);
    expect(url.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("answers 400 for an unknown state or an iss other than the issuer's", async () => {
    hosted.setExpiresIn(30);
    const forged = new URL(`${server.url}/oauth/callback?state=${randomBytes(32).toString("base64url")}&code=x&iss=${hosted.issuer}`);
    expect((await callback(forged, rootCookie)).status).toBe(400);
    const back = await authorize();
    back.searchParams.set("iss", "http://127.0.0.1:9/evil");
    const refused = await callback(back, rootCookie);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: "bad_iss" });
  });

  it("refreshes a token that expires within 60 s before the call, then calls once with the new token", async () => {
    hosted.resetLogs();
    hosted.setExpiresIn(3600);
    const events = await runApproving(createItem("second", "widget"));
    expect(executionOf(events, "second")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(hosted.items()).toEqual(["widget"]);
    const refreshes = hosted.tokenRequests();
    expect(refreshes).toEqual([expect.objectContaining({ grant_type: "refresh_token", resource: hosted.url, ok: true })]);
    const calls = hosted.mcpRequests().filter((r) => r.method === "tools/call");
    expect(calls).toHaveLength(1);
    // Issued tokens so far: the connect's (0), then refreshes; the call carried a refreshed one.
    expect(calls[0]).toMatchObject({ status: 200 });
    expect(calls[0]!.token).toBeGreaterThan(0);

    const [listed] = await engine.listMcpServers();
    expect(listed).toMatchObject({ auth: "oauth", connected: true, issuer: hosted.issuer, connected_by: "token:root" });
    expect(Date.parse(listed!.connected_at ?? "")).not.toBeNaN();
    const text = JSON.stringify(await (await server.api("/api/mcp/servers")).json());
    expect(text).not.toMatch(/access_token|refresh_token/);
    // GET /api/health probes an OAuth server with its token; one never connected needs authorization.
    const health = (await (await server.api("/api/health")).json()) as { mcp: Record<string, string> };
    expect(health.mcp).toMatchObject({ hosted: "ok", registered: "authorization_required", configured: "authorization_required" });
  });

  it("a tools/call answered 401 ends not_executed(authorization_required): never re-sent, never refreshed, then not connected", async () => {
    hosted.resetLogs();
    hosted.refuseToolCalls(true);
    try {
      const events = await runApproving(createItem("third", "refused"));
      expect(executionOf(events, "third")).toMatchObject({ execution_status: "not_executed", reason: "authorization_required" });
      expect(hosted.mcpRequests().filter((r) => r.method === "tools/call")).toEqual([expect.objectContaining({ status: 401 })]);
      expect(hosted.tokenRequests()).toEqual([]);
      expect(hosted.items()).toEqual(["widget"]);
      const [listed] = await engine.listMcpServers();
      expect(listed).toMatchObject({ auth: "oauth", connected: false });

      // The grant lapsed: the next call stops before sending anything.
      hosted.resetLogs();
      const next = await runApproving(createItem("fourth", "later"));
      expect(executionOf(next, "fourth")).toMatchObject({ execution_status: "not_executed", reason: "authorization_required" });
      expect(hosted.mcpRequests()).toEqual([]);
    } finally {
      hosted.refuseToolCalls(false);
    }
  });

  it("two runs needing a refresh at once send one refresh grant (the server rotates): both calls execute, the grant stays", async () => {
    // Connected again (the grant lapsed above), with a token that expires within 60 s.
    hosted.setExpiresIn(30);
    expect((await callback(await authorize(), rootCookie)).status).toBe(200);
    hosted.setExpiresIn(3600);
    hosted.resetLogs();
    // The first refresh is still out when the other run needs one: without the lease both would send the refresh token.
    hosted.delayRefreshes(1_000);
    let pair: EngineEvent[][];
    try {
      pair = await Promise.all([runApproving(createItem("pair-a", "left")), runApproving(createItem("pair-b", "right"))]);
    } finally {
      hosted.delayRefreshes(0);
    }
    expect(executionOf(pair[0]!, "pair-a")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(executionOf(pair[1]!, "pair-b")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(hosted.tokenRequests()).toEqual([expect.objectContaining({ grant_type: "refresh_token", resource: hosted.url, ok: true })]);
    const calls = hosted.mcpRequests().filter((r) => r.method === "tools/call");
    expect(calls).toHaveLength(2);
    // Both carried the one refreshed token.
    expect(calls.map((c) => c.status)).toEqual([200, 200]);
    expect(new Set(calls.map((c) => c.token)).size).toBe(1);
    expect(hosted.items()).toEqual(expect.arrayContaining(["left", "right"]));
    const [listed] = await engine.listMcpServers();
    expect(listed).toMatchObject({ server: "hosted", auth: "oauth", connected: true });
  });

  it("never shows a token: not in an event, a listing or the Worker's log", async () => {
    const secrets = [...hosted.issuedSecrets(), ...registering.issuedSecrets(), ...preregistered.issuedSecrets()];
    expect(secrets.length).toBeGreaterThanOrEqual(4);
    const shown = [JSON.stringify(allEvents), JSON.stringify(await (await server.api("/api/mcp/servers")).json()), server.logs()].join(
      "\n",
    );
    for (const secret of secrets) expect(shown).not.toContain(secret);
  });
});
