// The Slack app's scope over real loopback HTTP (contract sections 14, 18 and
// 19): wrangler dev with the Slack app on, SLACK_TEAM_ID unset (so the
// installation's team is the one the Slack Web API stand-in's auth.test
// names), external channels and users at their defaults (off), and a low
// TRIGGER_RATE_PER_MINUTE. Requests are signed exactly as Slack signs them.
// The uninstall tests come last: a real app_uninstalled stops this server's
// posts for good.
import { describe, expect, it } from "vitest";
import { scriptMessage, TEST_TEAM_ID } from "../support/slack-signing";
import type { RecordedCall } from "../support/slack-stand-in";
import { useSlackE2e } from "../support/slack-e2e-setup";

const BOT = "UBOT0003";
const REQUESTER = "UREQUESTER3";
const APPROVER = "UAPPROVER3";
const CHANNEL = "C0SCOPE001";
const FOREIGN_TEAM = "T0FOREIGN";
const EXTERNAL_TEAM = "T0EXTERNAL";
const TRIGGERS_PER_MINUTE = 2;

const e2e = useSlackE2e({
  secret: "test-signing-secret-scope",
  botToken: "xoxb-test-bot-token-scope",
  bot: BOT,
  eventIdPrefix: "EvS",
  standInTeamId: TEST_TEAM_ID,
  startTimeoutMs: 120_000,
  vars: () => ({
    SLACK_APPROVERS: JSON.stringify([APPROVER]),
    SLACK_RETRY_BASE_MS: "100",
    SLACK_RETRY_MAX_INTERVAL_MS: "300",
    TRIGGER_RATE_PER_MINUTE: String(TRIGGERS_PER_MINUTE),
  }),
});
const { eventId, ts } = e2e;

/** Posts a signed mention; answers its event id. */
async function mention(
  text: string,
  options: { user?: string; team?: string; event?: Record<string, unknown>; channel?: string } = {},
): Promise<string> {
  const id = eventId();
  const event = {
    type: "app_mention",
    user: options.user ?? REQUESTER,
    text: `<@${BOT}> ${text}`,
    ts: ts(),
    channel: options.channel ?? CHANNEL,
    ...options.event,
  };
  const res = await e2e.postEvent(e2e.envelope(event, id, options.team));
  expect(res.status).toBe(200);
  return id;
}

async function receiptStatus(deliveryId: string): Promise<number> {
  return (await e2e.server.api(`/api/deliveries/${encodeURIComponent(deliveryId)}?source=slack`)).status;
}

async function runOf(deliveryId: string): Promise<string> {
  const res = await e2e.server.api(`/api/deliveries/${encodeURIComponent(deliveryId)}?source=slack`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { run_id: string }).run_id;
}

async function summary(runId: string): Promise<Record<string, any>> {
  return (await (await e2e.server.api(`/api/runs/${runId}`)).json()) as Record<string, any>;
}

async function runEvents(runId: string): Promise<Record<string, unknown>[]> {
  const text = await (await e2e.server.api(`/api/runs/${runId}/events`)).text();
  return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
}

function click(user: string, value: unknown, teams: { teamId?: string; userTeamId?: string } = {}) {
  return e2e.click({
    actionId: "approval_approve",
    user,
    channel: CHANNEL,
    value: JSON.stringify(value),
    ...teams,
  });
}

const CREATE = "mcp__demo__create_dashboard";
const writeScript = (title: string) => [
  { tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: { title } }] },
  { text: "done" },
];

type Block = { type: string; elements?: { action_id?: string; value?: string }[] };
const buttonsOf = (call: RecordedCall | undefined) =>
  ((call?.params.blocks ?? []) as Block[]).flatMap((b) => (b.type === "actions" ? (b.elements ?? []) : []));
const posted = (calls: RecordedCall[]) =>
  calls.filter((c) => c.answered === "ok" && ["chat.postMessage", "chat.update", "reactions.add"].includes(c.method));

/** Starts a run that stops at an approval (a different requester each time: the trigger limit is per principal). */
async function pendingApprovalRun(title: string, requester: string) {
  const runId = await runOf(await mention(scriptMessage(writeScript(title)), { user: requester }));
  await expect.poll(async () => (await summary(runId)).pending_approvals.length, { timeout: 10_000 }).toBe(1);
  const approval = (await summary(runId)).pending_approvals[0] as { approval_id: string };
  return { runId, value: { run_id: runId, approval_id: approval.approval_id, level: "approve" } };
}

describe("the installation's team (SLACK_TEAM_ID unset: auth.test's)", () => {
  it("another team's mention starts nothing; the installation team's starts a run for slack:<team>:<user>", async () => {
    const foreign = await mention("hello from elsewhere", { user: "UFOREIGN01", team: FOREIGN_TEAM });
    expect(await receiptStatus(foreign)).toBe(404);
    const home = await runOf(await mention("hello from home", { user: "UHOME00001" }));
    await expect.poll(async () => (await summary(home)).status, { timeout: 10_000 }).toBe("completed");
    expect(await summary(home)).toMatchObject({ user_id: "UHOME00001", requested_by: `slack:${TEST_TEAM_ID}:UHOME00001` });
  });

  it("another team's click decides nothing and is told nothing; the same user's click from the installation's team decides", async () => {
    const { runId, value } = await pendingApprovalRun("foreign-click", "UREQFOREIGN");
    expect((await click(APPROVER, value, { teamId: FOREIGN_TEAM })).status).toBe(200);
    expect((await summary(runId)).pending_approvals).toHaveLength(1);

    expect((await click(APPROVER, value)).status).toBe(200);
    await expect.poll(async () => (await summary(runId)).status, { timeout: 15_000 }).toBe("completed");
    expect((await runEvents(runId)).find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "approved",
      decided_by: `slack:${TEST_TEAM_ID}:${APPROVER}`,
    });
    // The foreign click got no ephemeral either.
    expect(e2e.slack.calls("chat.postEphemeral")).toEqual([]);
  });
});

describe("users from another organisation (SLACK_ALLOW_EXTERNAL_USERS unset: false)", () => {
  it("an external user's mention in the installation's workspace starts nothing (user_team, else team)", async () => {
    const byUserTeam = await mention("hi", { user: "UEXTERNAL1", event: { user_team: EXTERNAL_TEAM, team: TEST_TEAM_ID } });
    const byTeam = await mention("hi", { user: "UEXTERNAL2", event: { team: EXTERNAL_TEAM } });
    expect([await receiptStatus(byUserTeam), await receiptStatus(byTeam)]).toEqual([404, 404]);
  });

  it("an external user's click decides nothing and is told so, even with a listed user id", async () => {
    const { runId, value } = await pendingApprovalRun("external-click", "UREQEXTERN");
    expect((await click(APPROVER, value, { userTeamId: EXTERNAL_TEAM })).status).toBe(200);
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral"));
    const [refusal] = e2e.slack.calls("chat.postEphemeral");
    expect(refusal?.params).toMatchObject({ channel: CHANNEL, user: APPROVER });
    expect(String(refusal?.params.text)).toMatch(/outside this organisation/);
    expect((await summary(runId)).pending_approvals).toHaveLength(1);
    await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" });
  });
});

describe("external channels (SLACK_ALLOW_EXTERNAL_CHANNELS unset: false)", () => {
  it("a channel conversations.info reports shared with another organisation gets no posts; an internal one does", async () => {
    const shared = "C0SHARED01";
    e2e.slack.markExternal(shared, { is_ext_shared: true });
    const sharedRun = await runOf(await mention("in a shared channel", { user: "UCHANNEL01", channel: shared }));
    const internalRun = await runOf(await mention("in an internal channel", { user: "UCHANNEL02" }));
    for (const run of [sharedRun, internalRun])
      await expect.poll(async () => (await summary(run)).status, { timeout: 10_000 }).toBe("completed");
    await expect.poll(async () => (await summary(sharedRun)).slack_posts_pending, { timeout: 10_000 }).toBe(0);
    await e2e.slack.waitFor((c) => posted(c).some((x) => String(x.params.text).includes("in an internal channel")));
    expect(posted(e2e.slack.calls()).filter((c) => c.params.channel === shared)).toEqual([]);
    expect(e2e.slack.calls("conversations.info").map((c) => c.params.channel)).toContain(shared);
    expect((await summary(sharedRun)).slack_posts_failed).toBeGreaterThan(0);
  });
});

describe("the trigger limit in Slack (contract section 18)", () => {
  it("a mention past TRIGGER_RATE_PER_MINUTE starts nothing and is answered ephemerally; Slack's retry of an earlier one is not counted", async () => {
    const user = "URATELIMIT1";
    const firstId = eventId();
    const first = e2e.envelope({ type: "app_mention", user, text: `<@${BOT}> one`, ts: ts(), channel: CHANNEL }, firstId);
    expect((await e2e.postEvent(first)).status).toBe(200);
    await mention("two", { user });
    const over = await mention("three", { user });
    expect(await receiptStatus(over)).toBe(404);
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral"));
    const [answer] = e2e.slack.calls("chat.postEphemeral");
    expect(answer?.params).toMatchObject({ channel: CHANNEL, user });
    expect(String(answer?.params.text)).toMatch(new RegExp(`more than ${TRIGGERS_PER_MINUTE} runs within a minute.*Try again in \\d+ s`));
    // Slack's retry of the first mention finds its run and is neither counted nor refused.
    const runId = await runOf(firstId);
    expect((await e2e.postEvent(first, { retryNum: 1 })).status).toBe(200);
    expect(await runOf(firstId)).toBe(runId);
    expect(e2e.slack.calls("chat.postEphemeral")).toHaveLength(1);
    // Another person is not held back by this one's limit.
    expect(await receiptStatus(await mention("someone else", { user: "URATELIMIT2" }))).toBe(200);
  });
});

describe("a cancelled Slack run", () => {
  it("its approval message loses its buttons and says it was cancelled, and the thread is told", async () => {
    const { runId } = await pendingApprovalRun("to-cancel", "UCANCEL001");
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postMessage" && buttonsOf(x).length > 0));
    expect((await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" })).status).toBe(202);
    // A cancelled run ends as run_failed with the code `cancelled` (contract section 6).
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("failed");
    expect((await runEvents(runId)).find((e) => e.type === "run_failed")).toMatchObject({ error: { code: "cancelled" } });
    const runCancelledPost = (x: RecordedCall) =>
      x.method === "chat.postMessage" && JSON.stringify(x.params.blocks ?? []).includes("The run was cancelled.");
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.update") && c.some(runCancelledPost));
    const update = e2e.slack.calls("chat.update")[0]!;
    expect(buttonsOf(update)).toEqual([]);
    expect(JSON.stringify(update.params.blocks)).toContain("Cancelled with the run");
    // In the run's thread, after the approval's update.
    const cancelled = e2e.slack.calls().find(runCancelledPost)!;
    const approvalPost = e2e.slack.calls("chat.postMessage").find((x) => buttonsOf(x).length > 0)!;
    expect(cancelled.params).toMatchObject({ channel: CHANNEL, thread_ts: approvalPost.params.thread_ts });
    expect(cancelled.seq).toBeGreaterThan(update.seq);
    await expect.poll(async () => (await summary(runId)).slack_posts_pending, { timeout: 10_000 }).toBe(0);
    expect((await summary(runId)).slack_posts_failed).toBe(0);
  });
});

// Last: the installation team's app_uninstalled stops this server's posts for good.
describe("app_uninstalled and tokens_revoked", () => {
  const uninstalled = (team: string) => e2e.postEvent(e2e.envelope({ type: "app_uninstalled", event_ts: ts() }, eventId(), team));
  const revoked = (team: string) =>
    e2e.postEvent(e2e.envelope({ type: "tokens_revoked", tokens: { oauth: [], bot: [BOT] }, event_ts: ts() }, eventId(), team));

  it("from another team, stop nothing: the next run's posts arrive", async () => {
    expect((await uninstalled(FOREIGN_TEAM)).status).toBe(200);
    expect((await revoked(FOREIGN_TEAM)).status).toBe(200);
    const runId = await runOf(await mention("still posting", { user: "UUNINST001" }));
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("completed");
    await e2e.slack.waitFor((c) => posted(c).some((x) => String(x.params.text).includes("still posting")));
    expect((await summary(runId)).slack_posts_failed).toBe(0);
  });

  it("from the installation's team, stop the next run's posts", async () => {
    expect((await uninstalled(TEST_TEAM_ID)).status).toBe(200);
    e2e.slack.reset();
    const runId = await runOf(await mention("after the uninstall", { user: "UUNINST002" }));
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("completed");
    await expect.poll(async () => (await summary(runId)).slack_posts_pending, { timeout: 10_000 }).toBe(0);
    expect((await summary(runId)).slack_posts_failed).toBeGreaterThan(0);
    expect(posted(e2e.slack.calls())).toEqual([]);
  });
});
