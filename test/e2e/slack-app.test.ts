// The Slack app's request side over real loopback HTTP (contract section 14):
// wrangler dev serving the Worker, requests signed exactly as Slack signs
// them, a local Slack Web API stand-in receiving every call the app makes,
// and the real demo MCP server executing what a Slack click approves.
// What the run posts (the outbox) is wired into the RunObject separately.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { scriptMessage, signedPost, slackUserName, TEST_TEAM_ID } from "../support/slack-signing";
import { useSlackE2e } from "../support/slack-e2e-setup";
import { untilCompleted } from "../support/run-waits";
import { STATELESS_API_KEY_HEADER, startStatelessMcpServer, type StatelessMcpServer } from "../support/stateless-mcp-server";

const SECRET = "test-signing-secret-e2e";
const BOT = "UBOT0001";
const REQUESTER = "UREQUESTER1";
const APPROVER = "UAPPROVER1";
const STRANGER = "USTRANGER1";
/** A user of another organisation (Slack Connect), listed in SLACK_APPROVERS as <team>:<user>. */
const PARTNER_TEAM = "T0PARTNER";
const PARTNER = "UPARTNER01";
const CHANNEL = "C0TEST0001";
const demoBase = inject("demoMcpBaseUrl");

/** The stateless MCP server whose confirm_note asks a question mid-call (contract section 21). */
let stateless: StatelessMcpServer;
const STATELESS_KEY = "stateless-key-slack-e2e";
const CONFIRM_NOTE = "mcp__stateless__confirm_note";

beforeAll(async () => {
  stateless = await startStatelessMcpServer(STATELESS_KEY);
});

afterAll(async () => {
  await stateless?.stop();
});

const e2e = useSlackE2e({
  secret: SECRET,
  botToken: "xoxb-test-bot-token",
  bot: BOT,
  eventIdPrefix: "Ev",
  vars: (base) => ({
    MCP_SERVERS: JSON.stringify({
      ...JSON.parse(base.MCP_SERVERS!),
      stateless: { url: stateless.url, headers: { [STATELESS_API_KEY_HEADER]: STATELESS_KEY } },
    }),
    MUTATION_BUDGET: JSON.stringify({ ...JSON.parse(base.MUTATION_BUDGET!), [CONFIRM_NOTE]: 2 }),
    SLACK_APPROVERS: JSON.stringify([APPROVER, `${PARTNER_TEAM}:${PARTNER}`]),
    // Users of other organisations may act here (test/e2e/slack-scope.test.ts covers the default, false).
    SLACK_ALLOW_EXTERNAL_USERS: "true",
  }),
});
const { eventId, ts, triggerId } = e2e;

const eventsUrl = () => `${e2e.server.url}/slack/events`;
const interactivityUrl = () => `${e2e.server.url}/slack/interactivity`;

function mention(text: string, extra: Record<string, unknown> = {}) {
  return { type: "app_mention", user: REQUESTER, text: `<@${BOT}> ${text}`, ts: ts(), channel: CHANNEL, event_ts: ts(), ...extra };
}

async function receipt(deliveryId: string) {
  const res = await e2e.server.api(`/api/deliveries/${encodeURIComponent(deliveryId)}?source=slack`);
  return { status: res.status, json: res.status === 200 ? ((await res.json()) as { run_id: string; channel_id: string }) : null };
}

async function summary(runId: string) {
  return (await (await e2e.server.api(`/api/runs/${runId}`)).json()) as {
    status: string;
    channel_id: string;
    pending_approvals: { approval_id: string; tool_name: string }[];
    pending_inputs: { tool_call_id: string }[];
  };
}

/** The run's retained events (the run must have ended, so the replay ends). */
async function runEvents(runId: string): Promise<Record<string, unknown>[]> {
  const text = await (await e2e.server.api(`/api/runs/${runId}/events`)).text();
  return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
}

async function startBySlack(text: string): Promise<string> {
  const id = eventId();
  const res = await e2e.postEvent(e2e.envelope(mention(text), id));
  expect(res.status).toBe(200);
  const { json } = await receipt(id);
  expect(json).not.toBeNull();
  return json!.run_id;
}

async function pendingApproval(runId: string) {
  await expect.poll(async () => (await summary(runId)).pending_approvals.length, { timeout: 10_000 }).toBe(1);
  return (await summary(runId)).pending_approvals[0]!;
}

function click(actionId: string, user: string, value: unknown, userTeamId?: string) {
  return e2e.click({
    actionId,
    user,
    channel: CHANNEL,
    value: JSON.stringify(value),
    ...(userTeamId !== undefined ? { userTeamId } : {}),
  });
}

/** A view_submission of a modal by `user` of the test team. */
function submitView(user: string, view: Record<string, unknown>) {
  return e2e.postInteraction({
    type: "view_submission",
    team: { id: TEST_TEAM_ID, domain: "test" },
    user: { id: user, username: slackUserName(user), name: slackUserName(user), team_id: TEST_TEAM_ID },
    api_app_id: "A0001",
    token: "legacy",
    trigger_id: triggerId(),
    view,
  });
}

function submit(callbackId: string, user: string, privateMetadata: string, text: string) {
  return submitView(user, {
    id: "V1",
    type: "modal",
    callback_id: callbackId,
    private_metadata: privateMetadata,
    state: { values: { answer: { text: { type: "plain_text_input", value: text } } } },
    hash: "h",
  });
}

/** A modal submission whose view.state.values are given whole (the form question's inputs). */
function submitValues(callbackId: string, user: string, privateMetadata: string, values: Record<string, unknown>) {
  return submitView(user, {
    id: "V2",
    type: "modal",
    callback_id: callbackId,
    private_metadata: privateMetadata,
    state: { values },
    hash: "h",
  });
}

/** Starts a run calling confirm_note, approves it from Slack, and waits for the server's question; its input_id. */
async function questionAsked(text: string): Promise<{ runId: string; inputId: string }> {
  const runId = await startBySlack(
    scriptMessage([{ tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: "note-1", arguments: { text } }] }, { text: "done" }]),
  );
  const approval = await pendingApproval(runId);
  await click("approval_approve", APPROVER, { run_id: runId, approval_id: approval.approval_id, level: "approve" });
  const asked = async () =>
    ((await summary(runId)).pending_inputs as { input_id?: string }[]).find((q) => q.input_id !== undefined)?.input_id;
  await expect.poll(asked, { timeout: 10_000 }).toBeDefined();
  return { runId, inputId: (await asked())! };
}

const CREATE = "mcp__demo__create_dashboard";
const ALERT = "mcp__demo__create_alert_from_chart";
const writeScript = (tool: string) => [
  { tool_calls: [{ tool_name: tool, tool_call_id: "w1", arguments: { title: "from slack", api_token: "s3cret" } }] },
  { text: "done" },
];

describe("requests from Slack", () => {
  it("answers url_verification with its challenge", async () => {
    const res = await e2e.postEvent({ type: "url_verification", token: "t", challenge: "chal-123" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("chal-123");
  });

  it("refuses a bad signature, a stale and a future timestamp with 401 JSON, and starts nothing", async () => {
    const now = Math.floor(Date.now() / 1000);
    // A minute past the 300 s window either way: a loaded machine can take a second or more between
    // computing `now` here and the Worker reading its clock, which would pull now+301 back inside it.
    const cases = [{ secretOverride: "wrong-secret" }, { timestamp: now - 360 }, { timestamp: now + 360 }];
    for (const options of cases) {
      const id = eventId();
      const res = await e2e.postEvent(e2e.envelope(mention("hello"), id), options);
      expect(res.status).toBe(401);
      expect(res.headers.get("content-type")).toContain("application/json");
      expect(await res.json()).toMatchObject({ error: "unauthorized" });
      expect((await receipt(id)).status).toBe(404);
    }
    // A malformed signature header is refused the same way (never a 500).
    const res = await fetch(eventsUrl(), {
      method: "POST",
      headers: { "content-type": "application/json", "x-slack-request-timestamp": String(now), "x-slack-signature": "v0=zz" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "unauthorized" });
  });

  it("a mention starts one run, in the Slack channel, for the Slack user, with the app's mention removed; Slack's retry starts no second", async () => {
    const id = eventId();
    const envelope = e2e.envelope(mention("hello there"), id);
    const first = await e2e.postEvent(envelope);
    expect(first.status).toBe(200);
    const { json } = await receipt(id);
    expect(json?.channel_id).toBe(CHANNEL);
    const retry = await e2e.postEvent(envelope, { retryNum: 1 });
    expect(retry.status).toBe(200);
    expect((await receipt(id)).json?.run_id).toBe(json!.run_id);

    await untilCompleted(summary, json!.run_id);
    const events = await runEvents(json!.run_id);
    expect(events.filter((e) => e.type === "run_started")).toEqual([
      expect.objectContaining({ user_id: REQUESTER, requested_by: `slack:${TEST_TEAM_ID}:${REQUESTER}`, channel_id: CHANNEL }),
    ]);
    // The summary and the run listing name the same principal (contract section 18).
    expect(await summary(json!.run_id)).toMatchObject({ requested_by: `slack:${TEST_TEAM_ID}:${REQUESTER}` });
    expect(events.find((e) => e.type === "assistant_message")?.text).toBe("You said: hello there");
  });

  it("a direct message starts a run; the app_mention of a DM, the app's own messages, edits and bot messages start nothing", async () => {
    const dm = eventId();
    const dmTs = ts();
    await e2e.postEvent(
      e2e.envelope({ type: "message", channel_type: "im", channel: "D0DM0001", user: REQUESTER, text: "hi in a DM", ts: dmTs }, dm),
    );
    expect((await receipt(dm)).json?.channel_id).toBe("D0DM0001");

    const ignored = [
      { type: "app_mention", channel: "D0DM0001", user: REQUESTER, text: `<@${BOT}> hi`, ts: ts() },
      { type: "message", channel_type: "im", channel: "D0DM0001", user: BOT, text: "my own words", ts: ts() },
      { type: "message", channel_type: "im", channel: "D0DM0001", subtype: "message_changed", message: { text: "edited" }, ts: ts() },
      { type: "message", channel_type: "im", channel: "D0DM0001", subtype: "message_deleted", ts: ts() },
      { type: "message", channel_type: "im", channel: "D0DM0001", user: "UOTHERBOT", bot_id: "B0OTHER", text: "beep", ts: ts() },
      { type: "message", channel_type: "channel", channel: CHANNEL, user: REQUESTER, text: "no mention", ts: ts() },
    ];
    for (const event of ignored) {
      const id = eventId();
      const res = await e2e.postEvent(e2e.envelope(event, id));
      expect(res.status).toBe(200);
      expect((await receipt(id)).status).toBe(404);
    }
  });

  it("acknowledges with 200 every verified event it does not act on (never slack-edge's 404)", async () => {
    for (const event of [
      { type: "reaction_added", user: REQUESTER, reaction: "eyes", item: { type: "message", channel: CHANNEL, ts: "1.1" } },
      { type: "member_joined_channel", user: REQUESTER, channel: CHANNEL },
      { type: "app_home_opened", user: REQUESTER, channel: "D0DM0001", tab: "home" },
    ]) {
      const res = await e2e.postEvent(e2e.envelope(event, eventId()));
      expect(res.status).toBe(200);
    }
  });

  it("acknowledges a mention at once even when the run's model stalls", async () => {
    const id = eventId();
    const started = Date.now();
    const res = await e2e.postEvent(e2e.envelope(mention(scriptMessage([{ text: "slow", delay_ms: 20_000 }])), id));
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(3_000);
    const { json } = await receipt(id);
    expect((await summary(json!.run_id)).status).toBe("running");
    await e2e.server.api(`/api/runs/${json!.run_id}/cancel`, { method: "POST" });
  });
});

describe("decisions from Slack", () => {
  it("an approver's approve click runs the call once; a second click is told it is stale", async () => {
    const runId = await startBySlack(scriptMessage(writeScript(CREATE)));
    const approval = await pendingApproval(runId);
    const value = { run_id: runId, approval_id: approval.approval_id, level: "approve" };
    expect((await click("approval_approve", APPROVER, value)).status).toBe(200);
    await untilCompleted(summary, runId);
    const calls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { by_tool: Record<string, number> };
    expect(calls.by_tool.create_dashboard).toBe(1);
    const resolved = (await runEvents(runId)).find((e) => e.type === "approval_resolved");
    expect(resolved).toMatchObject({ decision: "approved", decided_by: `slack:${TEST_TEAM_ID}:${APPROVER}` });
    // The audit log and the run listing name the same principals (contract section 18).
    const approverPrincipal = encodeURIComponent(`slack:${TEST_TEAM_ID}:${APPROVER}`);
    await expect
      .poll(
        async () => {
          const res = await e2e.server.api(`/api/audit?action=approval.decide&principal=${approverPrincipal}`);
          const { entries } = (await res.json()) as { entries: { target: string }[] };
          return entries.some((e) => e.target === `${runId}/approvals/${approval.approval_id}`);
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    await expect
      .poll(
        async () => {
          const { runs } = (await (await e2e.server.api("/api/runs?limit=50")).json()) as {
            runs: { run_id: string; requested_by?: string }[];
          };
          return runs.find((r) => r.run_id === runId)?.requested_by;
        },
        { timeout: 10_000 },
      )
      .toBe(`slack:${TEST_TEAM_ID}:${REQUESTER}`);

    expect((await click("approval_approve", APPROVER, value)).status).toBe(200);
    const [stale] = await e2e.slack
      .waitFor((c) => c.some((x) => x.method === "chat.postEphemeral"))
      .then(() => e2e.slack.calls("chat.postEphemeral"));
    expect(stale?.params).toMatchObject({ channel: CHANNEL, user: APPROVER });
    expect(String(stale?.params.text)).toMatch(/already decided, expired or cancelled/);
  });

  it("a deny click from an approver denies; nothing runs", async () => {
    const runId = await startBySlack(scriptMessage(writeScript(CREATE)));
    const approval = await pendingApproval(runId);
    await click("approval_deny", APPROVER, { run_id: runId, approval_id: approval.approval_id, level: "approve" });
    await untilCompleted(summary, runId);
    expect((await runEvents(runId)).find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "denied",
      decided_by: `slack:${TEST_TEAM_ID}:${APPROVER}`,
    });
    const calls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { total: number };
    expect(calls.total).toBe(0);
  });

  it("a non-approver's click changes nothing and gets an ephemeral naming who may decide", async () => {
    const runId = await startBySlack(scriptMessage(writeScript(CREATE)));
    const approval = await pendingApproval(runId);
    expect((await click("approval_approve", STRANGER, { run_id: runId, approval_id: approval.approval_id, level: "approve" })).status).toBe(
      200,
    );
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral"));
    const [refusal] = e2e.slack.calls("chat.postEphemeral");
    expect(refusal?.params).toMatchObject({ channel: CHANNEL, user: STRANGER });
    // Contract section 19: the Slack users by exact id (requester, SLACK_APPROVERS), then the approver role elsewhere.
    expect(String(refusal?.params.text)).toContain(
      `Who may: <@${REQUESTER}>, <@${APPROVER}>, <@${PARTNER}> or an approver in the console.`,
    );
    expect((await summary(runId)).pending_approvals).toHaveLength(1);
    await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" });
  });

  it("under a halt (contract section 23): an approve click is told the halt and changes nothing; a mention starts nothing and is told why", async () => {
    const runId = await startBySlack(scriptMessage(writeScript(CREATE)));
    const approval = await pendingApproval(runId);
    const engaged = await e2e.server.api("/api/halts", { method: "POST", body: JSON.stringify({ scope: "all", reason: "slack test" }) });
    expect(engaged.status).toBe(201);
    const { halt_id: haltId } = (await engaged.json()) as { halt_id: string };
    try {
      expect(
        (await click("approval_approve", APPROVER, { run_id: runId, approval_id: approval.approval_id, level: "approve" })).status,
      ).toBe(200);
      await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral" && x.params.user === APPROVER));
      const reply = e2e.slack.calls("chat.postEphemeral").find((x) => x.params.user === APPROVER);
      expect(String(reply?.params.text)).toContain(haltId);
      expect((await summary(runId)).pending_approvals).toHaveLength(1);

      const id = eventId();
      expect((await e2e.postEvent(e2e.envelope(mention("hello"), id))).status).toBe(200);
      await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral" && x.params.user === REQUESTER));
      const told = e2e.slack.calls("chat.postEphemeral").find((x) => x.params.user === REQUESTER);
      expect(String(told?.params.text)).toContain(`halted (${haltId}), so this message started nothing`);
      expect((await receipt(id)).status).toBe(404);
    } finally {
      await e2e.server.api(`/api/halts/${haltId}`, { method: "DELETE" });
      await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" });
    }
  });

  it("confirm: approve opens a modal; the wrong text answers errors inside the ack and decides nothing; the right text approves", async () => {
    const runId = await startBySlack(scriptMessage(writeScript(ALERT)));
    const approval = await pendingApproval(runId);
    await click("approval_approve", APPROVER, { run_id: runId, approval_id: approval.approval_id, level: "confirm" });
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "views.open"));
    const open = e2e.slack.calls("views.open")[0]!;
    const view = open.params.view as { callback_id: string; private_metadata: string; blocks: { type: string; block_id?: string }[] };
    expect(open.params.trigger_id).toMatch(/^trigger-/);
    expect(view.blocks.filter((b) => b.type === "input")).toHaveLength(1);

    const wrong = await submit(view.callback_id, APPROVER, view.private_metadata, "not the tool");
    expect(wrong.status).toBe(200);
    expect(await wrong.json()).toEqual({ response_action: "errors", errors: { answer: expect.any(String) } });
    expect((await summary(runId)).pending_approvals).toHaveLength(1);

    // A stranger submitting the same modal (its metadata copied), with the right text, decides nothing and is told who may.
    const stranger = await submit(view.callback_id, STRANGER, view.private_metadata, ALERT);
    expect([stranger.status, await stranger.text()]).toEqual([200, ""]);
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral" && x.params.user === STRANGER));
    expect(String(e2e.slack.calls("chat.postEphemeral").find((x) => x.params.user === STRANGER)?.params.text)).toContain(
      "You may not decide this approval",
    );
    expect((await summary(runId)).pending_approvals).toHaveLength(1);

    const right = await submit(view.callback_id, APPROVER, view.private_metadata, ALERT);
    expect(right.status).toBe(200);
    expect(await right.text()).toBe("");
    await untilCompleted(summary, runId);
    expect((await runEvents(runId)).find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "approved",
      decided_by: `slack:${TEST_TEAM_ID}:${APPROVER}`,
    });
  });

  it("human__ask: the input_answer button opens a modal whose submission answers the question", async () => {
    const runId = await startBySlack(
      scriptMessage([
        { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which dashboard?" } }] },
        { text: "thanks" },
      ]),
    );
    await expect.poll(async () => (await summary(runId)).pending_inputs.length, { timeout: 10_000 }).toBe(1);
    await click("input_answer", APPROVER, { run_id: runId, tool_call_id: "ask-1" });
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "views.open"));
    const view = e2e.slack.calls("views.open")[0]!.params.view as { callback_id: string; private_metadata: string };
    // A stranger's submission of the same modal answers nothing and is told who may.
    const stranger = await submit(view.callback_id, STRANGER, view.private_metadata, "the stranger's answer");
    expect(stranger.status).toBe(200);
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral" && x.params.user === STRANGER));
    expect(String(e2e.slack.calls("chat.postEphemeral").find((x) => x.params.user === STRANGER)?.params.text)).toContain(
      `You may not answer this question. Who may: <@${REQUESTER}>, <@${APPROVER}>, <@${PARTNER}> or an approver in the console.`,
    );
    expect((await summary(runId)).pending_inputs).toHaveLength(1);
    const res = await submit(view.callback_id, APPROVER, view.private_metadata, "the ops one");
    expect(res.status).toBe(200);
    await untilCompleted(summary, runId);
    expect((await runEvents(runId)).find((e) => e.type === "human_input_received")).toMatchObject({
      answered_by: `slack:${TEST_TEAM_ID}:${APPROVER}`,
    });
    expect(JSON.stringify(await runEvents(runId))).not.toContain("the stranger's answer");
  });

  it("an MCP question mid-call: posted with Answer and Decline; its modal is built from requested_schema; bad values answer errors; a stranger is refused; the approver's answer goes back to the server typed", async () => {
    const { runId, inputId } = await questionAsked("from slack");
    // The outbox posts the question with the two buttons, their value naming the question.
    const posted = await e2e.slack.waitFor((c) =>
      c.some((x) => x.method === "chat.postMessage" && JSON.stringify(x.params).includes("input_decline")),
    );
    const message = posted.find((x) => x.method === "chat.postMessage" && JSON.stringify(x.params).includes("input_decline"))!;
    expect(JSON.stringify(message.params)).toContain("Create the note");
    const buttons = (message.params.blocks as { type: string; elements?: { action_id: string; value: string }[] }[])
      .filter((b) => b.type === "actions")
      .flatMap((b) => b.elements ?? []);
    expect(buttons.map((b) => b.action_id)).toEqual(["input_answer", "input_decline"]);
    expect(JSON.parse(buttons[0]!.value)).toMatchObject({ run_id: runId, input_id: inputId });

    await click("input_answer", APPROVER, JSON.parse(buttons[0]!.value));
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "views.open"));
    const view = e2e.slack.calls("views.open")[0]!.params.view as {
      callback_id: string;
      private_metadata: string;
      blocks: { type: string; block_id?: string; optional?: boolean; element?: { type: string } }[];
    };
    expect(view.blocks.filter((b) => b.type === "input").map((b) => [b.block_id, b.optional, b.element?.type])).toEqual([
      ["field:0", false, "radio_buttons"],
      ["field:1", true, "plain_text_input"],
      ["field:2", true, "multi_static_select"],
    ]);
    const yes = (label: string, tags: string[] = ["urgent"]) => ({
      "field:0": { value: { type: "radio_buttons", selected_option: { value: "true" } } },
      "field:1": { value: { type: "plain_text_input", value: label } },
      "field:2": { value: { type: "multi_static_select", selected_options: tags.map((value) => ({ value })) } },
    });

    // Too long for the schema's maxLength: errors under the label's block, inside the acknowledgement; nothing sent.
    const bad = await submitValues(view.callback_id, APPROVER, view.private_metadata, yes("x".repeat(21)));
    expect(await bad.json()).toEqual({ response_action: "errors", errors: { "field:1": "Enter at most 20 characters." } });
    // More tags than the multi-select's maxItems (Slack's max_selected_items aside): errors under its block.
    const many = await submitValues(view.callback_id, APPROVER, view.private_metadata, yes("ops", ["urgent", "later"]));
    expect(await many.json()).toEqual({ response_action: "errors", errors: { "field:2": "Choose at most 1." } });
    // Someone who may not approve the call: refused ephemerally, the question still waits.
    const strangers = await submitValues(view.callback_id, STRANGER, view.private_metadata, yes("nope"));
    expect(await strangers.text()).toBe("");
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral" && x.params.user === STRANGER));
    expect(((await summary(runId)).pending_inputs as { input_id?: string }[]).map((q) => q.input_id)).toEqual([inputId]);

    const good = await submitValues(view.callback_id, APPROVER, view.private_metadata, yes("ops"));
    expect(await good.text()).toBe("");
    await untilCompleted(summary, runId);
    expect((await runEvents(runId)).find((e) => e.type === "human_input_received")).toMatchObject({
      input_id: inputId,
      action: "accept",
      answered_by: `slack:${TEST_TEAM_ID}:${APPROVER}`,
    });
    const followUp = stateless
      .seen()
      .filter((r) => r.tool === "confirm_note")
      .at(-1);
    expect(followUp?.inputResponses).toEqual({ confirm: { action: "accept", content: { confirm: true, label: "ops", tags: ["urgent"] } } });
    // The question's message is updated to say who answered, with no buttons left.
    const update = await e2e.slack.waitFor((c) =>
      c.some((x) => x.method === "chat.update" && JSON.stringify(x.params).includes("Answered by")),
    );
    const answered = update.find((x) => x.method === "chat.update" && JSON.stringify(x.params).includes("Answered by"))!;
    expect(JSON.stringify(answered.params)).toContain(`<@${APPROVER}>`);
    expect(JSON.stringify(answered.params)).not.toContain("input_decline");
  });

  it("an MCP question's Decline button declines it: the server hears decline and the message says who declined", async () => {
    const { runId, inputId } = await questionAsked("declined in slack");
    await click("input_decline", APPROVER, { run_id: runId, tool_call_id: "note-1", input_id: inputId });
    await untilCompleted(summary, runId);
    expect((await runEvents(runId)).find((e) => e.type === "human_input_received")).toMatchObject({ input_id: inputId, action: "decline" });
    expect(
      stateless
        .seen()
        .filter((r) => r.tool === "confirm_note")
        .at(-1)?.inputResponses,
    ).toEqual({ confirm: { action: "decline" } });
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.update" && JSON.stringify(x.params).includes("Declined by")));
  });

  it("SLACK_ALLOW_EXTERNAL_USERS=true: another organisation's user starts a run as slack:<their team>:<user>; one listed as <team>:<user> decides, the same id of the installation's team does not", async () => {
    const id = eventId();
    const external = { ...mention("from a partner"), user: PARTNER, user_team: PARTNER_TEAM };
    expect((await e2e.postEvent(e2e.envelope(external, id))).status).toBe(200);
    const started = (await receipt(id)).json!.run_id;
    await untilCompleted(summary, started);
    expect(await summary(started)).toMatchObject({ user_id: PARTNER, requested_by: `slack:${PARTNER_TEAM}:${PARTNER}` });

    const runId = await startBySlack(scriptMessage(writeScript(CREATE)));
    const approval = await pendingApproval(runId);
    const value = { run_id: runId, approval_id: approval.approval_id, level: "approve" };
    // The same user id in the installation's team is someone else: not listed.
    await click("approval_approve", PARTNER, value);
    await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.postEphemeral"));
    expect((await summary(runId)).pending_approvals).toHaveLength(1);
    await click("approval_approve", PARTNER, value, PARTNER_TEAM);
    await untilCompleted(summary, runId);
    expect((await runEvents(runId)).find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "approved",
      decided_by: `slack:${PARTNER_TEAM}:${PARTNER}`,
    });
  });

  it("refuses an unsigned interactivity request with 401 JSON", async () => {
    const res = await signedPost(interactivityUrl(), SECRET, "payload=%7B%7D", "application/x-www-form-urlencoded", {
      secretOverride: "nope",
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "unauthorized" });
  });
});
