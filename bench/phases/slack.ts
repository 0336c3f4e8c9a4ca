// Phase 8, the Slack app (issue 10): request → acknowledgement of a signed
// app_mention, event → the first Slack Web API call of its run at the Slack
// stand-in, and a signed approve click → the chat.update of that approval
// message at the stand-in; p50/p99. The Worker runs with the Slack app on and
// SLACK_API_BASE_URL pointing at the stand-in (test/support/slack-stand-in.ts,
// in this process), the demo MCP server executing what a click approves.
import { performance } from "node:perf_hooks";
import { blockActionsPayload, eventEnvelope, postSlackEvent, postSlackInteraction } from "../../test/support/slack-signing";
import { type RecordedCall, type SlackStandIn, startSlackStandIn } from "../../test/support/slack-stand-in";
import { type Client, log, range, sleep, sortedCopy, Waiter } from "../http-client";
import { withServer } from "../servers";
import { CREATE_DASHBOARD, DELIVERY_TIMEOUT_MS, SLACK_SAMPLES, SLACK_WARMUP } from "../settings";
import { approvalVars } from "../watched-run";

/** Bench-only Slack credentials and identities (never real ones). */
export const SIGNING_SECRET = "bench-slack-signing-secret";
const BOT_TOKEN = "xoxb-bench-bot-token";
const BOT = "UBENCHBOT";
const REQUESTER = "UBENCHREQ";
const APPROVER = "UBENCHAPPROVER";
/** Pause between polls of a run's summary while waiting for it to end (outside every timed section), ms. */
const END_POLL_MS = 20;

export interface SlackLatency {
  /** Signed app_mention sent → its response (the acknowledgement), ms, sorted. */
  ack: number[];
  /** Signed app_mention sent → the first Web API call naming the run's channel arrives at the stand-in, ms, sorted. */
  firstCall: number[];
  /** Which method that first call was, by count. */
  firstMethods: Map<string, number>;
  /** Signed approve click sent → the approval message's chat.update arrives at the stand-in, ms, sorted. */
  clickToUpdate: number[];
  /** The click's own response, ms, sorted. */
  clickAck: number[];
}

/** A Web API call as the stand-in received it, timed on this process's clock (performance.now(), ms). */
interface Arrival {
  call: RecordedCall;
  at: number;
}

type Block = { type: string; elements?: { action_id?: string; value?: string }[] };
export const buttonsOf = (call: RecordedCall) =>
  ((call.params.blocks ?? []) as Block[]).flatMap((b) => (b.type === "actions" ? (b.elements ?? []) : []));

const mentionText = (title: string) =>
  `<@${BOT}> bench\n\`\`\`json\n${JSON.stringify({
    script: [{ tool_calls: [{ tool_name: CREATE_DASHBOARD, tool_call_id: "call-1", arguments: { title } }] }, { text: "done" }],
  })}\n\`\`\``;

export function clickPayload(channel: string, value: string, n: number): Record<string, unknown> {
  return blockActionsPayload({
    actionId: "approval_approve",
    user: APPROVER,
    channel,
    value,
    triggerId: `bench-trigger-${n}`,
    botUserId: BOT,
  });
}

/** A signed app_mention in `channel` whose script is one create_dashboard titled `title`; resolves once acknowledged with 200. */
export async function mentionRun(url: string, channel: string, eventId: string, title: string, n: number): Promise<void> {
  const event = {
    type: "app_mention",
    user: REQUESTER,
    text: mentionText(title),
    ts: `${Math.floor(Date.now() / 1000)}.${String(n).padStart(6, "0")}`,
    channel,
  };
  const res = await postSlackEvent(`${url}/slack/events`, SIGNING_SECRET, eventEnvelope(event, eventId, BOT));
  await res.text();
  if (res.status !== 200) throw new Error(`app_mention ${eventId}: ${res.status}`);
}

/** The Slack Web API stand-in of a Slack phase, in this process; every call it receives is handed to `onCall`. */
export function startBenchSlack(onCall: (call: RecordedCall) => void): Promise<SlackStandIn> {
  return startSlackStandIn({ botToken: BOT_TOKEN, quiet: true, onCall });
}

/** A Slack phase's server settings: the approval vars, the Slack app on against `slack`, APPROVER in SLACK_APPROVERS. */
export function slackVars(mcpUrl: string, slack: SlackStandIn): Record<string, string> {
  return {
    ...approvalVars(mcpUrl),
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_API_BASE_URL: slack.apiBaseUrl,
    SLACK_APPROVERS: JSON.stringify([APPROVER]),
  };
}

/**
 * One Slack-started run at a time, each in a channel of its own (so every
 * Web API call the stand-in receives is attributed to its run by `channel`):
 * the mention's script is one create_dashboard call then a closing text.
 * Times are taken on this process's monotonic clock: just before each signed
 * request is sent, at its response, and in the stand-in's request handler as
 * each call is recorded (before it is answered). The next run starts once the
 * previous one has completed.
 */
async function measureSlack(client: Client, url: string, slack: SlackStandIn, arrivals: Arrival[], waiter: Waiter): Promise<SlackLatency> {
  const result: SlackLatency = { ack: [], firstCall: [], firstMethods: new Map(), clickToUpdate: [], clickAck: [] };
  const stamp = Date.now();
  for (const i of range(SLACK_WARMUP + SLACK_SAMPLES)) {
    const channel = `CBENCH${stamp}${i}`;
    const eventId = `EvBench${stamp}${i}`;
    const inChannel = (pick: (a: Arrival) => boolean) => arrivals.find((a) => a.call.params.channel === channel && pick(a));
    const event = {
      type: "app_mention",
      user: REQUESTER,
      text: mentionText(`slack bench ${i}`),
      ts: `${Math.floor(stamp / 1000)}.${String(i).padStart(6, "0")}`,
      channel,
    };
    const sent = performance.now();
    const res = await postSlackEvent(`${url}/slack/events`, SIGNING_SECRET, eventEnvelope(event, eventId, BOT));
    const acked = performance.now();
    await res.text();
    if (res.status !== 200) throw new Error(`app_mention ${eventId}: ${res.status}`);
    await waiter.until(() => inChannel(() => true) !== undefined, `the first Slack call for ${eventId}`);
    const first = inChannel(() => true)!;
    await waiter.until(
      () => inChannel((a) => a.call.method === "chat.postMessage" && buttonsOf(a.call).length > 0) !== undefined,
      `the approval post for ${eventId}`,
    );
    const approvalPost = inChannel((a) => a.call.method === "chat.postMessage" && buttonsOf(a.call).length > 0)!;
    const value = buttonsOf(approvalPost.call).find((b) => b.action_id === "approval_approve")?.value;
    if (value === undefined) throw new Error(`the approval post for ${eventId} has no approval_approve button`);
    const clickSent = performance.now();
    const clickRes = await postSlackInteraction(`${url}/slack/interactivity`, SIGNING_SECRET, clickPayload(channel, value, i));
    const clickAcked = performance.now();
    await clickRes.text();
    if (clickRes.status !== 200) throw new Error(`approve click for ${eventId}: ${clickRes.status}`);
    const update = () => inChannel((a) => a.call.method === "chat.update" && a.at >= clickSent);
    await waiter.until(() => update() !== undefined, `the chat.update after the click for ${eventId}`);
    const updated = update()!;
    if (buttonsOf(updated.call).length > 0) throw new Error(`the chat.update for ${eventId} still carries buttons`);
    const { run_id } = await client.expect<{ run_id: string }>(200, "GET", `/api/deliveries/${encodeURIComponent(eventId)}?source=slack`);
    await waitForEnd(client, run_id);
    if (i < SLACK_WARMUP) continue;
    result.ack.push(acked - sent);
    result.firstCall.push(first.at - sent);
    result.firstMethods.set(first.call.method, (result.firstMethods.get(first.call.method) ?? 0) + 1);
    result.clickToUpdate.push(updated.at - clickSent);
    result.clickAck.push(clickAcked - clickSent);
  }
  slack.reset();
  return {
    ...result,
    ack: sortedCopy(result.ack),
    firstCall: sortedCopy(result.firstCall),
    clickToUpdate: sortedCopy(result.clickToUpdate),
    clickAck: sortedCopy(result.clickAck),
  };
}

/** Polls the run's summary until it has ended (bounded). */
export async function waitForEnd(client: Client, runId: string): Promise<void> {
  const deadline = performance.now() + DELIVERY_TIMEOUT_MS;
  for (;;) {
    const { status } = await client.engine.summary(runId);
    if (status === "completed") return;
    if (status !== "running") throw new Error(`Slack run ${runId} ended ${status}, not completed`);
    if (performance.now() > deadline) throw new Error(`Slack run ${runId} did not complete within ${DELIVERY_TIMEOUT_MS} ms`);
    await sleep(END_POLL_MS);
  }
}

/** Phase 8 on its own server, with the Slack app on and the stand-in in this process. */
export async function slackPhase(mcpUrl: string): Promise<SlackLatency> {
  const arrivals: Arrival[] = [];
  const waiter = new Waiter();
  const slack = await startBenchSlack((call) => {
    arrivals.push({ call, at: performance.now() });
    waiter.notify();
  });
  try {
    return await withServer(
      async (server, client) => {
        log(`8. Slack: ${SLACK_WARMUP} + ${SLACK_SAMPLES} signed app_mention runs, one at a time, each approved by a signed click`);
        return measureSlack(client, server.url, slack, arrivals, waiter);
      },
      slackVars(mcpUrl, slack),
    );
  } finally {
    await slack.stop();
  }
}
