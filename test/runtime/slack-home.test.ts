// The Slack Home tab's publishing (contract section 19) over real D1 (the
// migrations applied, 0017's openers included) and real HTTP to the Slack Web
// API stand-in: published again only to openers of the last 7 days whose
// list changed, at most once per user per SLACK_HOME_REPUBLISH_MS (stepped
// with the clock passed in, never slept).
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { publishHomeNow, recordHomeOpened, refreshHomes } from "../../src/slack/home-publish";
import { createSlackClient } from "../../src/slack/web-api";

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
async function pendingApproval(channel: string, now: number): Promise<string> {
  const id = `${Date.now()}${++n}`;
  const created = new Date(now).toISOString();
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO runs (run_id, channel_id, user_id, source, status, created_at) VALUES (?, ?, ?, 'slack', 'running', ?)`,
    ).bind(`run_home${id}`, channel, "U0HOMEREQ", created),
    env.DB.prepare(
      `INSERT INTO approvals (approval_id, run_id, channel_id, tool_call_id, tool_name, level, description, arguments_json, requested_at, expires_at, status)
       VALUES (?, ?, ?, 'c1', 'mcp__demo__create_dashboard', 'approve', 'd', '{"title":"t"}', ?, ?, 'pending')`,
    ).bind(`ap_home${id}`, `run_home${id}`, channel, created, new Date(now + 3_600_000).toISOString()),
  ]);
  return `ap_home${id}`;
}

/** A Slack user of the installation's team, as the Home tab sees them. */
const viewer = (user: string) => ({ user, principal: `slack:T0HOME:${user}`, team: "T0HOME" });

beforeEach(async () => {
  await fetch(`${standIn}/_control`, { method: "POST", body: JSON.stringify({ reset: true }) });
});

describe("the Home tab's republishing", () => {
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
});
