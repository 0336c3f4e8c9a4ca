// The Slack outbox inside workerd: real Durable Object SQLite storage (a run
// object's own, with the outbox's slack_* tables) and real HTTP calls through
// slack-web-api-client to the local Slack Web API stand-in, which is told to
// answer 429, 500, refusals or hang. The clock is passed in, so retries are
// stepped through without sleeping.
import { env, runInDurableObject } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { type OutboxSettings, SlackOutbox } from "../../src/slack/outbox";
import { createSlackClient } from "../../src/slack/web-api";
import { runEventOf } from "./run-events";
import { runTablesOf } from "./helpers";

const standIn = env.SLACK_STAND_IN_URL;
const client = createSlackClient({ SLACK_BOT_TOKEN: "xoxb-runtime-test", SLACK_API_BASE_URL: `${standIn}/api/` });
const CHANNEL = "C0OUTBOX01";
const target = { channel_id: CHANNEL, thread_ts: "100.000001", message_ts: "100.000001" };
const settings: OutboxSettings = { SLACK_DELIVERY_MAX_MS: 600_000, SLACK_ALLOW_EXTERNAL_CHANNELS: true };

interface Call {
  method: string;
  params: Record<string, unknown>;
  answered: string;
}
const calls = async (): Promise<Call[]> => (await fetch(`${standIn}/_calls`)).json();
const control = (command: unknown) => fetch(`${standIn}/_control`, { method: "POST", body: JSON.stringify(command) });

let n = 0;
function withOutbox<T>(fn: (sql: SqlStorage) => Promise<T>): Promise<T> {
  const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(`slack-outbox-${Date.now()}-${++n}`));
  return runInDurableObject(stub, (_instance, state) => fn(runTablesOf(state)));
}

let seq = 0;
const event = (type: string, fields: Record<string, unknown> = {}) =>
  runEventOf(type, {
    protocol_version: "v2",
    sequence: ++seq,
    run_id: "run_01TEST",
    channel_id: CHANNEL,
    type,
    at: "2026-11-29T10:00:00.000Z",
    ...fields,
  });
const approvalRequested = (approvalId: string) =>
  event("approval_requested", {
    tool_name: "mcp__demo__create_dashboard",
    tool_call_id: `call-${approvalId}`,
    approval_id: approvalId,
    level: "approve",
    description: "d",
    arguments: { title: "t", api_token: "s3cret-canary" },
    expires_at: "2026-11-29T10:05:00.000Z",
  });
const resolved = (approvalId: string) =>
  event("approval_resolved", {
    tool_name: "mcp__demo__create_dashboard",
    tool_call_id: `call-${approvalId}`,
    approval_id: approvalId,
    decision: "approved",
    decided_by: "slack:U0APPROVER",
  });

/** Steps the outbox with a clock that jumps to each due time: retries without sleeping. */
async function deliverAll(outbox: SlackOutbox, start: number, maxSteps = 200): Promise<number> {
  let now = start;
  for (let i = 0; i < maxSteps; i++) {
    const due = outbox.nextAttemptAt();
    if (due === null) return now;
    now = Math.max(now, due);
    await outbox.deliverNext(client, now);
  }
  throw new Error("outbox did not empty");
}

beforeEach(async () => {
  await control({ reset: true });
});

describe("the Slack outbox", () => {
  it("delivers the run's later posts while a Home refresh waits for its republish interval (a lane of its own)", async () => {
    const start = Date.now();
    const refreshedAt: number[] = [];
    const states = await withOutbox(async (sql) => {
      // The first refresh finds a user published to too recently: it comes back 5 s later.
      const outbox = new SlackOutbox(sql, settings, undefined, async (_client, now) => {
        refreshedAt.push(now);
        return refreshedAt.length === 1 ? now + 5_000 : null;
      });
      outbox.init(target);
      outbox.enqueueHomeRefresh(start);
      outbox.enqueueEvent(event("assistant_message", { text: "posted behind the refresh" }), start);
      await outbox.drain(
        client,
        () => start,
        async () => false,
      );
      const waiting = outbox.items().map((i) => [i.item.kind, i.state]);
      const due = outbox.nextAttemptAt();
      await outbox.drain(
        client,
        () => start + 5_000,
        async () => false,
      );
      return { waiting, due, after: outbox.items().map((i) => [i.item.kind, i.state]) };
    });
    expect(states.waiting).toEqual([
      ["home_refresh", "pending"],
      ["post", "sent"],
    ]);
    expect(states.due).toBe(start + 5_000);
    expect(states.after).toEqual([
      ["home_refresh", "sent"],
      ["post", "sent"],
    ]);
    expect(refreshedAt).toEqual([start, start + 5_000]);
    expect((await calls()).map((c) => c.method)).toEqual(["chat.postMessage"]);
  });

  it("hands the run's own channel check to the Home tab (kept once per channel, contract section 19)", async () => {
    const heard: [string, boolean][] = [];
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, { ...settings, SLACK_ALLOW_EXTERNAL_CHANNELS: false }, undefined, undefined, (channel, allowed) =>
        heard.push([channel, allowed]),
      );
      outbox.init(target);
      outbox.enqueueEvent(event("assistant_message", { text: "hello" }), Date.now());
      await deliverAll(outbox, Date.now());
    });
    expect(heard).toEqual([[target.channel_id, true]]);
    expect((await calls()).filter((c) => c.method === "conversations.info")).toHaveLength(1);
  });

  it("posts a run's events in order, keeps the approval's ts for its update, and never posts a secret", async () => {
    const approvalTs = await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, settings);
      outbox.init(target);
      const now = Date.now();
      for (const e of [
        event("run_started", { user_id: "U1" }),
        event("assistant_message", { text: "on it" }),
        approvalRequested("ap-1"),
        resolved("ap-1"),
        event("run_completed", { text: "on it", tool_calls: 1 }),
      ]) {
        outbox.enqueueEvent(e, now);
      }
      expect(outbox.counts()).toEqual({ pending: 5, failed: 0 });
      await outbox.drain(
        client,
        () => now,
        async () => false,
      );
      expect(outbox.counts()).toEqual({ pending: 0, failed: 0 });
      return outbox.items()[2]?.ts;
    });
    const seen = await calls();
    expect(seen.map((c) => c.method)).toEqual(["reactions.add", "chat.postMessage", "chat.postMessage", "chat.update", "reactions.add"]);
    const approvalPost = seen[2]!;
    const update = seen[3]!;
    expect(approvalPost.params.thread_ts).toBe(target.thread_ts);
    expect(JSON.stringify(approvalPost.params.blocks)).toContain("approval_approve");
    // The update targets the approval post's own ts and has no buttons left.
    expect(approvalTs).toMatch(/^\d+\.\d{6}$/);
    expect(update.params.ts).toBe(approvalTs);
    expect(JSON.stringify(update.params.blocks)).not.toContain("approval_approve");
    expect(JSON.stringify(update.params.blocks)).toContain("<@U0APPROVER>");
    expect(JSON.stringify(seen)).not.toContain("s3cret-canary");
  });

  it("mentions the Slack users the tool's policy names exactly (directly or by group), at the Web API; nobody under the default rule", async () => {
    const policied: OutboxSettings = {
      ...settings,
      TOOL_POLICY: {
        mcp__demo__create_dashboard: { approvers: ["slack:T0TEAM:U0NAMED1", "group:sre", "slack:T0TEAM:*", "token:ops"] },
      },
      APPROVER_GROUPS: { sre: ["slack:U0NAMED2", "access:*@acme.com"] },
    };
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, policied);
      outbox.init(target);
      const now = Date.now();
      outbox.enqueueEvent(approvalRequested("ap-m1"), now);
      outbox.enqueueEvent(
        event("approval_requested", {
          tool_name: "mcp__demo__update_dashboard",
          tool_call_id: "call-ap-m2",
          approval_id: "ap-m2",
          level: "approve",
          description: "d",
          arguments: {},
          hidden: [],
          expires_at: "2026-11-29T10:05:00.000Z",
        }),
        now,
      );
      await outbox.drain(
        client,
        () => now,
        async () => false,
      );
    });
    const [named, unnamed] = (await calls()).filter((c) => c.method === "chat.postMessage");
    expect(JSON.stringify(named!.params.blocks)).toContain("Approvers: <@U0NAMED1>, <@U0NAMED2>");
    expect(String(named!.params.text)).toContain("(<@U0NAMED1>, <@U0NAMED2>)");
    expect(JSON.stringify(unnamed!.params)).not.toContain("<@");
  });

  it("the stand-in answering 429 to the first 20 calls: every post arrives, in order, none lost, each retry after Retry-After", async () => {
    await control({ fail: { count: 20, fault: { kind: "429", retry_after_s: 2 } } });
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, settings);
      outbox.init(target);
      const start = Date.now();
      for (let i = 1; i <= 8; i++) outbox.enqueueEvent(event("assistant_message", { text: `message ${i}` }), start);
      const first = await outbox.deliverNext(client, start);
      expect(first.kind).toBe("retry");
      if (first.kind === "retry") expect(first.at - start).toBeGreaterThanOrEqual(2_000);
      await deliverAll(outbox, start);
      expect(outbox.counts()).toEqual({ pending: 0, failed: 0 });
    });
    const ok = (await calls()).filter((c) => c.answered === "ok");
    expect(ok.map((c) => c.params.text)).toEqual(Array.from({ length: 8 }, (_, i) => `message ${i + 1}`));
  });

  it("a refused post (channel_not_found) is given up and counted; the posts behind it go on", async () => {
    await control({ fail: { count: 1, fault: { kind: "error", error: "channel_not_found" } } });
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, settings);
      outbox.init(target);
      const now = Date.now();
      for (const text of ["first", "second", "third"]) outbox.enqueueEvent(event("assistant_message", { text }), now);
      await outbox.drain(
        client,
        () => now,
        async () => false,
      );
      expect(outbox.counts()).toEqual({ pending: 0, failed: 1 });
      expect(outbox.items().map((i) => [i.state, i.error])).toEqual([
        ["failed", "channel_not_found"],
        ["sent", null],
        ["sent", null],
      ]);
    });
  });

  it("Slack down (500) past SLACK_DELIVERY_MAX_MS: the post is given up, counted, and the next one is delivered once Slack is back", async () => {
    await control({ fail: { count: 1_000, fault: { kind: "500" } } });
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, { ...settings, SLACK_DELIVERY_MAX_MS: 10_000 });
      outbox.init(target);
      const start = Date.now();
      outbox.enqueueEvent(event("assistant_message", { text: "lost one" }), start);
      let now = start;
      for (let i = 0; i < 10 && outbox.counts().failed === 0; i++) {
        now = Math.max(now, outbox.nextAttemptAt() ?? now);
        await outbox.deliverNext(client, now);
      }
      expect(outbox.counts()).toEqual({ pending: 0, failed: 1 });
      expect(outbox.items()[0]?.error).toMatch(/^delivery_deadline_passed/);
      expect(now - start).toBe(10_000);

      // Still down: a new post waits (pending, counted), then arrives once Slack answers again.
      outbox.enqueueEvent(event("assistant_message", { text: "after recovery" }), now);
      expect((await outbox.deliverNext(client, now)).kind).toBe("retry");
      expect(outbox.counts()).toEqual({ pending: 1, failed: 1 });
      await control({ reset: true });
      await deliverAll(outbox, now);
      expect(outbox.counts()).toEqual({ pending: 0, failed: 1 });
    });
    expect((await calls()).map((c) => c.params.text)).toEqual(["after recovery"]);
  });

  it("a hung call is abandoned after the call timeout and retried", async () => {
    await control({ fail: { count: 1, fault: { kind: "hang" } } });
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, settings, 200);
      outbox.init(target);
      const now = Date.now();
      outbox.enqueueEvent(event("assistant_message", { text: "patient" }), now);
      const step = await outbox.deliverNext(client, now);
      expect(step).toMatchObject({ kind: "retry", failure: { kind: "transient" } });
      await deliverAll(outbox, now);
      expect(outbox.counts()).toEqual({ pending: 0, failed: 0 });
    });
    expect((await calls()).map((c) => c.answered)).toEqual(["hang", "ok"]);
  });

  it("SLACK_ALLOW_EXTERNAL_CHANNELS=false: a channel shared with another organisation gets no posts at all", async () => {
    await control({ external: CHANNEL });
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, { ...settings, SLACK_ALLOW_EXTERNAL_CHANNELS: false });
      outbox.init(target);
      const now = Date.now();
      outbox.enqueueEvent(event("run_started", { user_id: "U1" }), now);
      outbox.enqueueEvent(approvalRequested("ap-ext"), now);
      await outbox.drain(
        client,
        () => now,
        async () => false,
      );
      outbox.enqueueEvent(event("assistant_message", { text: "later" }), now);
      expect(outbox.counts()).toEqual({ pending: 0, failed: 3 });
    });
    expect((await calls()).map((c) => c.method)).toEqual(["conversations.info"]);
  });

  it.each([
    { flags: { is_ext_shared: true }, posted: false },
    { flags: { is_pending_ext_shared: true }, posted: false },
    { flags: { is_shared: true }, posted: false },
    // Shared only inside one Enterprise Grid organisation: not external.
    { flags: { is_shared: true, is_org_shared: true }, posted: true },
  ])("SLACK_ALLOW_EXTERNAL_CHANNELS=false, conversations.info reporting only $flags: posted $posted", async ({ flags, posted }) => {
    await control({ external: CHANNEL, external_flags: flags });
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, { ...settings, SLACK_ALLOW_EXTERNAL_CHANNELS: false });
      outbox.init(target);
      const now = Date.now();
      outbox.enqueueEvent(event("assistant_message", { text: "flagged" }), now);
      await outbox.drain(
        client,
        () => now,
        async () => false,
      );
      expect(outbox.counts()).toEqual(posted ? { pending: 0, failed: 0 } : { pending: 0, failed: 1 });
    });
    expect((await calls()).map((c) => c.method)).toEqual(posted ? ["conversations.info", "chat.postMessage"] : ["conversations.info"]);
  });

  it("SLACK_ALLOW_EXTERNAL_CHANNELS=true: a channel shared with another organisation is never looked up and is posted to", async () => {
    await control({ external: CHANNEL });
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, { ...settings, SLACK_ALLOW_EXTERNAL_CHANNELS: true });
      outbox.init(target);
      const now = Date.now();
      outbox.enqueueEvent(event("assistant_message", { text: "shared" }), now);
      await outbox.drain(
        client,
        () => now,
        async () => false,
      );
      expect(outbox.counts()).toEqual({ pending: 0, failed: 0 });
    });
    expect((await calls()).map((c) => c.method)).toEqual(["chat.postMessage"]);
  });

  it("SLACK_ALLOW_EXTERNAL_CHANNELS=false: an internal channel is looked up once and posted to", async () => {
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, { ...settings, SLACK_ALLOW_EXTERNAL_CHANNELS: false });
      outbox.init(target);
      const now = Date.now();
      outbox.enqueueEvent(event("assistant_message", { text: "a" }), now);
      outbox.enqueueEvent(event("assistant_message", { text: "b" }), now);
      await outbox.drain(
        client,
        () => now,
        async () => false,
      );
    });
    expect((await calls()).map((c) => c.method)).toEqual(["conversations.info", "chat.postMessage", "chat.postMessage"]);
  });

  it("after app_uninstalled (isStopped) nothing is posted and everything pending is counted as given up", async () => {
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, settings);
      outbox.init(target);
      const now = Date.now();
      outbox.enqueueEvent(event("assistant_message", { text: "x" }), now);
      await outbox.drain(
        client,
        () => now,
        async () => true,
      );
      expect(outbox.counts()).toEqual({ pending: 0, failed: 1 });
      expect(outbox.items()[0]?.error).toBe("app_uninstalled");
    });
    expect(await calls()).toEqual([]);
  });

  it("a run not started from Slack has no outbox: enqueue adds nothing", async () => {
    await withOutbox(async (sql) => {
      const outbox = new SlackOutbox(sql, settings);
      expect(outbox.active).toBe(false);
      expect(outbox.enqueueEvent(event("assistant_message", { text: "x" }), Date.now())).toBe(0);
      expect(outbox.nextAttemptAt()).toBeNull();
    });
  });
});
