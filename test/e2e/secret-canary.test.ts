// The secret canary (contract section 17, issue 9): unique secret values are
// planted in every input position of a run (tool arguments at depth under
// each key style, header pairs, values that are credentials on their own, a
// result that echoes them) and searched for in every output surface: the SSE
// stream, the summary, the receipt, the durable outcomes, the D1 database's
// files (every table, WAL included), the server's log output and the
// committed fixtures. Found: zero. The real arguments still reach the tool:
// the demo server's call log shows them byte for byte.
// Section 20 adds a Slack-started run (the Slack app on, its Web API a local
// stand-in) with canaries and one sample of every secret rule
// (test/fixtures/secret-samples.ts) in a human__ask question, in arguments
// under each pair shape, in a tool result and in the model's text, plus
// signed Slack payloads no listener takes carrying canaries; searched in the
// stream, summary, listings, every Slack post, the server's log output
// (wrangler dev's, the Worker's and its libraries' lines) and every D1 file.
import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { REDACTED, redactSecrets } from "../../src/execution/redaction";
import { NAMED_TEXT_SAMPLES, piecesOf, SAMPLE_SECRETS, SECRET_SAMPLES } from "../fixtures/secret-samples";
import { blockActionsPayload, eventEnvelope, postSlackEvent, postSlackInteraction, scriptMessage } from "../support/slack-signing";
import { type SlackStandIn, startSlackStandIn } from "../support/slack-stand-in";
import { PROJECT_ROOT, startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demoBase = inject("demoMcpBaseUrl");
/** Polling interval while waiting for a run to reach a state (short: the run takes well under a second). */
const POLL_MS = 50;
const WAIT_MS = 20_000;

let server: WorkerServer;
let slack: SlackStandIn;
const SLACK_SECRET = "canary-signing-secret";
const SLACK_BOT_TOKEN = "xoxb-canary-bot-token";
const BOT = "UBOTCANARY";
const REQUESTER = "UCANARYREQ";
const markers: string[] = [];
/** A unique canary: letters and digits only, so it fits inside every key format below. */
function canary(): string {
  const m = `CANARY${randomBytes(9).toString("hex")}`;
  markers.push(m);
  return m;
}

/** Credential keys in every case and separator style. */
const SECRET_KEYS = [
  "password",
  "PASSWORD",
  "Password",
  "db_password",
  "dbPassword",
  "DB-PASSWORD",
  "passwd",
  "pwd",
  "pass",
  "api key",
  "api_key",
  "apiKey",
  "x-api-key",
  "APIKEY",
  "access key",
  "accessKeyId",
  "private_key",
  "privateKey",
  "client secret",
  "clientSecret",
  "access_token",
  "AccessToken",
  "authorization",
  "Authorization",
  "bearer",
  "cookie",
  "Set-Cookie",
  "session",
  "sessionId",
  "signature",
  "sig",
  "credential",
  "auth",
];

function plantedArguments(): Record<string, unknown> {
  const byKey = Object.fromEntries(SECRET_KEYS.map((k) => [k, canary()]));
  const ownValues = () => ({
    note: `Authorization: Bearer ${canary()}`,
    basic: `Basic ${Buffer.from(`user:${canary()}`).toString("base64")}`,
    url: `postgres://admin:${canary()}@db.internal:5432/app`,
    openai: `sk-${canary()}`,
    github: `ghp_${canary()}`,
    slack: `xoxb-${canary()}`,
    jwt: `eyJhbGciOiJub25lIn0.eyJ${canary()}.`,
    pem: `-----BEGIN PRIVATE KEY-----\n${canary()}\n-----END PRIVATE KEY-----`,
  });
  let deep: unknown = { ...Object.fromEntries(SECRET_KEYS.map((k) => [k, canary()])), ...ownValues() };
  for (let i = 0; i < 40; i++) deep = i % 2 === 0 ? { level: deep } : [deep];
  return {
    title: "canary",
    ...byKey,
    ...ownValues(),
    headers: [
      ["Authorization", `Bearer ${canary()}`],
      ["X-Api-Key", canary()],
    ],
    header_list: [
      { name: "cookie", value: canary() },
      { name: "x-auth-token", value: canary() },
    ],
    deep,
  };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + WAIT_MS;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n${server.logs()}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Every file under `dir`, as one string per file (binary content read as latin1: byte for byte). */
async function filesUnder(dir: string): Promise<Array<{ path: string; text: string }>> {
  const out: Array<{ path: string; text: string }> = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.push({ path, text: (await readFile(path)).toString("latin1") });
  }
  return out;
}

function expectNoCanary(surface: string, text: string): void {
  const found = [...markers, ...samplePieces].filter((m) => text.includes(m));
  // Where each leak sits, so a failure says which field carried it.
  const context = found.map((m) => text.slice(Math.max(0, text.indexOf(m) - 120), text.indexOf(m) + m.length));
  // Soft: one run reports every leaking surface, not only the first.
  expect.soft(context, `${surface} leaks ${found.length} canaries`).toEqual([]);
}

/** Pieces of every fixture sample: none may come out anywhere (markers are searched as they are). */
const samplePieces: string[] = [];

beforeAll(async () => {
  slack = await startSlackStandIn({ botToken: SLACK_BOT_TOKEN, quiet: true });
  // The Slack app is on; runs started through the API post nothing, so the first tests are as before.
  server = await startWorkerServer(
    {
      ...e2eVars(`${demoBase}/mcp`),
      SLACK_SIGNING_SECRET: SLACK_SECRET,
      SLACK_BOT_TOKEN,
      SLACK_API_BASE_URL: slack.apiBaseUrl,
      SLACK_BOT_USER_ID: BOT,
      APPROVAL_TIMEOUT_MS: "60000",
      // Every line the Worker and its libraries log (console.log included) reaches logs().
    },
    { logLevel: "log" },
  );
  expect((await fetch(`${demoBase}/control/reset`, { method: "POST" })).status).toBe(200);
});

afterAll(async () => {
  await server?.stop();
  await slack?.stop();
});

describe("secret canary", () => {
  it("plants secrets in every input position and finds none in any output surface", async () => {
    const echoArgs = plantedArguments();
    const writeArgs = { ...plantedArguments(), title: `Bearer ${canary()}` };
    const deliveryId = `canary-${randomBytes(4).toString("hex")}`;
    const res = await server.api("/api/trigger", {
      method: "POST",
      body: JSON.stringify({
        message: "canary run",
        delivery_id: deliveryId,
        script: [
          { tool_calls: [{ tool_name: "mcp__demo__echo", tool_call_id: "echo-1", arguments: echoArgs }] },
          { tool_calls: [{ tool_name: "mcp__demo__create_dashboard", tool_call_id: "write-1", arguments: writeArgs }] },
          { text: "done" },
        ],
      }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    const { run_id: runId } = (await res.json()) as { run_id: string };

    // The write waits for a person: approve it (the arguments shown are redacted).
    const approval = await waitFor("the approval", async () => {
      const summary = (await (await server.api(`/api/runs/${runId}`)).json()) as { pending_approvals: { approval_id: string }[] };
      return summary.pending_approvals[0];
    });
    const decided = await server.api(`/api/runs/${runId}/approvals/${approval.approval_id}`, {
      method: "POST",
      // The decision's reason is kept (contract section 6): secrets in it are kept redacted.
      body: JSON.stringify({ decision: "approve", reason: `ok; api_key=${canary()}, Bearer ${canary()}` }),
    });
    expect(decided.status).toBeLessThan(300);
    const summaryText = await waitFor("the run's end", async () => {
      const text = await (await server.api(`/api/runs/${runId}`)).text();
      return JSON.parse(text).status === "running" ? undefined : text;
    });
    expect(JSON.parse(summaryText).status).toBe("completed");

    // Output surfaces.
    const stream = await (await server.api(`/api/runs/${runId}/events`, { headers: { accept: "text/event-stream" } })).text();
    expect(stream).toContain("event: run_completed");
    expect(stream).toContain(REDACTED); // the approval's arguments and the echoed summary were there, redacted
    expectNoCanary("the SSE stream", stream);
    expect(stream).toMatch(/"reason":"ok; api_key=\[redacted\]/);
    const approvals = await waitFor("the approval in the listing", async () => {
      const text = await (await server.api("/api/approvals?status=resolved&limit=200")).text();
      return text.includes(approval.approval_id) ? text : undefined;
    });
    expectNoCanary("the approvals listing", approvals);
    expectNoCanary("the run summary", summaryText);
    expectNoCanary("the receipt", await (await server.api(`/api/deliveries/${deliveryId}`)).text());
    const mutations = await (await server.api(`/api/runs/${runId}/mutations`)).text();
    expect(mutations).toContain("completed");
    expectNoCanary("the durable outcomes", mutations);
    const d1Files = await filesUnder(join(server.stateDir, "v3", "d1"));
    expect(d1Files.length).toBeGreaterThan(0);
    for (const file of d1Files) expectNoCanary(`D1 file ${file.path}`, file.text);
    expectNoCanary("the server's log output", server.logs());

    // Contract section 22: at info (LOG_LEVEL's default) the run's life is in the log lines, by run_id.
    const lines = await waitFor("the run's last lifecycle line", async () => {
      const mine = server
        .logs()
        .split("\n")
        .flatMap((l) => {
          const at = l.indexOf('{"level"');
          if (at === -1) return [];
          try {
            return [JSON.parse(l.slice(at)) as Record<string, unknown>];
          } catch {
            return [];
          }
        })
        .filter((l) => l.run_id === runId);
      return mine.some((l) => l.msg === "run ended") ? mine : undefined;
    });
    const said = (msg: string) => lines.filter((l) => l.msg === msg);
    expect(said("run started")).toHaveLength(1);
    expect(said("approval asked")).toEqual([
      expect.objectContaining({ level: "info", tool_call_id: "write-1", approval_id: approval.approval_id }),
    ]);
    expect(said("approval resolved")).toEqual([expect.objectContaining({ tool_call_id: "write-1", decision: "approved" })]);
    const executed = said("tool call executed");
    expect(executed.map((l) => l.tool_call_id).sort()).toEqual(["echo-1", "write-1"]);
    expect(executed.find((l) => l.tool_call_id === "write-1")).toMatchObject({ outcome: "ok", mutation_id: expect.any(String) });
    expect(said("run ended")).toEqual([expect.objectContaining({ status: "completed" })]);

    // The real arguments reached the tools, exactly as sent.
    const calls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { calls: { tool: string; arguments: unknown }[] };
    expect(calls.calls.find((c) => c.tool === "echo")?.arguments).toEqual(echoArgs);
    expect(calls.calls.find((c) => c.tool === "create_dashboard")?.arguments).toEqual(writeArgs);
  });

  it("section 20: a Slack-started run with canaries and every rule's sample in a question, pair shapes, a tool result and model text, and unhandled Slack payloads: none in any surface or log line", async () => {
    // Every sample goes in three places (the question, the model's text, a tool's arguments and so its echoed
    // result): more copies would take the Slack message that carries the script over the 32,768 characters a
    // message may have (section 3).
    const pairs = (withSamples = true) => ({
      header_pairs: [["X-Api-Key", canary()]],
      named: [{ name: "Cookie", value: `sid=${canary()}` }],
      keyed: [{ key: "Authorization", value: canary() }],
      argv: ["curl", "--password", canary(), `--token=${canary()}`, "--api-key", canary()],
      privkey: canary(),
      ssh_key: canary(),
      license_key: canary(),
      azure: `DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${canary()};EndpointSuffix=core.windows.net`,
      in_text: `sent headers [["X-Api-Key","${canary()}"]] and {"name":"Cookie","value":"${canary()}"}; ran mysql --password ${canary()}`,
      ...(withSamples ? { samples: SECRET_SAMPLES.map((x) => x.value) } : {}),
    });
    samplePieces.push(...SAMPLE_SECRETS.flatMap(piecesOf));
    const allSamples = SECRET_SAMPLES.map((x) => x.value).join(" ");
    const question = `password: ${canary()} token ${`ghp_${canary()}${canary()}`.slice(0, 40)} ${allSamples} ${NAMED_TEXT_SAMPLES.map((x) => x.text).join(" ")}`;
    samplePieces.push(...NAMED_TEXT_SAMPLES.map((x) => x.secret));
    const script = [
      {
        text: `thinking: Authorization: Bearer ${canary()} ${allSamples}`,
        tool_calls: [{ tool_name: "mcp__demo__echo", tool_call_id: "echo-20", arguments: pairs() }],
      },
      { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-20", arguments: { question } }] },
      {
        tool_calls: [
          { tool_name: "mcp__demo__create_dashboard", tool_call_id: "write-20", arguments: { title: "canary 20", ...pairs(false) } },
        ],
      },
      { text: `done with secret=${canary()}` },
    ];
    const eventId = `EvCanary${randomBytes(4).toString("hex")}`;
    const ts = `${Math.floor(Date.now() / 1000)}.000100`;
    const mentionEvent = { type: "app_mention", user: REQUESTER, channel: "C0CANARY1", ts, text: `<@${BOT}> ${scriptMessage(script)}` };
    expect((await postSlackEvent(`${server.url}/slack/events`, SLACK_SECRET, eventEnvelope(mentionEvent, eventId, BOT))).status).toBe(200);
    const { run_id: runId } = (await (await server.api(`/api/deliveries/${eventId}?source=slack`)).json()) as { run_id: string };

    // Signed payloads no listener takes, carrying canaries: acknowledged, and logged nowhere.
    const unhandled = [
      postSlackInteraction(`${server.url}/slack/interactivity`, SLACK_SECRET, {
        ...blockActionsPayload({
          actionId: "not_this_apps",
          user: REQUESTER,
          channel: "C0CANARY1",
          value: `password: ${canary()}`,
          triggerId: "t1",
        }),
        note: `ghp_${canary()}${canary()}`,
      }),
      postSlackInteraction(`${server.url}/slack/interactivity`, SLACK_SECRET, {
        type: "view_closed",
        user: { id: REQUESTER },
        view: { private_metadata: canary() },
      }),
      postSlackInteraction(`${server.url}/slack/interactivity`, SLACK_SECRET, {
        type: "block_actions",
        user: { id: REQUESTER },
        actions: canary(),
      }),
      postSlackEvent(
        `${server.url}/slack/events`,
        SLACK_SECRET,
        eventEnvelope({ type: "reaction_added", user: REQUESTER, reaction: canary() }, `EvR${canary()}`, BOT),
      ),
      postSlackEvent(`${server.url}/slack/events`, SLACK_SECRET, { type: "event_callback", token: canary() }),
    ];
    const statuses = await Promise.all(unhandled.map(async (r) => (await r).status));
    expect(statuses).toEqual([200, 200, 200, 200, 400]);

    // The question waits: the listing and the summary show it redacted; answer it.
    const listed = await waitFor("the question in /api/inputs", async () => {
      const text = await (await server.api("/api/inputs?status=pending")).text();
      return text.includes(runId) ? text : undefined;
    });
    expect(listed).toContain(REDACTED);
    expectNoCanary("/api/inputs", listed);
    expectNoCanary("the summary (question pending)", await (await server.api(`/api/runs/${runId}`)).text());
    const answered = await server.api(`/api/runs/${runId}/inputs/ask-20`, {
      method: "POST",
      body: JSON.stringify({ answer: "ok" }),
    });
    expect(answered.status).toBeLessThan(300);
    const approval = await waitFor("the approval", async () => {
      const summary = (await (await server.api(`/api/runs/${runId}`)).json()) as { pending_approvals: { approval_id: string }[] };
      return summary.pending_approvals[0];
    });
    expectNoCanary("/api/approvals", await (await server.api("/api/approvals")).text());
    const decided = await server.api(`/api/runs/${runId}/approvals/${approval.approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBeLessThan(300);
    const summaryText = await waitFor("the run's end", async () => {
      const text = await (await server.api(`/api/runs/${runId}`)).text();
      const parsed = JSON.parse(text) as { status: string; slack_posts_pending: number };
      return parsed.status === "running" || parsed.slack_posts_pending > 0 ? undefined : text;
    });
    expect(JSON.parse(summaryText).status, summaryText.slice(0, 2000)).toBe("completed");

    const stream = await (await server.api(`/api/runs/${runId}/events`, { headers: { accept: "text/event-stream" } })).text();
    for (const type of ["assistant_message", "human_input_requested", "approval_requested", "tool_execution", "run_completed"]) {
      expect(stream).toContain(`event: ${type}`);
    }
    expectNoCanary("the SSE stream", stream);
    expectNoCanary("the run summary", summaryText);
    expectNoCanary("/api/runs", await (await server.api("/api/runs")).text());
    expectNoCanary("/api/mutations", await (await server.api("/api/mutations")).text());
    const posts = slack.calls();
    expect(posts.filter((c) => c.method === "chat.postMessage").length).toBeGreaterThanOrEqual(4);
    expectNoCanary("the Slack posts", JSON.stringify(posts));
    const stateFiles = await filesUnder(server.stateDir);
    expect(stateFiles.some((f) => f.path.includes(`${join("v3", "d1")}`))).toBe(true);
    // Every file wrangler keeps (D1, caches, any local trace store) but the run objects' own storage, which holds
    // the real arguments while the run needs them (contract section 17).
    for (const file of stateFiles.filter((f) => !f.path.includes(join("v3", "do")))) expectNoCanary(`state file ${file.path}`, file.text);
    // The run's own log lines and the libraries': the unhandled payloads above were received and acknowledged.
    expectNoCanary("the server's log output", server.logs());
    expect(server.logs()).not.toContain("No listener found");
  });

  it("keeps the committed fixtures free of anything redaction would change", async () => {
    const fixtures = JSON.parse(await readFile(join(PROJECT_ROOT, "test/fixtures/approved_execution_v2.json"), "utf8"));
    expect(redactSecrets(fixtures)).toEqual(fixtures);
  });

  it("keeps human__ask arguments and model text redacted too, and purges the run's storage after retention", async () => {
    const retentionSeconds = 2;
    const short = await startWorkerServer({ ...e2eVars(`${demoBase}/mcp`), RUN_RETENTION_SECONDS: String(retentionSeconds) });
    try {
      const askArgs = { password: canary(), prompt: { api_key: canary(), text: `Bearer ${canary()}` } };
      const res = await short.api("/api/trigger", {
        method: "POST",
        body: JSON.stringify({
          message: `deploy with Authorization: Bearer ${canary()}`,
          script: [
            { text: `thinking about sk-${canary()}` },
            { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: askArgs }] },
            { text: "done" },
          ],
        }),
      });
      expect(res.status, await res.clone().text()).toBe(202);
      const { run_id: runId } = (await res.json()) as { run_id: string };
      const pending = await waitFor("the question", async () => {
        const text = await (await short.api(`/api/runs/${runId}`)).text();
        return JSON.parse(text).pending_inputs.length > 0 ? text : undefined;
      });
      expectNoCanary("the summary's pending_inputs", pending);
      const answered = await short.api(`/api/runs/${runId}/inputs/ask-1`, {
        method: "POST",
        body: JSON.stringify({ answer: "ok" }),
      });
      expect(answered.status).toBeLessThan(300);
      await waitFor("the run's end", async () => {
        const text = await (await short.api(`/api/runs/${runId}`)).text();
        return JSON.parse(text).status === "running" ? undefined : text;
      });
      const stream = await (await short.api(`/api/runs/${runId}/events`, { headers: { accept: "text/event-stream" } })).text();
      expect(stream).toContain("event: human_input_requested");
      expectNoCanary("the SSE stream (human__ask, assistant text)", stream);

      // After retention the run is gone, and so is every copy of its input in the object's storage.
      const purgeBy = Date.now() + retentionSeconds * 1000 + 10_000;
      while (Date.now() < purgeBy && (await short.api(`/api/runs/${runId}`)).status !== 404) await new Promise((r) => setTimeout(r, 250));
      expect.soft((await short.api(`/api/runs/${runId}`)).status, "the run after its retention").toBe(404);
      for (const file of await filesUnder(join(short.stateDir, "v3", "do"))) expectNoCanary(`Durable Object file ${file.path}`, file.text);
      expectNoCanary("the server's log output", short.logs());
    } finally {
      await short.stop();
    }
  });
});
