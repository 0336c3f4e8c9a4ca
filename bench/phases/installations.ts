// Phase 22, a click to its ephemeral with two Slack installations (issue 34,
// contract section 26): the installation lookup's cost. One run waits on an
// approval; a signed block_actions Approve click that the engine refuses is
// sent again and again, one at a time, and each is timed from just before
// the request to its HTTP answer (the acknowledgement) and to the
// chat.postEphemeral that tells the clicker why, as the Slack stand-in (in
// this process) records it. Two servers, one after the other, the same
// demo MCP server:
//   - single workspace (SLACK_BOT_TOKEN, SLACK_APPROVERS): the click of a
//     user who is not an approver (the floor: no installation to look up);
//   - two installations (SLACK_CLIENT_ID ... PUBLIC_URL; workspaces A and B
//     installed through the stand-in's OAuth, as
//     test/e2e/slack-installations.test.ts does; one approver in A): the run
//     is A's; first the clicks of a user of A who is not an approver (the
//     same refusal as the floor's, plus the installation lookup), then those
//     of a user of B (the installation rule refuses it: "no longer exists",
//     a shorter path, posted with B's token).
// Nothing is decided and nothing executes, so one run serves every sample.
// `BENCH_ONLY=installations npm run bench` runs it alone.
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { blockActionsPayload, postSlackEvent, postSlackInteraction, scriptMessage } from "../../test/support/slack-signing";
import { type InstallGrant, type RecordedCall, type SlackStandIn, startSlackStandIn } from "../../test/support/slack-stand-in";
import { freePort } from "../../test/support/worker-server";
import { log, percentile, range, sortedCopy, Waiter } from "../http-client";
import { startDemo, withServer } from "../servers";
import { CREATE_DASHBOARD, count } from "../settings";
import { approvalVars } from "../watched-run";
import { buttonsOf, mentionRun, SIGNING_SECRET, slackVars, startBenchSlack } from "./slack";

const SAMPLES = count(200, 10);
const WARMUP = count(10, 3);
const TEAM_A = "T0BENCHA";
const TEAM_B = "T0BENCHB";
const OUTSIDER_USER = "UBENCHNOTAPPROVER";

export interface InstallationFigures {
  mode: string;
  /** Click sent → its HTTP answer, ms, sorted. */
  ack: number[];
  /** Click sent → chat.postEphemeral at the stand-in, ms, sorted. */
  ephemeral: number[];
  /** Clicks that got another answer than 200 or no ephemeral. */
  failures: number;
  /** The ephemeral's text (the first one), to show which refusal was timed. */
  text: string;
}

/** Times SAMPLES clicks (after WARMUP) whose ephemeral lands in `channel`. */
async function timeClicks(
  url: string,
  channel: string,
  payload: (n: number) => Record<string, unknown>,
  calls: { call: RecordedCall; at: number }[],
  waiter: Waiter,
  mode: InstallationFigures["mode"],
): Promise<InstallationFigures> {
  const out: InstallationFigures = { mode, ack: [], ephemeral: [], failures: 0, text: "" };
  for (const n of range(WARMUP + SAMPLES)) {
    const seen = calls.length;
    const ephemeralCall = () => calls.slice(seen).find((c) => c.call.method === "chat.postEphemeral" && c.call.params.channel === channel);
    const sent = performance.now();
    const res = await postSlackInteraction(`${url}/slack/interactivity`, SIGNING_SECRET, payload(n));
    await res.text();
    const acked = performance.now();
    if (res.status !== 200) {
      out.failures += 1;
      continue;
    }
    try {
      await waiter.until(() => ephemeralCall() !== undefined, `the ephemeral of click ${n} in ${channel}`);
    } catch {
      out.failures += 1;
      continue;
    }
    const eph = ephemeralCall()!;
    if (!out.text) out.text = String(eph.call.params.text ?? "").slice(0, 80);
    if (n < WARMUP) continue;
    out.ack.push(acked - sent);
    out.ephemeral.push(eph.at - sent);
  }
  return { ...out, ack: sortedCopy(out.ack), ephemeral: sortedCopy(out.ephemeral) };
}

/** The approval message's Approve button value in `channel`, once posted. */
async function approveValue(calls: { call: RecordedCall }[], channel: string, waiter: Waiter): Promise<string> {
  const post = () =>
    calls.find(
      (c) =>
        c.call.method === "chat.postMessage" &&
        c.call.params.channel === channel &&
        buttonsOf(c.call).some((b) => b.action_id === "approval_approve"),
    );
  await waiter.until(() => post() !== undefined, `the approval post in ${channel}`);
  return buttonsOf(post()!.call).find((b) => b.action_id === "approval_approve")!.value!;
}

function recorder() {
  const calls: { call: RecordedCall; at: number }[] = [];
  const waiter = new Waiter();
  const onCall = (call: RecordedCall) => {
    calls.push({ call, at: performance.now() });
    waiter.notify();
  };
  return { calls, waiter, onCall };
}

async function singleWorkspace(mcpUrl: string): Promise<InstallationFigures> {
  const { calls, waiter, onCall } = recorder();
  const slack = await startBenchSlack(onCall);
  try {
    return await withServer(
      async (server) => {
        log(`22. click → ephemeral, single workspace: ${WARMUP} + ${SAMPLES} clicks of a user who is not an approver`);
        const channel = `CINSTSINGLE${Date.now()}`;
        await mentionRun(server.url, channel, `EvInstSingle${Date.now()}`, `installations single ${Date.now()}`, 1);
        const value = await approveValue(calls, channel, waiter);
        const payload = (n: number) =>
          blockActionsPayload({
            actionId: "approval_approve",
            user: OUTSIDER_USER,
            channel,
            value,
            triggerId: `bench-inst-${n}`,
            botUserId: "UBENCHBOT",
          });
        return timeClicks(server.url, channel, payload, calls, waiter, "single workspace");
      },
      { ...slackVars(mcpUrl, slack), TRIGGER_RATE_PER_MINUTE: "0", APPROVAL_TIMEOUT_MS: "3600000" },
    );
  } finally {
    await slack.stop();
  }
}

/** An Events API envelope from a workspace installed on its own (as the installations e2e test builds it). */
function envelope(event: Record<string, unknown>, id: string, team: string) {
  return {
    token: "legacy",
    team_id: team,
    api_app_id: "A0STANDIN",
    event,
    type: "event_callback",
    event_id: id,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ enterprise_id: null, team_id: team, user_id: "UBOTX", is_bot: true, is_enterprise_install: false }],
  };
}

/** Signs in to the console (POST /console/session) with `token`: the session cookie (test/support/e2e-client.ts does the same under vitest). */
async function consoleCookie(baseUrl: string, token: string): Promise<string> {
  const res = await fetch(`${baseUrl}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: baseUrl },
    body: JSON.stringify({ token }),
  });
  await res.text();
  if (res.status !== 204) throw new Error(`POST /console/session: ${res.status}`);
  return res.headers.get("set-cookie")!.split(";")[0]!;
}

/** Installs `grant` through /slack/install and the stand-in's authorize page, as an admin's browser would. */
async function install(slack: SlackStandIn, url: string, cookie: string, grant: InstallGrant): Promise<void> {
  slack.queueGrant(grant);
  const start = await fetch(`${url}/slack/install`, { headers: { cookie }, redirect: "manual" });
  await start.text();
  if (start.status !== 302) throw new Error(`GET /slack/install: ${start.status}`);
  const installCookie = (start.headers.get("set-cookie") ?? "").split(";")[0]!;
  const answer = await fetch(new URL(start.headers.get("location")!), { redirect: "manual" });
  await answer.text();
  const back = await fetch(answer.headers.get("location")!, { headers: { cookie: `${installCookie}; ${cookie}` }, redirect: "manual" });
  await back.text();
  if (back.status !== 200) throw new Error(`installing ${grant.team_id}: ${back.status}`);
}

async function twoInstallations(mcpUrl: string): Promise<InstallationFigures[]> {
  const { calls, waiter, onCall } = recorder();
  const slack = await startSlackStandIn({ quiet: true, onCall });
  const port = await freePort();
  try {
    return await withServer(
      async (server) => {
        log("22. click → ephemeral, two installations (A and B), a run of A waiting on its approval");
        const cookie = await consoleCookie(server.url, server.token);
        await install(slack, server.url, cookie, { team_id: TEAM_A, user_id: "UADMINA", bot_user_id: "UBOTA" });
        await install(slack, server.url, cookie, { team_id: TEAM_B, user_id: "UADMINB", bot_user_id: "UBOTB" });
        const channel = `CINSTA${Date.now()}`;
        const eventId = `EvInstA${Date.now()}`;
        const script = [
          { tool_calls: [{ tool_name: CREATE_DASHBOARD, tool_call_id: "call-1", arguments: { title: `installations ${Date.now()}` } }] },
          { text: "done" },
        ];
        const event = {
          type: "app_mention",
          user: "UREQA",
          text: `<@UBOTX> ${scriptMessage(script)}`,
          ts: `${Math.floor(Date.now() / 1000)}.000001`,
          channel,
        };
        const res = await postSlackEvent(`${server.url}/slack/events`, SIGNING_SECRET, envelope(event, eventId, TEAM_A));
        await res.text();
        if (res.status !== 200) throw new Error(`app_mention in workspace A: ${res.status}`);
        const value = await approveValue(calls, channel, waiter).catch(async (err: unknown) => {
          const delivery = await fetch(`${server.url}/api/deliveries/${encodeURIComponent(eventId)}?source=slack`, {
            headers: { authorization: `Bearer ${server.token}` },
          });
          const seen = calls.map((c) => `${c.call.method} ${String(c.call.params.channel ?? "")}`).join(", ");
          throw new Error(`${String(err)}; delivery ${delivery.status} ${await delivery.text()}; the stand-in saw: ${seen}`);
        });
        const payload = (team: string, user: string) => (n: number) => ({
          type: "block_actions",
          user: { id: user, username: "u", name: "u", team_id: team },
          api_app_id: "A0STANDIN",
          token: "legacy",
          container: { type: "message", message_ts: "1.000001", channel_id: channel, is_ephemeral: false },
          trigger_id: `bench-inst-${n}`,
          team: { id: team, domain: "bench" },
          channel: { id: channel, name: "ops" },
          message: { type: "message", ts: "1.000001", thread_ts: "1.000000", text: "approval", user: "UBOTX", bot_id: "B0001" },
          actions: [
            {
              type: "button",
              action_id: "approval_approve",
              block_id: "b",
              value,
              text: { type: "plain_text", text: "Approve" },
              action_ts: "1",
            },
          ],
        });
        log(`22. the same, ${WARMUP} + ${SAMPLES} clicks of a user of workspace A who is not an approver`);
        const own = await timeClicks(server.url, channel, payload(TEAM_A, OUTSIDER_USER), calls, waiter, "2 installs, A user");
        log(`22. the same, ${WARMUP} + ${SAMPLES} clicks of a user of workspace B`);
        const foreign = await timeClicks(server.url, channel, payload(TEAM_B, "UREQA"), calls, waiter, "2 installs, B user");
        return [own, foreign];
      },
      {
        ...approvalVars(mcpUrl),
        TRIGGER_RATE_PER_MINUTE: "0",
        APPROVAL_TIMEOUT_MS: "3600000",
        ADMISSION_TIMEOUT_MS: "3600000",
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        SLACK_CLIENT_ID: "1111.2222",
        SLACK_CLIENT_SECRET: randomBytes(16).toString("hex"),
        SLACK_INSTALL_KEY: JSON.stringify([randomBytes(32).toString("base64")]),
        SLACK_ALLOWED_TEAMS: JSON.stringify([TEAM_A, TEAM_B]),
        SLACK_API_BASE_URL: slack.apiBaseUrl,
        SLACK_OAUTH_BASE_URL: `${slack.url}/`,
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        // One approver in A: A's other users are refused as not approvers (as in single-workspace mode), B's by the installation rule.
        TOOL_POLICY: JSON.stringify({ [CREATE_DASHBOARD]: { approvers: [`slack:${TEAM_A}:UAPPROVERA`] } }),
        CONSOLE_SESSION_SECRET: randomBytes(24).toString("hex"),
      },
      { port },
    );
  } finally {
    await slack.stop();
  }
}

/** Phase 22: the two servers, one after the other; `demo` is the run's demo MCP server (started here when absent). */
export async function installationsPhase(given?: { url: string }): Promise<InstallationFigures[]> {
  const demo = given ?? (await startDemo());
  return [await singleWorkspace(demo.url), ...(await twoInstallations(demo.url))];
}

export function installationsReport(figures: InstallationFigures[], load: { before: string; after: string }): string {
  const ms = (n: number) => `${n.toFixed(2)} ms`.padStart(10);
  const pp = (xs: number[]) => (xs.length === 0 ? "n/a" : `p50 ${ms(percentile(xs, 50))}  p99 ${ms(percentile(xs, 99))}`);
  return [
    "",
    `22. A refused Slack click → its ephemeral, one workspace vs two installations (issue 34; wrangler dev's port, one click at a time; load average ${load.before} → ${load.after}, a shared machine)`,
    ...figures.flatMap((f) => [
      `  ${f.mode.padEnd(20)} ${f.ack.length} clicks  → HTTP answer ${pp(f.ack)}  → chat.postEphemeral ${pp(f.ephemeral)}  failures ${f.failures}`,
      `  ${"".padEnd(20)} (the ephemeral: "${f.text}")`,
    ]),
    "",
  ].join("\n");
}
