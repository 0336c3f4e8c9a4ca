// The Slack Home tab's publishing (contract section 19) over real D1 (the
// migrations applied, 0017's openers included) and real HTTP to the Slack Web
// API stand-in: published again only to openers of the last 7 days whose
// list changed, at most once per user per SLACK_HOME_REPUBLISH_MS (stepped
// with the clock passed in, never slept); each opener judged as their click
// would be, their person from users.info (kept with the opener, migration
// 0020) and the requester's as the run's index keeps it.
import { env, SELF } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { recordChannelCheck } from "../../src/slack/channel-checks";
import { publishHomeNow, recordHomeOpened, refreshHomes } from "../../src/slack/home-publish";
import { createSlackClient } from "../../src/slack/web-api";
import { freshAddress, TOKEN } from "./helpers";

const standIn = env.SLACK_STAND_IN_URL;
const client = createSlackClient({ SLACK_BOT_TOKEN: "xoxb-runtime-test", SLACK_API_BASE_URL: `${standIn}/api/` });
const INTERVAL_MS = 1_000;
const settings = {
  TOOL_POLICY: {},
  APPROVER_GROUPS: {},
  SLACK_APPROVERS: ["U0HOMEAPP"],
  SLACK_ALLOW_EXTERNAL_CHANNELS: false,
  SLACK_HOME_REPUBLISH_MS: INTERVAL_MS,
  console_origin: "https://aee.example",
};

interface Call {
  method: string;
  params: Record<string, unknown>;
}
const published = async (user: string): Promise<string[]> =>
  ((await (await fetch(`${standIn}/_calls`)).json()) as Call[])
    .filter((c) => c.method === "views.publish" && c.params.user_id === user)
    .map((c) => (typeof c.params.view === "string" ? c.params.view : JSON.stringify(c.params.view)));

let n = 0;
async function pendingApproval(channel: string, now: number, requesterPerson: string | null = null): Promise<string> {
  const id = `${Date.now()}${++n}`;
  const created = new Date(now).toISOString();
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO runs (run_id, channel_id, user_id, source, status, created_at, requested_by, requester_person)
       VALUES (?, ?, ?, 'slack', 'running', ?, 'slack:T0HOME:U0HOMEREQ', ?)`,
    ).bind(`run_home${id}`, channel, "U0HOMEREQ", created, requesterPerson),
    env.DB.prepare(
      `INSERT INTO approvals (approval_id, run_id, channel_id, tool_call_id, tool_name, level, description, arguments_json, requested_at, expires_at, status)
       VALUES (?, ?, ?, 'c1', 'mcp__demo__create_dashboard', 'approve', 'd', '{"title":"t"}', ?, ?, 'pending')`,
    ).bind(`ap_home${id}`, `run_home${id}`, channel, created, new Date(now + 3_600_000).toISOString()),
  ]);
  return `ap_home${id}`;
}

/** A Slack user of the installation's team, as the Home tab sees them. */
const viewer = (user: string) => ({ user, principal: `slack:T0HOME:${user}`, team: "T0HOME", person: `slack:T0HOME:${user}` });

beforeEach(async () => {
  await fetch(`${standIn}/_control`, { method: "POST", body: JSON.stringify({ reset: true }) });
  // Each test starts with no opener and none of the earlier tests' approvals.
  await env.DB.batch([
    env.DB.prepare(`DELETE FROM slack_home_openers`),
    env.DB.prepare(`DELETE FROM approvals WHERE run_id LIKE 'run_home%'`),
    env.DB.prepare(`DELETE FROM inputs WHERE run_id LIKE 'run_home%'`),
    env.DB.prepare(`DELETE FROM slack_channel_checks`),
  ]);
});

const lookups = async (): Promise<number> =>
  ((await (await fetch(`${standIn}/_calls`)).json()) as Call[]).filter((c) => c.method === "conversations.info").length;

describe("the Home tab's halt line (contract section 23)", () => {
  it("names the active halts atop the tab from its next publish, and no longer once released", async () => {
    const now = Date.now();
    await recordHomeOpened(env.DB, viewer("U0HOMEAPP"), now);
    const engaged = await (
      await SELF.fetch("https://engine.test/api/halts", {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "cf-connecting-ip": freshAddress() },
        body: JSON.stringify({ scope: "server:demo", reason: "home tab test" }),
      })
    ).json<{ halt_id: string }>();
    // No tab is published for the halt itself.
    expect(await published("U0HOMEAPP")).toEqual([]);
    await publishHomeNow(env.DB, client, viewer("U0HOMEAPP"), settings, now);
    const view = JSON.parse((await published("U0HOMEAPP"))[0]!);
    expect(view.blocks[0].type).toBe("section");
    expect(view.blocks[0].text.text).toContain("Mutations are halted");
    expect(view.blocks[0].text.text).toContain(engaged.halt_id);
    expect(view.blocks[0].text.text).toContain("server:demo");
    const released = await SELF.fetch(`https://engine.test/api/halts/${engaged.halt_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}`, "cf-connecting-ip": freshAddress() },
    });
    expect(released.status).toBe(200);
    await publishHomeNow(env.DB, client, viewer("U0HOMEAPP"), settings, now + 10 * INTERVAL_MS);
    expect((await published("U0HOMEAPP")).at(-1)).not.toContain("Mutations are halted");
  });
});

describe("the Home tab's republishing", () => {
  it("asks conversations.info once per channel, not for every user's tab on every publish; the run's own check serves (issue 29)", async () => {
    const now = Date.now();
    for (const user of ["U0HOMEAPP", "U0HOMEAP2", "U0HOMEAP3"]) await recordHomeOpened(env.DB, viewer(user), now);
    const settingsOf = { ...settings, SLACK_APPROVERS: ["U0HOMEAPP", "U0HOMEAP2", "U0HOMEAP3"] };
    await pendingApproval("C0HOMEA1", now);
    await pendingApproval("C0HOMEA2", now);
    expect(await refreshHomes(env.DB, client, settingsOf, now)).toBeNull();
    expect(await lookups()).toBe(2);
    await pendingApproval("C0HOMEA1", now);
    expect(await refreshHomes(env.DB, client, settingsOf, now + 10 * INTERVAL_MS)).toBeNull();
    await publishHomeNow(env.DB, client, viewer("U0HOMEAP2"), settingsOf, now + 20 * INTERVAL_MS);
    expect(await lookups()).toBe(2);
    expect(await published("U0HOMEAP3")).toHaveLength(2);
    // A channel the run's outbox checked is not asked again.
    await recordChannelCheck(env.DB, "C0HOMEA3", true, now);
    const checked = await pendingApproval("C0HOMEA3", now);
    expect(await refreshHomes(env.DB, client, settingsOf, now + 30 * INTERVAL_MS)).toBeNull();
    expect(await lookups()).toBe(2);
    expect((await published("U0HOMEAPP")).at(-1)).toContain(checked);
  });

  it("a rate-limited lookup hides nothing that was shown: the tabs wait for Retry-After, then show both (issue 29)", async () => {
    const now = Date.now();
    await recordHomeOpened(env.DB, viewer("U0HOMEAPP"), now);
    const shown = await pendingApproval("C0HOMEB1", now);
    await publishHomeNow(env.DB, client, viewer("U0HOMEAPP"), settings, now);
    expect((await published("U0HOMEAPP"))[0]).toContain(shown);
    const added = await pendingApproval("C0HOMEB2", now);
    await fetch(`${standIn}/_control`, {
      method: "POST",
      body: JSON.stringify({ fail: { count: 1, fault: { kind: "429", retry_after_s: 7 } } }),
    });
    const later = now + 10 * INTERVAL_MS;
    expect(await refreshHomes(env.DB, client, settings, later)).toBe(later + 7_000);
    // Nothing published while the channel is unknown: the tab still shows the approval it showed.
    expect(await published("U0HOMEAPP")).toHaveLength(1);
    expect(await refreshHomes(env.DB, client, settings, later + 7_000)).toBeNull();
    const views = await published("U0HOMEAPP");
    expect(views).toHaveLength(2);
    expect(views[1]).toContain(shown);
    expect(views[1]).toContain(added);
  });

  it("publishes a change once, holds the next one until the interval has passed, and skips an unchanged list", async () => {
    const now = Date.now();
    await recordHomeOpened(env.DB, viewer("U0HOMEAPP"), now);
    await publishHomeNow(env.DB, client, viewer("U0HOMEAPP"), settings, now);
    expect(await published("U0HOMEAPP")).toHaveLength(1);

    const first = await pendingApproval("C0HOME01", now);
    expect(await refreshHomes(env.DB, client, settings, now)).toBe(now + INTERVAL_MS);
    expect(await published("U0HOMEAPP")).toHaveLength(1);
    expect(await refreshHomes(env.DB, client, settings, now + INTERVAL_MS)).toBeNull();
    const views = await published("U0HOMEAPP");
    expect(views).toHaveLength(2);
    expect(views[1]).toContain(first);
    expect(views[1]).toContain("https://aee.example/console#/runs/");

    // Unchanged: nothing is published, however long after.
    expect(await refreshHomes(env.DB, client, settings, now + 10 * INTERVAL_MS)).toBeNull();
    expect(await published("U0HOMEAPP")).toHaveLength(2);
  });

  it("leaves out approvals in a channel shared with another organisation, and users who did not open the tab in the last 7 days", async () => {
    const now = Date.now();
    await fetch(`${standIn}/_control`, { method: "POST", body: JSON.stringify({ external: "C0HOMEEXT" }) });
    const external = await pendingApproval("C0HOMEEXT", now);
    await recordHomeOpened(env.DB, viewer("U0HOMEAPP"), now);
    await publishHomeNow(env.DB, client, viewer("U0HOMEAPP"), settings, now);
    expect((await published("U0HOMEAPP"))[0]).not.toContain(external);

    await recordHomeOpened(env.DB, viewer("U0HOMEREQ"), now - 8 * 24 * 3_600_000);
    await pendingApproval("C0HOME02", now);
    await refreshHomes(env.DB, client, settings, now + 10 * INTERVAL_MS);
    expect(await published("U0HOMEREQ")).toEqual([]);
  });

  it("judges each opener as their click would be: a person not kept yet is looked up, the requester's person may only deny", async () => {
    const now = Date.now();
    const forbidding = {
      ...settings,
      TOOL_POLICY: { mcp__demo__create_dashboard: { self_approval: false } },
      SLACK_APPROVERS: ["U0HOMEALT", "U0HOMEBOB"],
    };
    for (const [user, email] of [
      ["U0HOMEALT", "Ann@Acme.com"],
      ["U0HOMEBOB", "bob@acme.com"],
    ]) {
      await fetch(`${standIn}/_control`, { method: "POST", body: JSON.stringify({ email: { user, email, confirmed: true } }) });
    }
    // Ann asked in Slack (the run keeps her person); her second Slack account opened the tab before persons were kept.
    const approvalId = await pendingApproval("C0HOME03", now, "access:ann@acme.com");
    await env.DB.prepare(`INSERT INTO slack_home_openers (user_id, principal, team, opened_at) VALUES (?, ?, ?, ?)`)
      .bind("U0HOMEALT", "slack:T0HOME:U0HOMEALT", "T0HOME", new Date(now).toISOString())
      .run();
    await recordHomeOpened(env.DB, { ...viewer("U0HOMEBOB"), person: "access:bob@acme.com" }, now);
    expect(await refreshHomes(env.DB, client, forbidding, now)).toBeNull();

    const actions = (view: string) => [...view.matchAll(/"action_id":"([a-z_]+)"/g)].map((m) => m[1]);
    const [ann] = await published("U0HOMEALT");
    expect(ann).toContain(approvalId);
    expect(actions(ann!)).toEqual(["approval_deny", "home_open_console"]);
    expect(ann).toContain("another person must approve this call");
    const kept = await env.DB.prepare(`SELECT person FROM slack_home_openers WHERE user_id = ?`)
      .bind("U0HOMEALT")
      .first<{ person: string }>();
    expect(kept?.person).toBe("access:ann@acme.com");
    const [bob] = await published("U0HOMEBOB");
    expect(actions(bob!)).toEqual(["approval_approve", "approval_deny", "home_open_console"]);
  });

  it("offers no Approve on a two-person approval to the opener whose vote the listing holds; another approver keeps it", async () => {
    const now = Date.now();
    const quorum = {
      ...settings,
      TOOL_POLICY: { mcp__demo__create_dashboard: { approvals_required: 2 } },
      SLACK_APPROVERS: ["U0HOMEAPP", "U0HOMEBOB"],
    };
    const approvalId = await pendingApproval("C0HOME05", now);
    // The run's index wrote the first vote (run-index.ts's vote mark).
    await env.DB.prepare(`UPDATE approvals SET required = 2, approvals_json = ? WHERE approval_id = ?`)
      .bind(JSON.stringify([{ by: "slack:T0HOME:U0HOMEAPP", at: new Date(now).toISOString() }]), approvalId)
      .run();
    await recordHomeOpened(env.DB, viewer("U0HOMEAPP"), now);
    await recordHomeOpened(env.DB, viewer("U0HOMEBOB"), now);
    expect(await refreshHomes(env.DB, client, quorum, now)).toBeNull();
    const actions = (view: string) => [...view.matchAll(/"action_id":"([a-z_]+)"/g)].map((m) => m[1]);
    const [voter] = await published("U0HOMEAPP");
    expect(voter).toContain(approvalId);
    expect(actions(voter!)).toEqual(["approval_deny", "home_open_console"]);
    expect(voter).toContain("Your approval is counted");
    const [bob] = await published("U0HOMEBOB");
    expect(actions(bob!)).toEqual(["approval_approve", "approval_deny", "home_open_console"]);
  });

  it("lists an MCP question mid-call to those eligible to approve its call, with Answer… and Decline carrying its input_id", async () => {
    const now = Date.now();
    const runId = `run_home${now}q`;
    const created = new Date(now).toISOString();
    const expires = new Date(now + 3_600_000).toISOString();
    const guarded = { ...settings, TOOL_POLICY: { mcp__demo__schedule_report: { approvers: ["slack:T0HOME:U0HOMESRE"] } } };
    const schema = JSON.stringify({ type: "object", properties: { recipient: { type: "string" } } });
    const question = (key: string, status: string) =>
      env.DB.prepare(
        `INSERT INTO inputs (run_id, input_key, tool_call_id, input_id, channel_id, question, requested_schema, tool_name, requested_at,
                             expires_at, status)
         VALUES (?, ?, 'call-1', ?, 'C0HOME04', ?, ?, 'mcp__demo__schedule_report', ?, ?, ?)`,
      ).bind(runId, `call-1:1:${key}`, `call-1:1:${key}`, `To whom (${key})?`, schema, created, expires, status);
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO runs (run_id, channel_id, user_id, source, status, created_at, requested_by)
         VALUES (?, 'C0HOME04', 'U0HOMEREQ', 'slack', 'running', ?, 'slack:T0HOME:U0HOMEREQ')`,
      ).bind(runId, created),
      question("open", "pending"),
      question("done", "answered"),
      env.DB.prepare(
        `INSERT INTO inputs (run_id, input_key, tool_call_id, channel_id, question, requested_at, expires_at, status)
         VALUES (?, 'ask-1', 'ask-1', 'C0HOME04', 'Which team?', ?, ?, 'pending')`,
      ).bind(runId, created, expires),
    ]);
    await recordHomeOpened(env.DB, viewer("U0HOMESRE"), now);
    await recordHomeOpened(env.DB, viewer("U0HOMEREQ"), now);
    expect(await refreshHomes(env.DB, client, guarded, now)).toBeNull();

    const actions = (view: string) => [...view.matchAll(/"action_id":"([a-z_]+)"/g)].map((m) => m[1]);
    // The tool's approver: its question (not the answered one), and not the human__ask (the default rule is the requester's).
    const [sre] = await published("U0HOMESRE");
    expect(actions(sre!)).toEqual(["input_answer", "input_decline", "home_open_console"]);
    expect(sre).toContain("To whom (open)?");
    expect(sre).not.toContain("(done)");
    expect(sre).toContain(
      JSON.stringify(JSON.stringify({ run_id: runId, tool_call_id: "call-1", input_id: "call-1:1:open", channel_id: "C0HOME04" })).slice(
        1,
        -1,
      ),
    );
    // The requester: their human__ask only, since approvers govern the MCP question's call.
    const [req] = await published("U0HOMEREQ");
    expect(actions(req!)).toEqual(["input_answer"]);
    expect(req).toContain("Which team?");
    expect(req).not.toContain("To whom");
  });
});
