// `npm run slack-demo`: the Slack app end to end on this machine, offline.
// Starts the demo MCP server, a local Slack Web API stand-in (its page draws
// every message the app posts roughly as Slack would, offline), and the Worker with the Slack app
// on and pointed at the stand-in; then plays Slack: sends a signed mention
// whose scripted model asks to create a dashboard, and clicks "Approve" with
// a signed request once the approval is pending. Ctrl-C stops everything.
import { randomBytes } from "node:crypto";
import { startDemoMcpProcess } from "../test/support/demo-mcp-process";
import { blockActionsPayload, eventEnvelope, postSlackEvent, postSlackInteraction } from "../test/support/slack-signing";
import { startSlackStandIn } from "../test/support/slack-stand-in";
import { startWorkerServer } from "../test/support/worker-server";

const STAND_IN_PORT = Number(process.env.SLACK_STAND_IN_PORT ?? 8790);
const SECRET = randomBytes(16).toString("hex");
const BOT = "UDEMOBOT01";
const PERSON = "UDEMOPERSON";
const CHANNEL = "CDEMO00001";
/** Polling the run while waiting for its approval: the demo is interactive, a quarter second is instant enough. */
const POLL_MS = 250;

const demo = await startDemoMcpProcess();
const slack = await startSlackStandIn({ port: STAND_IN_PORT, botToken: "xoxb-demo" });
const worker = await startWorkerServer({
  MCP_SERVERS: JSON.stringify({ demo: { url: demo.url, trust_annotations: true } }),
  MUTATION_BUDGET: JSON.stringify({ mcp__demo__create_dashboard: 1 }),
  SLACK_SIGNING_SECRET: SECRET,
  SLACK_BOT_TOKEN: "xoxb-demo",
  SLACK_API_BASE_URL: slack.apiBaseUrl,
  SLACK_APPROVERS: JSON.stringify([PERSON]),
});
const stop = async () => {
  await worker.stop();
  await slack.stop();
  await demo.stop();
  process.exit(0);
};
process.on("SIGINT", () => void stop());

console.log(`\nWorker:           ${worker.url}   (API token ${worker.token})`);
console.log(`Slack stand-in:   ${slack.url}   ← open this page to see what the app posted\n`);

const script = [
  { text: "I'll create the dashboard; it needs your approval." },
  { tool_calls: [{ tool_name: "mcp__demo__create_dashboard", arguments: { title: "Checkout latency" } }] },
  { text: "Created it." },
];
const text = `<@${BOT}> make a checkout latency dashboard\n\`\`\`json\n${JSON.stringify({ script })}\n\`\`\``;
const eventId = `EvDEMO${Date.now()}`;
const ts = `${Math.floor(Date.now() / 1000)}.000100`;
const ack = await postSlackEvent(
  `${worker.url}/slack/events`,
  SECRET,
  eventEnvelope({ type: "app_mention", user: PERSON, channel: CHANNEL, text, ts }, eventId, BOT),
);
console.log(`Sent a signed app_mention (event ${eventId}): Slack got ${ack.status}.`);
const receipt = (await (await worker.api(`/api/deliveries/${eventId}`)).json()) as { run_id: string };
console.log(`Run ${receipt.run_id} started.`);

let approval: { approval_id: string } | undefined;
while (!approval) {
  const summary = (await (await worker.api(`/api/runs/${receipt.run_id}`)).json()) as { pending_approvals: { approval_id: string }[] };
  approval = summary.pending_approvals[0];
  if (!approval) await new Promise((r) => setTimeout(r, POLL_MS));
}
console.log(`Approval ${approval.approval_id} is pending; clicking "Approve" as <@${PERSON}> with a signed block_actions request…`);
await postSlackInteraction(
  `${worker.url}/slack/interactivity`,
  SECRET,
  blockActionsPayload({
    actionId: "approval_approve",
    user: PERSON,
    channel: CHANNEL,
    value: JSON.stringify({ run_id: receipt.run_id, approval_id: approval.approval_id, level: "approve" }),
    triggerId: "demo-trigger",
  }),
);
console.log(`Done. Events: curl -N -H 'authorization: Bearer ${worker.token}' ${worker.url}/api/runs/${receipt.run_id}/events`);
console.log(`Slack calls so far: ${slack.url}/_calls  (Ctrl-C to stop)`);
