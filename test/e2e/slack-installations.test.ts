// Slack installations over real loopback HTTP (contract section 26): one
// wrangler dev in installation mode (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET,
// SLACK_INSTALL_KEY, SLACK_ALLOWED_TEAMS, PUBLIC_URL) and the Slack stand-in
// playing Slack's OAuth (the authorize page, oauth.v2.access with PKCE,
// rotation, auth.revoke, apps.uninstall) and Web API, recording the token of
// every call. An admin's console session starts each install; the browser's
// redirects are followed by hand, with the cookies a browser would send.
import { consoleCookie } from "../support/e2e-client";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { e2eVars } from "./global-setup";
import { postSlackEvent, postSlackInteraction, scriptMessage } from "../support/slack-signing";
import { type InstallGrant, type RecordedCall, type SlackStandIn, startSlackStandIn } from "../support/slack-stand-in";
import { freePort, startWorkerServer, type WorkerServer } from "../support/worker-server";

const SECRET = "test-signing-secret-installations";
const TEAM_A = "T0WSA";
const TEAM_B = "T0WSB";
const TEAM_C = "T0WSC";
const GRID = "E0GRID";
const OUTSIDER = "T0OUT";
const CREATE = "mcp__demo__create_dashboard";

let slack: SlackStandIn;
let server: WorkerServer;
let rootCookie: string;
let otherAdminCookie: string;
let counter = 0;

beforeAll(async () => {
  slack = await startSlackStandIn({ quiet: true });
  const port = await freePort();
  server = await startWorkerServer(
    {
      ...e2eVars(`${inject("demoMcpBaseUrl")}/mcp`),
      APPROVAL_TIMEOUT_MS: "60000",
      ADMISSION_TIMEOUT_MS: "60000",
      SLACK_SIGNING_SECRET: SECRET,
      SLACK_CLIENT_ID: "1111.2222",
      SLACK_CLIENT_SECRET: randomBytes(16).toString("hex"),
      SLACK_INSTALL_KEY: JSON.stringify([randomBytes(32).toString("base64")]),
      SLACK_ALLOWED_TEAMS: JSON.stringify([TEAM_A, TEAM_B, TEAM_C, GRID]),
      SLACK_API_BASE_URL: slack.apiBaseUrl,
      SLACK_OAUTH_BASE_URL: `${slack.url}/`,
      SLACK_RETRY_BASE_MS: "100",
      SLACK_RETRY_MAX_INTERVAL_MS: "300",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      // Any Slack user may approve a dashboard: only the installation rule keeps workspace B's users off A's runs.
      TOOL_POLICY: JSON.stringify({ [CREATE]: { approvers: ["slack:*"] }, mcp__demo__create_alert_from_chart: { level: "confirm" } }),
      CONSOLE_SESSION_SECRET: randomBytes(24).toString("hex"),
    },
    { port },
  );
  rootCookie = await signIn(server.token);
  const other = await server.api("/api/tokens", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "other-admin", roles: ["admin"] }),
  });
  otherAdminCookie = await signIn(((await other.json()) as { token: string }).token);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await slack?.stop();
});

const signIn = (token: string): Promise<string> => consoleCookie(server.url, token);

/** GET /slack/install as an admin's browser, then Slack's authorize page: the redirect back and the install cookie. */
async function startInstall(grant: InstallGrant, cookie = rootCookie): Promise<{ back: string; installCookie: string }> {
  slack.queueGrant(grant);
  const start = await fetch(`${server.url}/slack/install`, { headers: { cookie }, redirect: "manual" });
  expect(start.status).toBe(302);
  const setCookie = start.headers.get("set-cookie") ?? "";
  expect(setCookie).toMatch(/^slack_install=[^;]+; HttpOnly; Secure; SameSite=Lax; Path=\/slack\/oauth_redirect; Max-Age=600$/);
  const authorize = new URL(start.headers.get("location")!);
  expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
  const slackAnswer = await fetch(authorize, { redirect: "manual" });
  expect(slackAnswer.status).toBe(302);
  return { back: slackAnswer.headers.get("location")!, installCookie: setCookie.split(";")[0]! };
}

async function finish(back: string, cookie: string): Promise<Response> {
  return fetch(back, { headers: { cookie }, redirect: "manual" });
}

async function install(grant: InstallGrant): Promise<Response> {
  const { back, installCookie } = await startInstall(grant);
  return finish(back, `${installCookie}; ${rootCookie}`);
}

type Listing = { installation_id: string; status: string; installed_by: string; authorized_by: string; token_expires_at?: string };
async function installations(): Promise<Listing[]> {
  const res = await server.api("/api/slack/installations");
  expect(res.status).toBe(200);
  return ((await res.json()) as { installations: Listing[] }).installations;
}

const tokenOf = (installation: string) =>
  slack
    .issuedTokens()
    .filter((t) => t.installation === installation)
    .at(-1)!.token;

/** An Events API envelope from a workspace (or from a workspace of an org-wide install). */
function envelope(event: Record<string, unknown>, id: string, from: { team: string; enterprise?: string; orgWide?: boolean }) {
  return {
    token: "legacy",
    team_id: from.team,
    ...(from.enterprise ? { enterprise_id: from.enterprise } : {}),
    api_app_id: "A0STANDIN",
    event,
    type: "event_callback",
    event_id: id,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      {
        enterprise_id: from.enterprise ?? null,
        team_id: from.orgWide ? null : from.team,
        user_id: "UBOTX",
        is_bot: true,
        is_enterprise_install: from.orgWide ?? false,
      },
    ],
  };
}

const ts = () => `${Math.floor(Date.now() / 1000)}.${String(++counter).padStart(6, "0")}`;

async function mention(text: string, user: string, channel: string, from: { team: string; enterprise?: string; orgWide?: boolean }) {
  const id = `EvI${Date.now()}${++counter}`;
  const event = { type: "app_mention", user, text: `<@UBOTX> ${text}`, ts: ts(), channel };
  const res = await postSlackEvent(`${server.url}/slack/events`, SECRET, envelope(event, id, from));
  expect(res.status).toBe(200);
  return id;
}

async function runOf(deliveryId: string): Promise<string> {
  let runId = "";
  await expect
    .poll(async () => {
      const res = await server.api(`/api/deliveries/${encodeURIComponent(deliveryId)}?source=slack`);
      if (res.status === 200) runId = ((await res.json()) as { run_id: string }).run_id;
      return res.status;
    })
    .toBe(200);
  return runId;
}

async function receiptStatus(deliveryId: string): Promise<number> {
  return (await server.api(`/api/deliveries/${encodeURIComponent(deliveryId)}?source=slack`)).status;
}

async function summary(runId: string): Promise<Record<string, any>> {
  return (await (await server.api(`/api/runs/${runId}`)).json()) as Record<string, any>;
}

const writeScript = (title: string) => [
  { tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: { title } }] },
  { text: "done" },
];

async function pendingApproval(runId: string) {
  await expect.poll(async () => (await summary(runId)).pending_approvals.length, { timeout: 15_000 }).toBe(1);
  const approval = (await summary(runId)).pending_approvals[0] as { approval_id: string };
  return { run_id: runId, approval_id: approval.approval_id, level: "approve" };
}

function click(user: string, channel: string, value: unknown, team: string) {
  return postSlackInteraction(`${server.url}/slack/interactivity`, SECRET, {
    type: "block_actions",
    user: { id: user, username: "u", name: "u", team_id: team },
    api_app_id: "A0STANDIN",
    token: "legacy",
    container: { type: "message", message_ts: "1.000001", channel_id: channel, is_ephemeral: false },
    trigger_id: `trigger-${++counter}`,
    team: { id: team, domain: "test" },
    channel: { id: channel, name: "ops" },
    message: { type: "message", ts: "1.000001", thread_ts: "1.000000", text: "approval", user: "UBOTX", bot_id: "B0001" },
    actions: [
      {
        type: "button",
        action_id: "approval_approve",
        block_id: "b",
        value: JSON.stringify(value),
        text: { type: "plain_text", text: "x" },
        action_ts: "1",
      },
    ],
  });
}

const postsIn = (channel: string) =>
  slack.calls().filter((c: RecordedCall) => c.params.channel === channel && ["chat.postMessage", "chat.update"].includes(c.method));

describe("installing (contract section 26)", () => {
  it("a forged state, a redirect without its cookie, another admin's browser and a replay install nothing", async () => {
    const forged = await finish(
      `${server.url}/slack/oauth_redirect?state=${"f".repeat(32)}&code=code-1`,
      `slack_install=${"f".repeat(32)}.AAAA`,
    );
    expect([forged.status, forged.headers.get("x-error-code")]).toEqual([400, "bad_state"]);
    expect(await forged.text()).toContain("bad_state");

    const { back, installCookie } = await startInstall({ team_id: TEAM_A, user_id: "UADMINA", bot_user_id: "UBOTA" });
    const noCookie = await finish(back, rootCookie);
    expect([noCookie.status, noCookie.headers.get("x-error-code")]).toEqual([400, "bad_state"]);
    // Another admin's session with the right cookie: 403, and the state stays usable.
    const otherAdmin = await finish(back, `${installCookie}; ${otherAdminCookie}`);
    expect(otherAdmin.status).toBe(403);
    expect(slack.calls("oauth.v2.access")).toEqual([]);
    const done = await finish(back, `${installCookie}; ${rootCookie}`);
    expect(done.status).toBe(200);
    const replay = await finish(back, `${installCookie}; ${rootCookie}`);
    expect([replay.status, replay.headers.get("x-error-code")]).toEqual([400, "bad_state"]);
    expect(slack.calls("oauth.v2.access")).toHaveLength(1);
    expect(await installations()).toEqual([
      expect.objectContaining({
        installation_id: TEAM_A,
        status: "active",
        installed_by: "token:root",
        authorized_by: `slack:${TEAM_A}:UADMINA`,
      }),
    ]);
  });

  it("a bearer token starts no install; only an admin's browser does", async () => {
    const bearer = await fetch(`${server.url}/slack/install`, { headers: { authorization: `Bearer ${server.token}` }, redirect: "manual" });
    expect(bearer.status).toBe(403);
    const anonymous = await fetch(`${server.url}/slack/install`, { redirect: "manual" });
    expect(anonymous.status).toBe(401);
  });

  it("a team outside SLACK_ALLOWED_TEAMS is refused, its new token revoked at once, nothing stored", async () => {
    const refused = await install({ team_id: OUTSIDER, user_id: "UOUT", bot_user_id: "UBOTOUT" });
    expect([refused.status, refused.headers.get("x-error-code")]).toEqual([403, "team_not_allowed"]);
    const token = tokenOf(OUTSIDER);
    expect(slack.calls("auth.revoke").map((c) => c.token || c.params.token)).toEqual([token]);
    expect((await installations()).map((i) => i.installation_id)).not.toContain(OUTSIDER);
    expect(await receiptStatus(await mention("hello", "UOUT", "C0OUT", { team: OUTSIDER }))).toBe(404);
  });
});

describe("serving many installations", () => {
  it("two workspaces: each run posts with its own token, and a click from B never decides A's run", async () => {
    expect((await install({ team_id: TEAM_B, user_id: "UADMINB", bot_user_id: "UBOTB" })).status).toBe(200);
    const runA = await runOf(await mention(scriptMessage(writeScript("in-a")), "UREQ1", "C0CHANA", { team: TEAM_A }));
    const runB = await runOf(await mention(scriptMessage(writeScript("in-b")), "UREQ1", "C0CHANB", { team: TEAM_B }));
    expect((await summary(runA)).requested_by).toBe(`slack:${TEAM_A}:UREQ1`);
    expect((await summary(runB)).requested_by).toBe(`slack:${TEAM_B}:UREQ1`);
    const valueA = await pendingApproval(runA);
    await pendingApproval(runB);
    await slack.waitFor(() => postsIn("C0CHANA").length > 0 && postsIn("C0CHANB").length > 0);
    // B's Home tab (a user any approval policy here admits) lists B's approval, never A's, published with B's token.
    const home = { type: "app_home_opened", user: "UHOMEB", channel: "D0HOMEB", tab: "home" };
    const tabsOfB = () => slack.calls("views.publish").filter((c) => c.params.user_id === "UHOMEB");
    // The approval reaches the index (which the tab reads) a moment after it is asked: open the tab until it shows.
    await expect
      .poll(
        async () => {
          await postSlackEvent(`${server.url}/slack/events`, SECRET, envelope(home, `EvI${Date.now()}${++counter}`, { team: TEAM_B }));
          return tabsOfB().some((c) => JSON.stringify(c.params.view).includes(runB));
        },
        { timeout: 15_000, interval: 500 },
      )
      .toBe(true);
    expect(tabsOfB().every((c) => c.token === tokenOf(TEAM_B) && !JSON.stringify(c.params.view).includes(runA))).toBe(true);
    // The same user id in workspace B, clicking A's approval: nothing is decided.
    expect((await click("UREQ1", "C0CHANA", valueA, TEAM_B)).status).toBe(200);
    await slack.waitFor((calls) => calls.some((c) => c.method === "chat.postEphemeral"));
    expect((await summary(runA)).pending_approvals).toHaveLength(1);
    // A's own requester decides it.
    expect((await click("UREQ1", "C0CHANA", valueA, TEAM_A)).status).toBe(200);
    await expect.poll(async () => (await summary(runA)).status, { timeout: 15_000 }).toBe("completed");
    await expect.poll(async () => (await summary(runA)).slack_posts_pending, { timeout: 10_000 }).toBe(0);
    expect(new Set(postsIn("C0CHANA").map((c) => c.token))).toEqual(new Set([tokenOf(TEAM_A)]));
    expect(new Set(postsIn("C0CHANB").map((c) => c.token))).toEqual(new Set([tokenOf(TEAM_B)]));
    await server.api(`/api/runs/${runB}/cancel`, { method: "POST" });
  });

  it("an org-wide install serves two of its workspaces, with its token", async () => {
    expect((await install({ enterprise_id: GRID, is_enterprise_install: true, user_id: "UADMING", bot_user_id: "UBOTG" })).status).toBe(
      200,
    );
    const from = (team: string) => ({ team, enterprise: GRID, orgWide: true });
    const one = await runOf(await mention("hello one", "UGRID1", "C0GRID1", from("T0GRIDW1")));
    const two = await runOf(await mention("hello two", "UGRID2", "C0GRID2", from("T0GRIDW2")));
    for (const run of [one, two]) await expect.poll(async () => (await summary(run)).status, { timeout: 15_000 }).toBe("completed");
    expect((await summary(one)).requested_by).toBe(`slack:${GRID}:UGRID1`);
    expect((await summary(two)).requested_by).toBe(`slack:${GRID}:UGRID2`);
    await slack.waitFor(() => postsIn("C0GRID1").length > 0 && postsIn("C0GRID2").length > 0);
    expect(new Set([...postsIn("C0GRID1"), ...postsIn("C0GRID2")].map((c) => c.token))).toEqual(new Set([tokenOf(GRID)]));
  });

  it("two concurrent refreshes of one installation spend its refresh token once", async () => {
    expect((await install({ team_id: TEAM_C, user_id: "UADMINC", bot_user_id: "UBOTC", expires_in: 3600 })).status).toBe(200);
    const first = slack.issuedTokens().find((t) => t.installation === TEAM_C)!;
    // Two events at once: each finds the token due (an hour left, under 2) and starts a refresh.
    await Promise.all([mention("hello c1", "UC1", "C0CHANC", { team: TEAM_C }), mention("hello c2", "UC2", "C0CHANC", { team: TEAM_C })]);
    await expect
      .poll(async () => Date.parse((await installations()).find((i) => i.installation_id === TEAM_C)?.token_expires_at ?? "0"), {
        timeout: 15_000,
      })
      .toBeGreaterThan(Date.now() + 2 * 3_600_000);
    expect(slack.refreshAttempts()).toEqual([{ refresh_token: first.refresh_token, answered: "ok" }]);
  });

  it("an uninstall of B leaves A posting; an admin's DELETE uninstalls the organisation (apps.uninstall)", async () => {
    const uninstalled = await postSlackEvent(
      `${server.url}/slack/events`,
      SECRET,
      envelope({ type: "app_uninstalled" }, `EvI${Date.now()}${++counter}`, { team: TEAM_B }),
    );
    expect(uninstalled.status).toBe(200);
    await expect.poll(async () => (await installations()).find((i) => i.installation_id === TEAM_B)?.status).toBe("uninstalled");
    expect(await receiptStatus(await mention("hello b", "UREQ2", "C0CHANB2", { team: TEAM_B }))).toBe(404);
    const runA = await runOf(await mention("hello again", "UREQ2", "C0CHANA2", { team: TEAM_A }));
    await expect.poll(async () => (await summary(runA)).status, { timeout: 15_000 }).toBe("completed");
    await slack.waitFor(() => postsIn("C0CHANA2").length > 0);
    expect(new Set(postsIn("C0CHANA2").map((c) => c.token))).toEqual(new Set([tokenOf(TEAM_A)]));

    const gridToken = tokenOf(GRID);
    const deleted = await server.api(`/api/slack/installations/${GRID}`, { method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(slack.calls("apps.uninstall").map((c) => c.token)).toEqual([gridToken]);
    expect((await installations()).find((i) => i.installation_id === GRID)?.status).toBe("uninstalled");
    expect((await installations()).find((i) => i.installation_id === TEAM_A)?.status).toBe("active");
    const audit = await (await server.api("/api/audit?action=slack.uninstall")).json();
    expect(JSON.stringify(audit)).toContain(`slack installation ${GRID}`);
  });
});
