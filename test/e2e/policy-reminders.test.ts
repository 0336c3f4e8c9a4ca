// Reminders and escalation (contract section 24) over real loopback HTTP:
// wrangler dev serving the Worker (one for the file), the run's own alarm
// firing them, clicks signed as Slack signs them, and the Web API stand-in
// recording every post, update and direct message. With a 30 s timeout,
// `escalate_after: "3s"` escalates 3 s after the approval is asked and
// `remind_before: "18s"` reminds 12 s after it. The reminder's direct
// messages go only to the Slack users of the installation eligible by exact
// id; the escalation mentions whom it went to, who may then decide. An
// approval asked in a channel shared with another organisation is never
// shown, so it is never reminded.
import { afterEach, describe, expect, it } from "vitest";
import { scriptMessage, TEST_TEAM_ID } from "../support/slack-signing";
import type { RecordedCall } from "../support/slack-stand-in";
import { useSlackE2e } from "../support/slack-e2e-setup";
import { RawSseClient } from "../support/sse-client";
import { runEventSchema } from "../../src/wire/event-schemas";

const BOT = "UBOT0024";
const REQUESTER = "UREQUEST24";
const ALICE = "UALICE0024";
const CAROL = "UCAROL0024";
const DAVE = "UDAVE00024";
const OTHER_TEAM_USER = "UOTHER0024";
const CHANNEL = "C0REMIND01";
const SHARED_CHANNEL = "C0REMIND02";
const CREATE = "mcp__demo__create_dashboard";
const TIMEOUT_MS = 30_000;
const REMIND_BEFORE_MS = 18_000;
const ESCALATE_AFTER_MS = 3_000;
/** How late the run's alarm may fire on a loaded machine and still be "at the right moment". */
const ALARM_SLACK_MS = 6_000;

const e2e = useSlackE2e({
  secret: "test-signing-secret-reminders",
  botToken: "xoxb-test-bot-token-reminders",
  bot: BOT,
  eventIdPrefix: "EvR",
  startTimeoutMs: 240_000,
  vars: () => ({
    APPROVAL_TIMEOUT_MS: String(TIMEOUT_MS),
    TOOL_POLICY: JSON.stringify({
      [CREATE]: {
        approvers: [`slack:${TEST_TEAM_ID}:${ALICE}`, "token:lead-*"],
        remind_before: `${REMIND_BEFORE_MS / 1000}s`,
        escalate_after: `${ESCALATE_AFTER_MS / 1000}s`,
        escalate_to: ["group:oncall"],
      },
    }),
    // A user of another team and a token pattern: eligible once escalated, but never told directly.
    APPROVER_GROUPS: JSON.stringify({ oncall: [`slack:${TEST_TEAM_ID}:${CAROL}`, `slack:T0OTHER24:${OTHER_TEAM_USER}`, "token:oncall-*"] }),
    SLACK_APPROVERS: JSON.stringify([DAVE]),
  }),
});
const { eventId, ts } = e2e;

let open: RawSseClient | undefined;
afterEach(() => {
  open?.close();
  open = undefined;
});

async function startBySlack(channel: string): Promise<{ runId: string; stream: RawSseClient }> {
  const id = eventId();
  const event = {
    type: "app_mention",
    user: REQUESTER,
    text: `<@${BOT}> ${scriptMessage([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "r1", arguments: { title: "Latency" } }] }, { text: "done" }])}`,
    ts: ts(),
    channel,
    event_ts: ts(),
  };
  expect((await e2e.postEvent(e2e.envelope(event, id))).status).toBe(200);
  let runId: string | undefined;
  await expect
    .poll(
      async () => {
        const res = await e2e.server.api(`/api/deliveries/${encodeURIComponent(id)}?source=slack`);
        if (res.status === 200) runId = ((await res.json()) as { run_id: string }).run_id;
        return runId !== undefined;
      },
      { timeout: 10_000 },
    )
    .toBe(true);
  if (runId === undefined) throw new Error("no receipt");
  const stream = await RawSseClient.open(`${e2e.server.url}/api/runs/${runId}/events`, { authorization: `Bearer ${e2e.server.token}` });
  open = stream;
  return { runId, stream };
}

const eventsOf = (stream: RawSseClient, type: string) =>
  stream.events.filter((e) => e.event === type).map((e) => JSON.parse(e.data) as Record<string, any>);

async function waitForEvent(stream: RawSseClient, type: string, timeout = 15_000): Promise<Record<string, any>> {
  await expect.poll(() => eventsOf(stream, type).length, { timeout }).toBeGreaterThan(0);
  return eventsOf(stream, type)[0]!;
}

function click(user: string, runId: string, approvalId: string, channel = CHANNEL) {
  return e2e.click({
    actionId: "approval_approve",
    user,
    channel,
    value: JSON.stringify({ run_id: runId, approval_id: approvalId, level: "approve" }),
  });
}

const blocksText = (call: RecordedCall) => JSON.stringify(call.params.blocks ?? []);
const updatesOf = () => e2e.slack.calls("chat.update");
const threadPosts = () => e2e.slack.calls("chat.postMessage").filter((c) => c.params.channel === CHANNEL);

describe("reminders and escalation from the run's alarm", () => {
  it("escalates after escalate_after and reminds at expires_at - remind_before; tells the eligible by exact id directly; the escalated person decides", async () => {
    const { runId, stream } = await startBySlack(CHANNEL);
    const asked = await waitForEvent(stream, "approval_requested");
    const approvalId = asked.approval_id as string;
    const askedAt = Date.parse(asked.at);
    expect(Date.parse(asked.expires_at) - askedAt).toBe(TIMEOUT_MS);

    // Before the escalation CAROL is not eligible: her click is refused ephemerally and decides nothing.
    expect((await click(CAROL, runId, approvalId)).status).toBe(200);
    await expect.poll(() => e2e.slack.calls("chat.postEphemeral").filter((c) => c.params.user === CAROL).length).toBe(1);
    expect(eventsOf(stream, "approval_resolved")).toEqual([]);

    // The escalation, at asked + escalate_after (as late as an alarm may be), before the reminder.
    const escalated = await waitForEvent(stream, "approval_escalated");
    expect(escalated).toMatchObject({
      tool_name: CREATE,
      tool_call_id: "r1",
      approval_id: approvalId,
      approvers: [`slack:${TEST_TEAM_ID}:${ALICE}`, "token:lead-*"],
      escalated_to: ["group:oncall"],
    });
    expect(Date.parse(escalated.at)).toBeGreaterThanOrEqual(askedAt + ESCALATE_AFTER_MS);
    expect(Date.parse(escalated.at)).toBeLessThan(askedAt + ESCALATE_AFTER_MS + ALARM_SLACK_MS);
    // Slack mentions whom it went to: the message says so, and a thread post notifies them (an edit notifies nobody).
    await expect.poll(() => threadPosts().filter((c) => String(c.params.text).startsWith("Escalated")).length, { timeout: 10_000 }).toBe(1);
    const mention = threadPosts().find((c) => String(c.params.text).startsWith("Escalated"))!;
    expect(blocksText(mention)).toContain(`<@${CAROL}>`);
    expect(blocksText(mention)).not.toContain(OTHER_TEAM_USER);
    expect(updatesOf().some((u) => blocksText(u).includes("Escalated") && blocksText(u).includes(`<@${CAROL}>`))).toBe(true);

    // The reminder, at expires_at - remind_before.
    const reminded = await waitForEvent(stream, "approval_reminded");
    expect(reminded).toMatchObject({ tool_name: CREATE, tool_call_id: "r1", approval_id: approvalId, expires_at: asked.expires_at });
    const remindAt = Date.parse(asked.expires_at) - REMIND_BEFORE_MS;
    expect(Date.parse(reminded.at)).toBeGreaterThanOrEqual(remindAt);
    expect(Date.parse(reminded.at)).toBeLessThan(remindAt + ALARM_SLACK_MS);
    expect(reminded.sequence).toBeGreaterThan(escalated.sequence);
    // Its message says how long is left; each Slack user eligible by exact id gets a direct message, nobody else.
    await expect
      .poll(() => updatesOf().filter((u) => blocksText(u).includes("left to decide")).length, { timeout: 10_000 })
      .toBeGreaterThan(0);
    await expect.poll(() => e2e.slack.calls("conversations.open").length, { timeout: 10_000 }).toBe(2);
    expect(
      e2e.slack
        .calls("conversations.open")
        .map((c) => c.params.users)
        .sort(),
    ).toEqual([ALICE, CAROL].sort());
    await expect
      .poll(
        () =>
          e2e.slack
            .calls("chat.postMessage")
            .filter((c) => String(c.params.channel).startsWith("D"))
            .map((c) => c.params.channel)
            .sort(),
        { timeout: 10_000 },
      )
      .toEqual([`D${ALICE}`, `D${CAROL}`].sort());
    const direct = e2e.slack.calls("chat.postMessage").find((c) => c.params.channel === `D${CAROL}`)!;
    expect(blocksText(direct)).toContain(`<#${CHANNEL}>`);
    expect(blocksText(direct)).toMatch(/\d+ seconds? left/);
    expect(e2e.slack.calls("conversations.open").map((c) => c.params.users)).not.toContain(REQUESTER);
    expect(e2e.slack.calls("conversations.open").map((c) => c.params.users)).not.toContain(DAVE);
    expect(e2e.slack.calls("conversations.open").map((c) => c.params.users)).not.toContain(OTHER_TEAM_USER);

    // The escalated person decides.
    expect((await click(CAROL, runId, approvalId)).status).toBe(200);
    const resolved = await waitForEvent(stream, "approval_resolved");
    expect(resolved).toMatchObject({ approval_id: approvalId, decision: "approved", decided_by: `slack:${TEST_TEAM_ID}:${CAROL}` });
    // Each fired once, and every event of the run is what the wire's schema says (section 4).
    expect(eventsOf(stream, "approval_escalated")).toHaveLength(1);
    expect(eventsOf(stream, "approval_reminded")).toHaveLength(1);
    for (const event of stream.events) {
      const parsed = runEventSchema.safeParse(JSON.parse(event.data));
      expect(parsed.success ? "ok" : JSON.stringify(parsed.error.issues), event.data).toBe("ok");
    }
  }, 60_000);

  it("an approval in a channel shared with another organisation is never shown: escalated, but never reminded, nobody told directly", async () => {
    e2e.slack.markExternal(SHARED_CHANNEL);
    const { stream } = await startBySlack(SHARED_CHANNEL);
    const asked = await waitForEvent(stream, "approval_requested");
    await waitForEvent(stream, "approval_escalated");
    // An alarm ran after the reminder was due (a heartbeat after it): it appended nothing.
    const remindAt = Date.parse(asked.expires_at) - REMIND_BEFORE_MS;
    await expect.poll(() => eventsOf(stream, "heartbeat").some((h) => Date.parse(h.at) > remindAt + 1_000), { timeout: 15_000 }).toBe(true);
    expect(eventsOf(stream, "approval_reminded")).toEqual([]);
    expect(e2e.slack.calls("chat.postMessage").filter((c) => blocksText(c).includes(SHARED_CHANNEL))).toEqual([]);
    expect(e2e.slack.calls().filter((c) => c.params.channel === SHARED_CHANNEL && c.method !== "conversations.info")).toEqual([]);
  }, 60_000);
});
