// Slack decisions under section 19's approval policy, over real loopback HTTP:
// wrangler dev serving the Worker, clicks signed as Slack signs them, the Web
// API stand-in answering users.info with confirmed emails. A two-person rule
// where the first voter clicks again, a requester refused under
// self_approval: false (told who may decide, audited), a Slack user and the
// token they own being one person, and approvers that name nobody in Slack;
// and one person across every credential (API token, Access assertion
// verified against the JWKS stand-in, signed Slack click) under one rule.
// And a 2026-07-28 server's question mid-call under self_approval: false
// (issue 28 point 10): its requester may decline it but not accept it.
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { scriptMessage, TEST_TEAM_ID } from "../support/slack-signing";
import type { RecordedCall } from "../support/slack-stand-in";
import { useSlackE2e } from "../support/slack-e2e-setup";
import { type AccessIssuer, startAccessIssuer } from "../support/jwks-server";
import { eventTypes, RawSseClient } from "../support/sse-client";
import { type DemoMcpProcess, startDemoMcpProcess } from "../support/demo-mcp-process";

const BOT = "UBOT0002";
const REQUESTER = "UREQUESTER2";
const ALICE = "UALICE0001";
const BOB = "UBOB000001";
const STRANGER = "USTRANGER2";
const CHANNEL = "C0POLICY01";
const CREATE = "mcp__demo__create_dashboard";
const ALERT = "mcp__demo__create_alert_from_chart";
const demoBase = inject("demoMcpBaseUrl");
const AUD = "aud-slack-policy";
/** The demo server as `npm start` runs it (2026-07-28): its schedule_report asks a question mid-call. */
const REPORT_DASHBOARD = "mcp__report__create_dashboard";
const REPORT = "mcp__report__schedule_report";

let access: AccessIssuer;
let report: DemoMcpProcess;

beforeAll(async () => {
  [access, report] = await Promise.all([startAccessIssuer("k-policy", AUD), startDemoMcpProcess({ DEMO_MCP_ERA: "2026-07-28" })]);
});

afterAll(async () => {
  await access?.stop();
  await report?.stop();
});

const e2e = useSlackE2e({
  secret: "test-signing-secret-policy",
  botToken: "xoxb-test-bot-token-policy",
  bot: BOT,
  eventIdPrefix: "EvP",
  vars: (base) => ({
    ACCESS_TEAM_DOMAIN: access.url,
    ACCESS_AUD: AUD,
    ACCESS_ROLES: JSON.stringify({ "alice@example.com": ["requester", "approver"], "bob@example.com": ["approver"] }),
    MCP_SERVERS: JSON.stringify({ ...JSON.parse(base.MCP_SERVERS ?? "{}"), report: { url: report.url } }),
    MUTATION_BUDGET: JSON.stringify({ ...JSON.parse(base.MUTATION_BUDGET ?? "{}"), [REPORT_DASHBOARD]: 1, [REPORT]: 1 }),
    TOOL_POLICY: JSON.stringify({
      [CREATE]: { approvers: ["group:reviewers", `slack:${TEST_TEAM_ID}:${REQUESTER}`], approvals_required: 2, self_approval: false },
      [ALERT]: { level: "approve", approvers: ["token:ops-*"] },
      [REPORT]: { self_approval: false },
    }),
    APPROVER_GROUPS: JSON.stringify({ reviewers: [`slack:${TEST_TEAM_ID}:${ALICE}`, `slack:${TEST_TEAM_ID}:${BOB}`, "token:alice-*"] }),
  }),
});
const { eventId, ts } = e2e;

beforeEach(() => {
  e2e.slack.setUserEmail(ALICE, "Alice@Example.com");
});

async function summary(runId: string) {
  return (await (await e2e.server.api(`/api/runs/${runId}`)).json()) as {
    status: string;
    pending_approvals: { approval_id: string; tool_name: string }[];
  };
}

async function runEvents(runId: string): Promise<Record<string, any>[]> {
  const text = await (await e2e.server.api(`/api/runs/${runId}/events`)).text();
  return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, any>);
}

async function startBySlack(tool: string, args: Record<string, unknown>): Promise<{ runId: string; approvalId: string }> {
  const id = eventId();
  const event = {
    type: "app_mention",
    user: REQUESTER,
    text: `<@${BOT}> ${scriptMessage([{ tool_calls: [{ tool_name: tool, tool_call_id: "w1", arguments: args }] }, { text: "done" }])}`,
    ts: ts(),
    channel: CHANNEL,
    event_ts: ts(),
  };
  expect((await e2e.postEvent(e2e.envelope(event, id))).status).toBe(200);
  // The ack may come before the start finished (its budget is 2 s): the receipt is polled for.
  const found: { receipt?: { run_id: string } } = {};
  await expect
    .poll(
      async () => {
        const res = await e2e.server.api(`/api/deliveries/${encodeURIComponent(id)}?source=slack`);
        if (res.status === 200) found.receipt = (await res.json()) as { run_id: string };
        return found.receipt !== undefined;
      },
      { timeout: 10_000 },
    )
    .toBe(true);
  const receipt = found.receipt;
  if (receipt === undefined) throw new Error("no receipt");
  await expect.poll(async () => (await summary(receipt.run_id)).pending_approvals.length, { timeout: 10_000 }).toBe(1);
  return { runId: receipt.run_id, approvalId: (await summary(receipt.run_id)).pending_approvals[0]!.approval_id };
}

function click(decision: "approve" | "deny", user: string, runId: string, approvalId: string) {
  return e2e.click({
    actionId: decision === "approve" ? "approval_approve" : "approval_deny",
    user,
    channel: CHANNEL,
    value: JSON.stringify({ run_id: runId, approval_id: approvalId, level: "approve" }),
  });
}

/** A POST as the Cloudflare Access user `email` (a browser-held credential: the page's own Origin). */
async function postAsAccess(email: string, path: string, body: unknown): Promise<Response> {
  const jwt = await access.assertion(email);
  return fetch(`${e2e.server.url}${path}`, {
    method: "POST",
    headers: { "cf-access-jwt-assertion": jwt, origin: e2e.server.url, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** A decision as the Cloudflare Access user `email`. */
function decideAsAccess(email: string, runId: string, approvalId: string, decision: "approve" | "deny"): Promise<Response> {
  return postAsAccess(email, `/api/runs/${runId}/approvals/${approvalId}`, { decision });
}

/** A token the Access user `email` mints for themselves (contract section 18: owned_by_creator, that person). */
async function mintAsAccess(email: string, name: string, roles: string[]): Promise<string> {
  const res = await postAsAccess(email, "/api/tokens", { name, roles });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

/** A token root makes (an admin), with `owner` recorded: it proves nothing about that owner. */
async function adminToken(name: string, roles: string[], owner?: string): Promise<string> {
  const res = await e2e.server.api("/api/tokens", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, roles, ...(owner !== undefined ? { owner } : {}) }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

/** POST `body` to `path` with a bearer token. */
function postWith(token: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${e2e.server.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Triggers a one-call scripted run with `token` (and `user_id` when relayed); answers its run id once the call waits for approval. */
async function startWith(
  token: string,
  tool: string,
  args: Record<string, unknown>,
  userId?: string,
): Promise<{ runId: string; approvalId: string }> {
  const started = await postWith(token, "/api/trigger", {
    message: "policy",
    channel_id: CHANNEL,
    ...(userId !== undefined ? { user_id: userId } : {}),
    script: [{ tool_calls: [{ tool_name: tool, tool_call_id: "w1", arguments: args }] }, { text: "done" }],
  });
  expect(started.status, await started.clone().text()).toBe(202);
  const { run_id: runId } = (await started.json()) as { run_id: string };
  await expect.poll(async () => (await summary(runId)).pending_approvals.length, { timeout: 10_000 }).toBe(1);
  return { runId, approvalId: (await summary(runId)).pending_approvals[0]!.approval_id };
}

/** A running run's events as they come (its stream stays open while it runs): close it when done. */
async function watch(runId: string) {
  const stream = await RawSseClient.open(`${e2e.server.url}/api/runs/${runId}/events`, { authorization: `Bearer ${e2e.server.token}` });
  return {
    votes: () => eventTypes(stream.events).filter((t) => t === "approval_vote").length,
    of: (type: string) => stream.events.filter((e) => e.event === type).map((e) => JSON.parse(e.data) as Record<string, any>),
    close: () => stream.close(),
  };
}

const errorOf = async (res: Response): Promise<[number, string | undefined]> => [
  res.status,
  ((await res.json()) as { error?: string }).error,
];

const ephemeralsTo = (user: string) => e2e.slack.calls("chat.postEphemeral").filter((c) => c.params.user === user);
const blocksText = (call: RecordedCall) => JSON.stringify(call.params.blocks ?? []);

describe("Slack decisions under the approval policy", () => {
  it("two persons: the first vote updates the message (1 of 2) and keeps its buttons; a second click by the same user counts nothing", async () => {
    const { runId, approvalId } = await startBySlack(CREATE, { title: "two-person" });
    expect((await click("approve", ALICE, runId, approvalId)).status).toBe(200);
    const [update] = (await e2e.slack.waitFor((c) => c.some((x) => x.method === "chat.update" && blocksText(x).includes("1 of 2")))).filter(
      (x) => x.method === "chat.update" && blocksText(x).includes("1 of 2"),
    );
    expect(blocksText(update!)).toContain(`<@${ALICE}>`);
    expect(blocksText(update!)).toContain("approval_approve");
    expect(blocksText(update!)).toContain("approval_deny");
    expect((await click("approve", ALICE, runId, approvalId)).status).toBe(200);
    expect((await summary(runId)).pending_approvals).toHaveLength(1);

    expect((await click("approve", BOB, runId, approvalId)).status).toBe(200);
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("completed");
    const events = await runEvents(runId);
    const types = events.filter((e) => e.tool_call_id === "w1").map((e) => e.type);
    expect(types.slice(0, 5)).toEqual([
      "tool_started",
      "approval_requested",
      "approval_vote",
      "approval_resolved",
      "tool_execution_started",
    ]);
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decided_by: `slack:${TEST_TEAM_ID}:${BOB}`,
      approvals: [{ by: `slack:${TEST_TEAM_ID}:${ALICE}` }, { by: `slack:${TEST_TEAM_ID}:${BOB}` }],
    });
    const calls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { by_tool: Record<string, number> };
    expect(calls.by_tool.create_dashboard).toBe(1);
  });

  it("the requester's approve is refused, naming the others who may decide, audited; nothing changes", async () => {
    const { runId, approvalId } = await startBySlack(CREATE, { title: "self" });
    expect((await click("approve", REQUESTER, runId, approvalId)).status).toBe(200);
    await e2e.slack.waitFor(() => ephemeralsTo(REQUESTER).length > 0);
    const text = String(ephemeralsTo(REQUESTER)[0]!.params.text);
    expect(text).toMatch(/forbids approving your own request/);
    // Named as every refusal names them: the exact Slack ids (not the requester, who may not approve), then token:alice-* elsewhere.
    expect(text).toContain(`(<@${ALICE}>, <@${BOB}> or an approver in the console)`);
    expect(text).not.toContain(`<@${REQUESTER}>`);
    expect((await summary(runId)).pending_approvals).toHaveLength(1);
    await expect
      .poll(
        async () => {
          const body = (await (
            await e2e.server.api(`/api/audit?action=access.refused&principal=slack:${TEST_TEAM_ID}:${REQUESTER}`)
          ).json()) as {
            entries: { target: string; details?: { error?: string } }[];
          };
          return body.entries.find((e) => e.target.includes(approvalId))?.details?.error;
        },
        { timeout: 10_000 },
      )
      .toBe("self_approval_forbidden");
    await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" });
  });

  it("a Slack user with a confirmed email and the token they minted for themselves are one person: one vote", async () => {
    // Contract section 19: only a token its access: owner created for themselves is that person.
    const token = await mintAsAccess("alice@example.com", `alice-${Date.now()}`, ["approver"]);
    const { runId, approvalId } = await startBySlack(CREATE, { title: "one person" });
    const viaToken = await fetch(`${e2e.server.url}/api/runs/${runId}/approvals/${approvalId}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(await viaToken.json()).toMatchObject({ status: "pending", votes: 1, required: 2 });
    expect((await click("approve", ALICE, runId, approvalId)).status).toBe(200);
    // Alice's click counted nothing: still pending, one vote on the stream so far.
    await expect.poll(async () => e2e.slack.calls("users.info").some((c) => c.params.user === ALICE), { timeout: 10_000 }).toBe(true);
    expect((await summary(runId)).pending_approvals).toHaveLength(1);
    await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" });
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("failed");
    expect((await runEvents(runId)).filter((e) => e.type === "approval_vote")).toHaveLength(1);
  });

  it("approvers that name nobody in Slack: a stranger is told to find an approver in the console", async () => {
    const { runId, approvalId } = await startBySlack(ALERT, { dashboard_id: "dash-1", chart: "latency", threshold: 1 });
    expect((await click("approve", STRANGER, runId, approvalId)).status).toBe(200);
    await e2e.slack.waitFor(() => ephemeralsTo(STRANGER).length > 0);
    expect(String(ephemeralsTo(STRANGER)[0]!.params.text)).toMatch(/may not decide this approval\. Who may: an approver in the console/);
    // Even the requester (the default rule's decider) may not: approvers decide alone.
    expect((await click("deny", REQUESTER, runId, approvalId)).status).toBe(200);
    await e2e.slack.waitFor(() => ephemeralsTo(REQUESTER).length > 0);
    expect((await summary(runId)).pending_approvals).toHaveLength(1);
    await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" });
  });

  it("one person under every credential: Alice's own run is refused her approve by token and by Slack click, her Access login is no approver, her deny ends it", async () => {
    // Minted by Alice for herself (contract section 19): the token is her person.
    const token = await mintAsAccess("alice@example.com", `alice-${Date.now().toString(36)}`, ["requester", "approver"]);
    const asAlice = (path: string, body: unknown) =>
      fetch(`${e2e.server.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const started = await asAlice("/api/trigger", {
      message: "alice's own",
      channel_id: CHANNEL,
      script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: { title: "alice's own" } }] }, { text: "done" }],
    });
    expect(started.status).toBe(202);
    const { run_id: runId } = (await started.json()) as { run_id: string };
    await expect.poll(async () => (await summary(runId)).pending_approvals.length, { timeout: 10_000 }).toBe(1);
    const approvalId = (await summary(runId)).pending_approvals[0]!.approval_id;
    const path = `/api/runs/${runId}/approvals/${approvalId}`;
    // The run's stream, read live: its events show which decisions counted before the run ends.
    const stream = await RawSseClient.open(`${e2e.server.url}/api/runs/${runId}/events`, { authorization: `Bearer ${e2e.server.token}` });
    const votes = () => eventTypes(stream.events).filter((t) => t === "approval_vote").length;

    // Her token matches token:alice-*, but she asked: self-approval is forbidden.
    const byToken = await asAlice(path, { decision: "approve" });
    expect([byToken.status, ((await byToken.json()) as { error: string }).error]).toEqual([403, "self_approval_forbidden"]);
    // Her Access login holds the approver role but matches no pattern: eligibility comes first.
    const byAccess = await decideAsAccess("alice@example.com", runId, approvalId, "approve");
    expect([byAccess.status, ((await byAccess.json()) as { error: string }).error]).toEqual([403, "not_an_approver"]);
    // token:root matches nothing either.
    const byRoot = await e2e.server.api(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect([byRoot.status, ((await byRoot.json()) as { error: string }).error]).toEqual([403, "not_an_approver"]);
    // Her Slack account (confirmed email alice@example.com) is the same person: refused too, told so, audited.
    expect((await click("approve", ALICE, runId, approvalId)).status).toBe(200);
    await e2e.slack.waitFor(() => ephemeralsTo(ALICE).length > 0);
    expect(String(ephemeralsTo(ALICE)[0]!.params.text)).toMatch(/forbids approving your own request/);
    expect((await summary(runId)).pending_approvals).toHaveLength(1);
    expect(votes()).toBe(0);

    // Bob's click counts (1 of 2); Alice may still deny, from Slack, which ends it: nothing runs.
    expect((await click("approve", BOB, runId, approvalId)).status).toBe(200);
    await expect.poll(votes, { timeout: 10_000 }).toBe(1);
    expect((await click("deny", ALICE, runId, approvalId)).status).toBe(200);
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("completed");
    await stream.close();
    const events = await runEvents(runId);
    expect(events.filter((e) => e.type === "approval_vote").map((e) => e.decided_by)).toEqual([`slack:${TEST_TEAM_ID}:${BOB}`]);
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "denied",
      decided_by: `slack:${TEST_TEAM_ID}:${ALICE}`,
    });
    const calls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { by_tool: Record<string, number> };
    expect(calls.by_tool.create_dashboard ?? 0).toBe(0);
  });

  it("one person counts once (point 8): a token an admin made with a slack: owner is no vote, and holds that person back as requester", async () => {
    const slackAlice = `slack:${TEST_TEAM_ID}:${ALICE}`;
    const stamp = Date.now().toString(36);
    // Named token:alice-* (a reviewer by pattern), owner Alice's Slack account, made by root: it proves nothing.
    const adminMade = await adminToken(`alice-slk-${stamp}`, ["approver"], slackAlice);
    const { runId, approvalId } = await startBySlack(CREATE, { title: "point 8" });
    const first = await watch(runId);
    expect((await click("approve", ALICE, runId, approvalId)).status).toBe(200);
    await expect.poll(first.votes, { timeout: 10_000 }).toBe(1);
    expect(await errorOf(await postWith(adminMade, `/api/runs/${runId}/approvals/${approvalId}`, { decision: "approve" }))).toEqual([
      403,
      "not_an_approver",
    ]);
    expect((await summary(runId)).pending_approvals).toHaveLength(1);
    expect(first.votes()).toBe(1);
    await first.close();
    await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" });

    // The same kind of token as the requester: its owner's person (her verified email) may not approve her call.
    const requesterToken = await adminToken(`req-slk-${stamp}`, ["requester"], slackAlice);
    const own = await mintAsAccess("alice@example.com", `alice-own8-${stamp}`, ["approver"]);
    const second = await startWith(requesterToken, CREATE, { title: "point 8 requester" });
    const watched = await watch(second.runId);
    const path = `/api/runs/${second.runId}/approvals/${second.approvalId}`;
    expect(await errorOf(await postWith(own, path, { decision: "approve" }))).toEqual([403, "self_approval_forbidden"]);
    expect((await click("approve", ALICE, second.runId, second.approvalId)).status).toBe(200);
    await e2e.slack.waitFor(() => ephemeralsTo(ALICE).some((c) => /forbids approving your own request/.test(String(c.params.text))));
    expect(watched.votes()).toBe(0);
    // Another person still counts.
    expect((await click("approve", BOB, second.runId, second.approvalId)).status).toBe(200);
    await expect.poll(watched.votes, { timeout: 10_000 }).toBe(1);
    await watched.close();
    await e2e.server.api(`/api/runs/${second.runId}/cancel`, { method: "POST" });
  });

  it("on_behalf_of is compared as persons (point 9): relayed for Alice by any name, no credential of hers approves; padded forms are 400", async () => {
    const stamp = Date.now().toString(36);
    const adapter = await adminToken(`relay-${stamp}`, ["adapter"]);
    const ownName = `alice-own9-${stamp}`;
    const own = await mintAsAccess("alice@example.com", ownName, ["approver"]);
    for (const relayedFor of [`slack:${TEST_TEAM_ID}:${ALICE}`, `token:${ownName}`, ALICE]) {
      const { runId, approvalId } = await startWith(adapter, CREATE, { title: `relayed ${relayedFor}` }, relayedFor);
      expect((await summary(runId)) as unknown).toMatchObject({ on_behalf_of: relayedFor });
      const watched = await watch(runId);
      const byToken = await postWith(own, `/api/runs/${runId}/approvals/${approvalId}`, { decision: "approve" });
      expect(await errorOf(byToken), relayedFor).toEqual([403, "self_approval_forbidden"]);
      const before = ephemeralsTo(ALICE).length;
      expect((await click("approve", ALICE, runId, approvalId)).status).toBe(200);
      await e2e.slack.waitFor(() => ephemeralsTo(ALICE).length > before);
      expect(String(ephemeralsTo(ALICE).at(-1)!.params.text)).toMatch(/forbids approving your own request/);
      // A control: Bob, another person, counts; Alice's two tries counted nothing.
      expect((await click("approve", BOB, runId, approvalId)).status).toBe(200);
      await expect.poll(watched.votes, { timeout: 10_000 }).toBe(1);
      expect(
        watched.of("approval_vote").map((e) => e.decided_by),
        relayedFor,
      ).toEqual([`slack:${TEST_TEAM_ID}:${BOB}`]);
      await watched.close();
      await e2e.server.api(`/api/runs/${runId}/cancel`, { method: "POST" });
    }
    for (const padded of [` ${ALICE}`, `${ALICE} `, `U\u200bALICE0001`, "mailto:alice@example.com", "access:Alice@example.com"]) {
      const res = await postWith(adapter, "/api/trigger", { message: "padded", channel_id: CHANNEL, user_id: padded });
      expect(await errorOf(res), JSON.stringify(padded)).toEqual([400, "invalid_request"]);
    }
  });
});

/** The 2026-07-28 demo server's call log and state (its control API). */
async function reportServer(): Promise<{ schedule_report: number; reports: unknown[] }> {
  const calls = (await (await fetch(`${report.baseUrl}/control/calls`)).json()) as { by_tool: Record<string, number> };
  const state = (await (await fetch(`${report.baseUrl}/control/state`)).json()) as { reports?: unknown[] };
  return { schedule_report: calls.by_tool.schedule_report ?? 0, reports: state.reports ?? [] };
}

/**
 * A run Alice (an Access user) requests: a dashboard (approved by root), then schedule_report under
 * self_approval: false, approved by Bob (another person), which asks its question mid-call. Answers
 * the run and the question's input_id once the question waits.
 */
async function aliceAsksForAReport(): Promise<{ runId: string; inputId: string }> {
  const started = await postAsAccess("alice@example.com", "/api/trigger", {
    message: "send me the latency report",
    channel_id: CHANNEL,
    script: [
      { tool_calls: [{ tool_name: REPORT_DASHBOARD, tool_call_id: "dash", arguments: { title: "Latency" } }] },
      { tool_calls: [{ tool_name: REPORT, tool_call_id: "report", arguments: { dashboard_id: "dash-1" } }] },
      { text: "Scheduled." },
    ],
  });
  expect(started.status, await started.clone().text()).toBe(202);
  const { run_id: runId } = (await started.json()) as { run_id: string };
  const pendingOf = async (tool: string) => {
    let id: string | undefined;
    await expect
      .poll(async () => (id = (await summary(runId)).pending_approvals.find((a) => a.tool_name === tool)?.approval_id), { timeout: 10_000 })
      .toBeDefined();
    return id!;
  };
  const dashboard = await e2e.server.api(`/api/runs/${runId}/approvals/${await pendingOf(REPORT_DASHBOARD)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ decision: "approve" }),
  });
  expect(dashboard.status, await dashboard.clone().text()).toBe(200);
  const byBob = await decideAsAccess("bob@example.com", runId, await pendingOf(REPORT), "approve");
  expect(byBob.status, await byBob.clone().text()).toBe(200);
  let inputId: string | undefined;
  await expect
    .poll(
      async () => {
        const { pending_inputs } = (await summary(runId)) as unknown as { pending_inputs: { tool_call_id: string; input_id?: string }[] };
        return (inputId = pending_inputs.find((q) => q.tool_call_id === "report")?.input_id);
      },
      { timeout: 10_000 },
    )
    .toBeDefined();
  return { runId, inputId: inputId! };
}

const CONTENT = { frequency: "weekly", recipient: "#sre" };

describe("a question mid-call under self_approval: false (issue 28 point 10; contract sections 19 and 21)", () => {
  beforeEach(async () => {
    await fetch(`${report.baseUrl}/control/reset`, { method: "POST" });
  });

  it("the requester's own accept is 403 self_approval_forbidden and nothing reaches the server; her decline is taken", async () => {
    const { runId, inputId } = await aliceAsksForAReport();
    // Only the first tools/call so far (the one the server answered with its question).
    expect((await reportServer()).schedule_report).toBe(1);
    const path = `/api/runs/${runId}/inputs/${encodeURIComponent(inputId)}`;
    expect(await errorOf(await postAsAccess("alice@example.com", path, { action: "accept", content: CONTENT }))).toEqual([
      403,
      "self_approval_forbidden",
    ]);
    // Refused: the question still waits, and no follow-up went to the server.
    const { pending_inputs } = (await summary(runId)) as unknown as { pending_inputs: { input_id?: string }[] };
    expect(pending_inputs.map((q) => q.input_id)).toEqual([inputId]);
    expect((await reportServer()).schedule_report).toBe(1);

    const declined = await postAsAccess("alice@example.com", path, { action: "decline" });
    expect(declined.status, await declined.clone().text()).toBe(200);
    expect(await declined.json()).toMatchObject({ input_id: inputId, action: "decline", status: "answered" });
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("completed");
    const events = await runEvents(runId);
    expect(events.find((e) => e.type === "human_input_received" && e.tool_call_id === "report")).toMatchObject({
      answered_by: "access:alice@example.com",
    });
    expect(events.find((e) => e.type === "tool_execution" && e.tool_call_id === "report")).toMatchObject({ execution_status: "executed" });
    // The follow-up carried her decline: the server scheduled nothing.
    expect(await reportServer()).toEqual({ schedule_report: 2, reports: [] });
  });

  it("another eligible person's accept is taken: the follow-up carries it and the report is scheduled", async () => {
    const { runId, inputId } = await aliceAsksForAReport();
    const path = `/api/runs/${runId}/inputs/${encodeURIComponent(inputId)}`;
    const accepted = await postAsAccess("bob@example.com", path, { action: "accept", content: CONTENT });
    expect(accepted.status, await accepted.clone().text()).toBe(200);
    expect(await accepted.json()).toMatchObject({ input_id: inputId, action: "accept", status: "answered" });
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("completed");
    expect((await runEvents(runId)).find((e) => e.type === "human_input_received" && e.tool_call_id === "report")).toMatchObject({
      answered_by: "access:bob@example.com",
    });
    const server = await reportServer();
    expect(server.schedule_report).toBe(2);
    expect(server.reports).toEqual([expect.objectContaining({ dashboard_id: "dash-1", frequency: "weekly", recipient: "#sre" })]);
  });
});
