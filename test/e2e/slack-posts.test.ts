// What a Slack-started run posts (contract section 14), over real loopback
// HTTP: wrangler dev serving the Worker with the Slack app on, the Slack Web
// API stand-in receiving every call the run's outbox makes, the real demo MCP
// server executing what a click approves, and (for thread follow-ups) the
// Anthropic model stand-in. Retry intervals and the delivery bound are short
// through config, so no test waits for a production default.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { anthropicMessage, type ModelStandIn, startAnthropicStandIn } from "../support/model-stand-ins";
import { blockActionsPayload, scriptMessage, TEST_TEAM_ID } from "../support/slack-signing";
import type { RecordedCall } from "../support/slack-stand-in";
import { useSlackE2e } from "../support/slack-e2e-setup";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { untilCompleted, untilPostsDelivered } from "../support/run-waits";

const BOT = "UBOT0002";
const REQUESTER = "UREQUESTER2";
const APPROVER = "UAPPROVER2";
const CHANNEL = "C0POSTS001";
const DELIVERY_MAX_MS = 6_000;
const demoBase = inject("demoMcpBaseUrl");

const e2e = useSlackE2e({
  secret: "test-signing-secret-posts",
  botToken: "xoxb-test-bot-token-posts",
  bot: BOT,
  eventIdPrefix: "EvP",
  startTimeoutMs: 120_000,
  vars: () => ({
    SLACK_APPROVERS: JSON.stringify([APPROVER]),
    // The team is set (so auth.test is never asked here; test/e2e/slack-app.test.ts asks it), and these posts
    // are not about external channels (test/runtime/slack-outbox.test.ts and test/e2e/slack-scope.test.ts are).
    SLACK_TEAM_ID: TEST_TEAM_ID,
    SLACK_ALLOW_EXTERNAL_CHANNELS: "true",
    SLACK_DELIVERY_MAX_MS: String(DELIVERY_MAX_MS),
    SLACK_RETRY_BASE_MS: "100",
    SLACK_RETRY_MAX_INTERVAL_MS: "300",
    // The Home tab's republish bound, short (the contract's is 5 seconds).
    SLACK_HOME_REPUBLISH_MS: "200",
  }),
});
const { eventId, ts, triggerId } = e2e;

async function startBySlack(target: WorkerServer, text: string, channel = CHANNEL, extra: Record<string, unknown> = {}): Promise<string> {
  const id = eventId();
  const event = { type: "app_mention", user: REQUESTER, text: `<@${BOT}> ${text}`, ts: ts(), channel, ...extra };
  const res = await e2e.postEvent(e2e.envelope(event, id), {}, target);
  expect(res.status).toBe(200);
  const receipt = await target.api(`/api/deliveries/${encodeURIComponent(id)}?source=slack`);
  expect(receipt.status).toBe(200);
  return ((await receipt.json()) as { run_id: string }).run_id;
}

async function summary(runId: string, target = e2e.server): Promise<Record<string, any>> {
  return (await (await target.api(`/api/runs/${runId}`)).json()) as Record<string, any>;
}

/** Calls that reached the stand-in and were answered ok, in arrival order. */
const delivered = (calls: RecordedCall[]) => calls.filter((c) => c.answered === "ok");
const texts = (calls: RecordedCall[]) => delivered(calls).map((c) => `${c.method}:${String(c.params.text ?? c.params.name ?? "")}`);

function click(actionId: string, user: string, value: unknown) {
  return e2e.click({
    actionId,
    user,
    channel: CHANNEL,
    value: JSON.stringify(value),
  });
}

const CREATE = "mcp__demo__create_dashboard";
const writeScript = (title: string) => [
  {
    text: "I will create the dashboard.",
    tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: { title, api_token: "s3cret-token" } }],
  },
  { text: "done" },
];

type Block = { type: string; elements?: { action_id?: string; value?: string; url?: string }[] };

/** The mrkdwn strings of a message's blocks (plain_text is shown as written, so it is left out). */
function mrkdwnTexts(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) mrkdwnTexts(v, out);
  else if (value !== null && typeof value === "object") {
    const node = value as { type?: unknown; text?: unknown };
    if (node.type === "mrkdwn" && typeof node.text === "string") out.push(node.text);
    for (const v of Object.values(value)) mrkdwnTexts(v, out);
  }
  return out;
}
const buttonsOf = (call: RecordedCall | undefined) =>
  ((call?.params.blocks ?? []) as Block[]).flatMap((b) => (b.type === "actions" ? (b.elements ?? []) : []));

describe("what a Slack-started run posts", () => {
  it("posts in event order (working indicator, assistant text, approval with buttons); the requester's approve click runs the call once and the approval loses its buttons", async () => {
    const runId = await startBySlack(e2e.server, scriptMessage(writeScript("posts-order")));
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postMessage" && buttonsOf(x).length > 0));
    const before = delivered(e2e.slack.calls());
    expect(before[0]).toMatchObject({ method: "reactions.add", params: { channel: CHANNEL } });
    const posts = before.filter((c) => c.method === "chat.postMessage");
    expect(String(posts[0]?.params.text)).toContain("I will create the dashboard.");
    const approvalPost = posts[1]!;
    expect(approvalPost.params.thread_ts).toBeDefined();
    // Shown whole: Approve, Deny, and the approval in the console (the request's origin: PUBLIC_URL is unset).
    expect(buttonsOf(approvalPost).map((b) => b.action_id)).toEqual(["approval_approve", "approval_deny", "approval_open_console"]);
    const approvalId = (await summary(runId)).pending_approvals[0].approval_id as string;
    expect(buttonsOf(approvalPost)[2]?.url).toBe(`${e2e.server.url}/console#/runs/${runId}/approvals/${approvalId}`);
    expect(mrkdwnTexts(approvalPost.params.blocks).join("\n")).toContain("`/api_token` (14 characters)");
    expect(JSON.stringify(approvalPost.params.blocks)).not.toContain("not shown");
    // The redacted arguments only: the secret stays out of Slack.
    expect(JSON.stringify(e2e.slack.calls())).not.toContain("s3cret-token");

    // The requester (not in SLACK_APPROVERS) may decide.
    const value = JSON.parse(buttonsOf(approvalPost)[0]!.value!) as Record<string, unknown>;
    expect((await click("approval_approve", REQUESTER, value)).status).toBe(200);
    await untilCompleted(summary, runId, 15_000);
    const demoCalls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { by_tool: Record<string, number> };
    expect(demoCalls.by_tool.create_dashboard).toBe(1);
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.update") && c.some((x) => String(x.params.text).includes("done")));
    const update = e2e.slack.calls("chat.update")[0]!;
    // The update names a posted message's ts (the stand-in's format) and leaves no buttons.
    expect(String(update.params.ts)).toMatch(/^\d+\.\d{6}$/);
    expect(buttonsOf(update)).toEqual([]);
    expect(JSON.stringify(update.params.blocks)).toContain(REQUESTER);
    await untilPostsDelivered(summary, runId);
    expect((await summary(runId)).slack_posts_failed).toBe(0);
  });

  it("a deny with a reason: the approval's update says who denied it and why, redacted", async () => {
    const runId = await startBySlack(e2e.server, scriptMessage(writeScript("posts-deny")));
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postMessage" && buttonsOf(x).length > 0));
    const approvalId = (await summary(runId)).pending_approvals[0].approval_id as string;
    const denied = await e2e.server.api(`/api/runs/${runId}/approvals/${approvalId}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny", reason: "not this quarter; password=hunter2-secret" }),
    });
    expect(denied.status).toBe(200);
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.update"));
    const update = JSON.stringify(e2e.slack.calls("chat.update")[0]!.params.blocks);
    expect(update).toContain("Denied by");
    expect(update).toContain("not this quarter; password=[redacted]");
    expect(JSON.stringify(e2e.slack.calls())).not.toContain("hunter2-secret");
  });

  it("says an approved mutation's outcome is unknown, with its mutation_id", async () => {
    await fetch(`${demoBase}/control/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool: "create_dashboard", mode: "commit_then_drop" }),
    });
    const runId = await startBySlack(e2e.server, scriptMessage(writeScript("unknown-outcome")));
    await e2e.slack.waitFor((c) => c.some((x) => buttonsOf(x).length > 0));
    const approvalPost = e2e.slack.calls("chat.postMessage").find((x) => buttonsOf(x).length > 0)!;
    await click("approval_approve", APPROVER, JSON.parse(buttonsOf(approvalPost)[0]!.value!));
    await untilCompleted(summary, runId, 15_000);
    const events = await runEvents(runId);
    const execution = events.find((e) => e.type === "tool_execution") as { mutation_id?: string } | undefined;
    expect(execution?.mutation_id).toMatch(/^mut_/);
    await e2e.slack.waitFor((c) => c.some((x) => String(x.params.text).includes(execution!.mutation_id!)));
    const notice = e2e.slack.calls("chat.postMessage").find((x) => String(x.params.text).includes(execution!.mutation_id!))!;
    expect(JSON.stringify(notice.params.blocks)).toMatch(/may or may not/i);
  });

  it("the stand-in answering 429 to the first 20 calls: every post arrives, in order, none lost", async () => {
    e2e.slack.failNext(20, { kind: "429", retry_after_s: 0 });
    const script = [{ text: "one" }, { text: "two" }, { text: "three" }];
    const runId = await startBySlack(e2e.server, scriptMessage(script));
    await untilCompleted(summary, runId);
    await e2e.slack.waitFor((c) => delivered(c).some((x) => String(x.params.text).includes("three")), 20_000);
    expect(e2e.slack.calls().filter((c) => c.answered === "429")).toHaveLength(20);
    const postTexts = delivered(e2e.slack.calls("chat.postMessage")).map((c) => String(c.params.text));
    const order = ["one", "two", "three"].map((t) => postTexts.findIndex((p) => p.includes(t)));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    // Each post once: the retries did not duplicate any.
    expect(postTexts.filter((p) => p.includes("two"))).toHaveLength(1);
    await untilPostsDelivered(summary, runId);
    expect((await summary(runId)).slack_posts_failed).toBe(0);
  });

  it("Slack down (500) for a whole run: the run completes, the summary counts the waiting posts, and they arrive once Slack is back", async () => {
    e2e.slack.failNext(10_000, { kind: "500" });
    const runId = await startBySlack(e2e.server, scriptMessage([{ text: "while slack is down" }]));
    await untilCompleted(summary, runId);
    const waiting = await summary(runId);
    expect(waiting.slack_posts_pending).toBeGreaterThan(0);
    expect(delivered(e2e.slack.calls())).toEqual([]);
    e2e.slack.reset(); // Slack is back
    await e2e.slack.waitFor((c) => delivered(c).some((x) => String(x.params.text).includes("while slack is down")), 15_000);
    await untilPostsDelivered(summary, runId);
    expect((await summary(runId)).slack_posts_failed).toBe(0);
    expect(texts(e2e.slack.calls())[0]).toMatch(/^reactions\.add/);
  });

  it("a refused post (channel_not_found) is given up and counted; it does not hold back the posts behind it", async () => {
    // Only the first call is refused for good (the working indicator); everything behind it goes on.
    e2e.slack.failNext(1, { kind: "error", error: "channel_not_found" });
    const runId = await startBySlack(e2e.server, scriptMessage([{ text: "after the refusal" }]));
    await untilCompleted(summary, runId);
    await e2e.slack.waitFor((c) => delivered(c).some((x) => String(x.params.text).includes("after the refusal")));
    expect(e2e.slack.calls()[0]?.answered).toBe("channel_not_found");
    await untilPostsDelivered(summary, runId);
    expect((await summary(runId)).slack_posts_failed).toBe(1);
  });

  it("shows every mrkdwn control sequence a model writes as characters, in every kind of message, at the Web API (contract section 20)", async () => {
    const hostile = "<!channel> <!here> <@U0CEO0001> <https://evil.example/login|Click to re-authenticate>";
    const raw = ["<!channel>", "<!here>", "<@U0CEO0001>", "<https://evil.example"];
    const runId = await startBySlack(
      e2e.server,
      scriptMessage([
        {
          text: `assistant ${hostile}`,
          tool_calls: [{ tool_name: CREATE, tool_call_id: "w-hostile", arguments: { title: `args ${hostile}` } }],
        },
        { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-hostile", arguments: { question: `question ${hostile}` } }] },
        { text: `final ${hostile}` },
      ]),
    );
    await e2e.slack.waitFor((c) => c.some((x) => buttonsOf(x).some((b) => b.action_id === "approval_approve")));
    const approvalPost = e2e.slack.calls("chat.postMessage").find((x) => buttonsOf(x).length > 0)!;
    expect((await click("approval_approve", REQUESTER, JSON.parse(buttonsOf(approvalPost)[0]!.value!))).status).toBe(200);
    await expect.poll(async () => (await summary(runId)).pending_inputs.length, { timeout: 15_000 }).toBe(1);
    const answered = await e2e.server.api(`/api/runs/${runId}/inputs/ask-hostile`, {
      method: "POST",
      body: JSON.stringify({ answer: "ok" }),
    });
    expect(answered.status).toBeLessThan(300);
    await untilCompleted(summary, runId, 15_000);
    await untilPostsDelivered(summary, runId);

    const calls = delivered(e2e.slack.calls()).filter((c) => c.method === "chat.postMessage" || c.method === "chat.update");
    // Each kind arrived: assistant text, the approval and its update, the question and its update, the outcome, the final text.
    const all = JSON.stringify(calls.map((c) => c.params));
    for (const kind of ["assistant ", "args ", "question ", "final "])
      expect(all).toContain(`${kind}&lt;!channel&gt; &lt;!here&gt; &lt;@U0CEO0001&gt;`);
    expect(calls.length).toBeGreaterThanOrEqual(6);
    for (const call of calls) {
      const shown = [String(call.params.text ?? ""), ...mrkdwnTexts(call.params.blocks)];
      for (const text of shown) for (const sequence of raw) expect(text, `${call.method}: ${text.slice(0, 200)}`).not.toContain(sequence);
      if (call.method === "chat.postMessage") {
        expect(call.params).toMatchObject({ unfurl_links: "false", unfurl_media: "false" });
        expect(call.params).not.toHaveProperty("link_names");
        expect(call.params).not.toHaveProperty("parse");
      }
    }
  });

  it("arguments too long to show: the post says how many characters it leaves out, lists what is withheld, and offers Deny and the console but no Approve", async () => {
    const panels = Array.from({ length: 120 }, (_, i) => `panel number ${i} of the quarterly review`);
    const args = { title: "posts-cut", panels, session: "DROP TABLE customers; --" };
    const script = [{ text: "A long one.", tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: args }] }, { text: "done" }];
    const runId = await startBySlack(e2e.server, scriptMessage(script));
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postMessage" && buttonsOf(x).length > 0));
    const post = e2e.slack.calls("chat.postMessage").find((x) => buttonsOf(x).length > 0)!;
    const approvalId = (await summary(runId)).pending_approvals[0].approval_id as string;

    // The post: the first 2,500 characters, how many it leaves out, the withheld path, no Approve.
    const shownJson = JSON.stringify({ ...args, session: "[redacted]" }, null, 2);
    const text = mrkdwnTexts(post.params.blocks).join("\n");
    expect(text).toContain(`${shownJson.length - 2_500} characters of the arguments are not shown`);
    expect(text).toContain("`/session` (26 characters)");
    expect(text).not.toContain("panel number 119");
    expect(buttonsOf(post).map((b) => b.action_id)).toEqual(["approval_deny", "approval_open_console"]);
    expect(buttonsOf(post)[1]?.url).toBe(`${e2e.server.url}/console#/runs/${runId}/approvals/${approvalId}`);
    expect(JSON.stringify(post.params)).not.toContain("DROP TABLE");

    // Deny works from the post as from a full one.
    const value = JSON.parse(buttonsOf(post)[0]!.value!) as Record<string, unknown>;
    expect((await click("approval_deny", REQUESTER, value)).status).toBe(200);
    await expect.poll(async () => (await summary(runId)).status, { timeout: 15_000 }).toBe("completed");
    const demoCalls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { by_tool: Record<string, number> };
    expect(demoCalls.by_tool.create_dashboard ?? 0).toBe(0);
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.update"));
    const update = e2e.slack.calls("chat.update")[0]!;
    expect(buttonsOf(update)).toEqual([]);
    expect(JSON.stringify(update.params.blocks)).toContain("Denied by");

    // The event: nothing cut but the secret, and the secret named by its pointer and length.
    const requested = (await runEvents(runId)).find((e) => e.type === "approval_requested")!;
    expect(requested.arguments).toEqual({ ...args, session: "[redacted]" });
    expect(requested.hidden).toEqual([{ path: "/session", reason: "secret", chars: JSON.stringify(args.session).length }]);
    // Everything the run posts is out before the next test resets the stand-in.
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "reactions.add" && x.params.name === "white_check_mark"));
    await expect.poll(async () => (await summary(runId)).slack_posts_pending, { timeout: 10_000 }).toBe(0);
  });

  it("the Home tab: published on app_home_opened, published again when an approval appears and when it is decided from the tab; never to a user who did not open it", async () => {
    const published = (user: string) => delivered(e2e.slack.calls("views.publish")).filter((c) => c.params.user_id === user);
    const viewOf = (call: RecordedCall) =>
      (typeof call.params.view === "string" ? JSON.parse(call.params.view) : call.params.view) as Record<string, unknown>;
    const opened = e2e.envelope({ type: "app_home_opened", user: APPROVER, channel: "D0HOME01", tab: "home", event_ts: ts() }, eventId());
    expect((await e2e.postEvent(opened)).status).toBe(200);
    await e2e.slack.waitFor(() => published(APPROVER).length === 1);
    expect(viewOf(published(APPROVER)[0]!).type).toBe("home");

    // A Slack run asks for an approval: the approver's tab is published again with it, the requester (never opened it) gets nothing.
    const runId = await startBySlack(e2e.server, scriptMessage(writeScript("home-tab")));
    await e2e.slack.waitFor(() => published(APPROVER).some((c) => JSON.stringify(viewOf(c)).includes(runId)));
    const withApproval = viewOf(published(APPROVER).find((c) => JSON.stringify(viewOf(c)).includes(runId))!);
    const approvalId = (await summary(runId)).pending_approvals[0].approval_id as string;
    const buttons = (withApproval.blocks as Block[]).flatMap((b) => (b.type === "actions" ? (b.elements ?? []) : []));
    const approve = buttons.find((b) => b.action_id === "approval_approve" && String(b.value).includes(approvalId))!;
    expect(JSON.parse(approve.value!)).toEqual({ run_id: runId, approval_id: approvalId, level: "approve", channel_id: CHANNEL });
    expect(JSON.stringify(withApproval)).toContain("[redacted]");
    expect(JSON.stringify(withApproval)).not.toContain("s3cret-token");
    expect(published(REQUESTER)).toEqual([]);

    // The tab's button works as the thread's: a click with no message (a Home view) decides, and the tab drops the approval.
    const payload = blockActionsPayload({
      actionId: "approval_approve",
      user: APPROVER,
      channel: CHANNEL,
      value: approve.value!,
      triggerId: triggerId(),
      botUserId: BOT,
    });
    const { channel: _channel, message: _message, container: _container, ...fromHome } = payload;
    const homeClick = { ...fromHome, container: { type: "view", view_id: "V0HOME" }, view: { id: "V0HOME", type: "home" } };
    expect((await e2e.postInteraction(homeClick)).status).toBe(200);
    await expect.poll(async () => (await summary(runId)).status, { timeout: 15_000 }).toBe("completed");
    const demoCalls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { by_tool: Record<string, number> };
    expect(demoCalls.by_tool.create_dashboard).toBe(1);
    await e2e.slack.waitFor(() => {
      const last = published(APPROVER).at(-1);
      return last !== undefined && !JSON.stringify(viewOf(last)).includes(approvalId);
    });
    expect(published(REQUESTER)).toEqual([]);
    await expect.poll(async () => (await summary(runId)).slack_posts_pending, { timeout: 10_000 }).toBe(0);
  });

  it("an API-started run posts nothing to Slack, and its summary still counts (zero) while Slack is on", async () => {
    const res = await e2e.server.api("/api/trigger", { method: "POST", body: JSON.stringify({ message: "from the api" }) });
    const { run_id } = (await res.json()) as { run_id: string };
    await untilCompleted(summary, run_id);
    expect(await summary(run_id)).toMatchObject({ user_id: "token:root", slack_posts_pending: 0, slack_posts_failed: 0 });
    expect(e2e.slack.calls()).toEqual([]);
  });
});

async function runEvents(runId: string): Promise<Record<string, unknown>[]> {
  const text = await (await e2e.server.api(`/api/runs/${runId}/events`)).text();
  return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
}

describe("thread follow-ups (model stand-in)", () => {
  let model: ModelStandIn;
  let modelServer: WorkerServer;

  beforeAll(async () => {
    model = await startAnthropicStandIn({ apiKey: "model-key" });
    modelServer = await startWorkerServer({
      ...e2e.vars,
      MODEL_PROVIDER: "anthropic",
      MODEL_BASE_URL: model.baseUrl,
      MODEL_API_KEY: "model-key",
      MODEL_NAME: "stand-in-model",
    });
  }, 120_000);

  afterAll(async () => {
    await modelServer?.stop();
    await model?.close();
  });

  it("a mention inside a thread where the app already ran continues the thread's earlier turns", async () => {
    model.enqueue({ body: anthropicMessage({ text: "The errors dashboard is called Errors-42." }) });
    const channel = "C0THREAD01";
    const firstTs = ts();
    const first = await startBySlackAt(modelServer, channel, "which dashboard shows errors?", firstTs);
    await expect.poll(async () => (await summary(first, modelServer)).status, { timeout: 15_000 }).toBe("completed");

    model.enqueue({ body: anthropicMessage({ text: "Yes, Errors-42." }) });
    const second = await startBySlackAt(modelServer, channel, "is that the one you named?", ts(), firstTs);
    await expect.poll(async () => (await summary(second, modelServer)).status, { timeout: 15_000 }).toBe("completed");

    expect(model.requests).toHaveLength(2);
    const messages = model.requests[1]!.body.messages as { role: string; content: unknown }[];
    const flat = messages.map((m) => `${m.role}:${JSON.stringify(m.content)}`);
    expect(flat[0]).toContain("which dashboard shows errors?");
    expect(flat[1]).toMatch(/^assistant:.*Errors-42/);
    expect(flat[2]).toContain("is that the one you named?");
    expect(messages).toHaveLength(3);
    // A mention in another thread starts fresh.
    model.enqueue({ body: anthropicMessage({ text: "fresh" }) });
    const other = await startBySlackAt(modelServer, channel, "a new topic", ts());
    await expect.poll(async () => (await summary(other, modelServer)).status, { timeout: 15_000 }).toBe("completed");
    expect(model.requests[2]!.body.messages).toHaveLength(1);
  });
});

async function startBySlackAt(target: WorkerServer, channel: string, text: string, messageTs: string, threadTs?: string): Promise<string> {
  return startBySlack(target, text, channel, { ts: messageTs, ...(threadTs ? { thread_ts: threadTs } : {}) });
}
