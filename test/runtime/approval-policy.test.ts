// Who may decide (contract section 19) through the real Worker, run objects
// and D1 of miniflare, over every API credential: named tokens with owners,
// token:root, and Cloudflare Access assertions verified against the JWKS
// stand-in. The runtime config (vitest.config.ts) gives mcp__demo__create_kpi
// `approvals_required: 2, self_approval: false` and lets only group:leads
// decide mcp__demo__create_alert_from_chart.
import { createExecutionContext, env, runDurableObjectAlarm } from "cloudflare:test";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import type { Role } from "../../src/auth/roles";
import { insertTokenStatement, newTokenValue } from "../../src/auth/token-store";
import worker from "../../src/index";
import { api, apiAs, freshAddress, runStub, sleep } from "./helpers";

const KPI = "mcp__demo__create_kpi";
const ALERT = "mcp__demo__create_alert_from_chart";
const ORIGIN = "https://engine.test";
const AUD = "aud-approval-policy";
const TEAM = env.ACCESS_TEST_TEAM_DOMAIN;
const accessEnv = {
  ...env,
  ACCESS_TEAM_DOMAIN: TEAM,
  ACCESS_AUD: AUD,
  ACCESS_ROLES: JSON.stringify({ "ann@example.com": ["approver"], "req@example.com": ["requester", "approver"] }),
} as never;
/** Polling bound for what run objects and queues write to D1 after their alarm. */
const ROUNDS = 40;
const POLL_MS = 50;

let signingKey: CryptoKey;

beforeAll(async () => {
  const pair = await generateKeyPair("RS256", { extractable: true });
  signingKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: "k-policy", alg: "RS256", use: "sig" };
  expect((await fetch(`${TEAM}/_control/keys`, { method: "POST", body: JSON.stringify({ keys: [jwk] }) })).status).toBe(200);
});

/** A named token with an owner (the person it acts for), written to D1 as the token store writes it. */
async function ownedToken(roles: Role[], prefix: string, owner: string | null): Promise<{ token: string; principal: string }> {
  const name = `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
  const token = newTokenValue();
  const now = Date.now();
  const record = {
    name,
    roles,
    owner,
    // A person's own token (section 19: minted by that access: user for themselves) when it has an owner.
    owned_by_creator: owner !== null,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + 86_400_000).toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  await (await insertTokenStatement(env.DB, record, token)).run();
  return { token, principal: `token:${name}` };
}

/** A request as a Cloudflare Access user (a browser-held credential: same Origin on state changes). */
async function asAccess(email: string, path: string, body?: unknown, method?: string): Promise<Response> {
  const now = Math.floor(Date.now() / 1_000);
  const jwt = await new SignJWT({ email })
    .setProtectedHeader({ alg: "RS256", kid: "k-policy" })
    .setIssuer(TEAM)
    .setAudience([AUD])
    .setIssuedAt(now - 5)
    .setExpirationTime(now + 300)
    .sign(signingKey);
  const headers = new Headers({ "cf-access-jwt-assertion": jwt, "cf-connecting-ip": freshAddress(), origin: ORIGIN });
  if (body !== undefined) headers.set("content-type", "application/json");
  return worker.fetch(
    new Request(`${ORIGIN}${path}`, {
      method: method ?? (body === undefined ? "GET" : "POST"),
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }),
    accessEnv,
    createExecutionContext(),
  );
}

async function startRun(token: string, toolName: string, args: Record<string, unknown>): Promise<{ runId: string; approvalId: string }> {
  const res = await apiAs(token, "/api/trigger", {
    method: "POST",
    body: JSON.stringify({
      message: "policy",
      channel_id: `C-policy-${crypto.randomUUID().slice(0, 8)}`,
      script: [{ tool_calls: [{ tool_name: toolName, tool_call_id: "p1", arguments: args }] }, { text: "done" }],
    }),
  });
  expect(res.status).toBe(202);
  const runId = ((await res.json()) as { run_id: string }).run_id;
  for (let round = 0; round < ROUNDS; round++) {
    const summary = (await (await api(`/api/runs/${runId}`)).json()) as { pending_approvals: { approval_id: string }[] };
    if (summary.pending_approvals[0]) return { runId, approvalId: summary.pending_approvals[0].approval_id };
    await sleep(POLL_MS);
  }
  throw new Error(`run ${runId} asked for no approval`);
}

const decide = (token: string, runId: string, approvalId: string, body: Record<string, unknown>) =>
  apiAs(token, `/api/runs/${runId}/approvals/${approvalId}`, { method: "POST", body: JSON.stringify(body) });

async function eventsOf(runId: string): Promise<any[]> {
  const text = await (await api(`/api/runs/${runId}/events`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)))
    .filter((e) => e.type !== "heartbeat");
}

/** The run's events once it ended (the event stream of a running run stays open). */
async function waitForEnd(runId: string): Promise<any[]> {
  for (let round = 0; round < ROUNDS * 4; round++) {
    const summary = (await (await api(`/api/runs/${runId}`)).json()) as { status: string };
    if (summary.status !== "running") return eventsOf(runId);
    await sleep(POLL_MS);
  }
  throw new Error(`run ${runId} did not end`);
}

async function poll<T>(read: () => Promise<T>, found: (value: T) => boolean, alarm?: () => Promise<unknown>): Promise<T> {
  let value: T | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    if (alarm) await alarm();
    value = await read();
    if (found(value)) return value;
    await sleep(POLL_MS);
  }
  throw new Error(`not found within ${ROUNDS} rounds: ${JSON.stringify(value)}`);
}

describe("approvals_required: 2 with self_approval: false", () => {
  it("two persons resolve it: the first voter retries (same answer, no event), their Access login is the same person, root never counts", async () => {
    const requester = await ownedToken(["requester"], "req", "access:req@example.com");
    const annToken = await ownedToken(["approver"], "ann", "access:ANN@example.com");
    const bob = await ownedToken(["approver"], "bob", "access:bob@example.com");
    const { runId, approvalId } = await startRun(requester.token, KPI, { name: "p99", query: "latency" });

    const pending = { approval_id: approvalId, decision: "approved", status: "pending", votes: 1, required: 2 };
    const first = await decide(annToken.token, runId, approvalId, { decision: "approve" });
    expect([first.status, await first.json()]).toEqual([200, pending]);
    const retry = await decide(annToken.token, runId, approvalId, { decision: "approve" });
    expect([retry.status, await retry.json()]).toEqual([200, pending]);
    // Ann's Access login is ann's token's owner: one person, one vote.
    const viaAccess = await asAccess("Ann@Example.com", `/api/runs/${runId}/approvals/${approvalId}`, { decision: "approve" });
    expect([viaAccess.status, await viaAccess.json()]).toEqual([200, pending]);
    // token:root is no person: it never counts towards a quorum, and its deny is refused too.
    for (const decision of ["approve", "deny"]) {
      const root = await api(`/api/runs/${runId}/approvals/${approvalId}`, { method: "POST", body: JSON.stringify({ decision }) });
      expect([root.status, ((await root.json()) as { error: string }).error]).toEqual([403, "not_an_approver"]);
    }

    const second = await decide(bob.token, runId, approvalId, { decision: "approve" });
    expect([second.status, await second.json()]).toEqual([200, { approval_id: approvalId, decision: "approved", status: "resolved" }]);

    const events = await waitForEnd(runId);
    const ofCall = events.filter((e) => e.tool_call_id === "p1").map((e) => e.type);
    expect(ofCall).toEqual([
      "tool_started",
      "approval_requested",
      "approval_vote",
      "approval_resolved",
      "tool_execution_started",
      "tool_execution",
      "tool_completed",
    ]);
    const requested = events.find((e) => e.type === "approval_requested");
    expect(requested).toMatchObject({ required: 2, approvers: null });
    const vote = events.find((e) => e.type === "approval_vote");
    expect(vote).toMatchObject({ tool_name: KPI, approval_id: approvalId, decided_by: annToken.principal, votes: 1, required: 2 });
    const resolved = events.find((e) => e.type === "approval_resolved");
    expect(resolved).toMatchObject({ decision: "approved", decided_by: bob.principal });
    expect(resolved.approvals.map((v: { by: string }) => v.by)).toEqual([annToken.principal, bob.principal]);
    expect(resolved.approvals[0].at).toBe(vote.at);
    expect(events.find((e) => e.type === "tool_execution")).toMatchObject({ execution_status: "executed" });

    const rows = (await (await api(`/api/runs/${runId}/mutations`)).json()) as { mutations: any[] };
    expect(rows.mutations).toHaveLength(1);
    expect(rows.mutations[0]).toMatchObject({ approved_by: bob.principal, approvals: resolved.approvals, state: "completed" });

    const listed = await poll(
      async () => ((await (await api("/api/approvals?status=resolved&limit=200")).json()) as { approvals: any[] }).approvals,
      (items) => items.some((a) => a.approval_id === approvalId),
      () => runDurableObjectAlarm(runStub(runId)),
    );
    expect(listed.find((a) => a.approval_id === approvalId)).toMatchObject({
      status: "approved",
      decided_by: bob.principal,
      required: 2,
      approvers: null,
      approvals: resolved.approvals,
    });

    // One approval.decide per vote (contract section 18).
    const decides = await poll(
      async () => ((await (await api(`/api/audit?action=approval.decide&limit=200`)).json()) as { entries: any[] }).entries,
      (entries) => entries.filter((e) => e.target === `${runId}/approvals/${approvalId}`).length === 2,
      () => runDurableObjectAlarm(runStub(runId)),
    );
    expect(
      decides
        .filter((e) => e.target === `${runId}/approvals/${approvalId}`)
        .map((e) => e.principal)
        .sort(),
    ).toEqual([annToken.principal, bob.principal].sort());
  });

  it("the requester may not approve, by token or by their Access login; they may deny, which ends it", async () => {
    const requester = await ownedToken(["requester", "approver"], "self", "access:req@example.com");
    const { runId, approvalId } = await startRun(requester.token, KPI, { name: "self", query: "q" });
    const own = await decide(requester.token, runId, approvalId, { decision: "approve" });
    expect([own.status, ((await own.json()) as { error: string }).error]).toEqual([403, "self_approval_forbidden"]);
    const viaAccess = await asAccess("req@example.com", `/api/runs/${runId}/approvals/${approvalId}`, { decision: "approve" });
    expect([viaAccess.status, ((await viaAccess.json()) as { error: string }).error]).toEqual([403, "self_approval_forbidden"]);
    // Nothing changed: still pending, no vote counted.
    const summary = (await (await api(`/api/runs/${runId}`)).json()) as { pending_approvals: { approval_id: string }[] };
    expect(summary.pending_approvals.map((a) => a.approval_id)).toEqual([approvalId]);

    // The refusal is audited as access.refused, through the principal's queue.
    const entries = await poll(
      async () =>
        ((await (await api(`/api/audit?action=access.refused&principal=${requester.principal}`)).json()) as { entries: any[] }).entries,
      (found) => found.length > 0,
      () => runDurableObjectAlarm(env.AUDIT_QUEUE.get(env.AUDIT_QUEUE.idFromName(requester.principal))),
    );
    expect(entries[0]).toMatchObject({
      result: "refused",
      target: `POST /api/runs/${runId}/approvals/${approvalId}`,
      details: { error: "self_approval_forbidden" },
    });

    const denied = await decide(requester.token, runId, approvalId, { decision: "deny" });
    expect([denied.status, await denied.json()]).toEqual([200, { approval_id: approvalId, decision: "denied", status: "resolved" }]);
    const events = await waitForEnd(runId);
    expect(events.find((e) => e.type === "tool_execution")).toMatchObject({ execution_status: "not_executed", reason: "denied" });

    // The runs index keeps the requester's person as the run compares it (the Slack Home tab judges by it); the listing never shows it.
    const row = await poll(
      () => env.DB.prepare(`SELECT requester_person FROM runs WHERE run_id = ?`).bind(runId).first<{ requester_person: string | null }>(),
      (found) => found !== null,
      () => runDurableObjectAlarm(runStub(runId)),
    );
    expect(row?.requester_person).toBe("access:req@example.com");
    const listed = (await (await api(`/api/runs?limit=200`)).json()) as { runs: Record<string, unknown>[] };
    const item = listed.runs.find((r) => r.run_id === runId);
    expect(item).toBeDefined();
    expect(item).not.toHaveProperty("requester_person");
  });

  it("an ownerless token is no person: refused for N > 1 before it learns anything, even after the approval resolved", async () => {
    const ci = await ownedToken(["approver"], "ci", null);
    const { runId, approvalId } = await startRun((await ownedToken(["requester"], "r", null)).token, KPI, { name: "n", query: "q" });
    const refused = await decide(ci.token, runId, approvalId, { decision: "approve" });
    expect([refused.status, ((await refused.json()) as { error: string }).error]).toEqual([403, "not_an_approver"]);
    await decide((await ownedToken(["approver"], "x", "access:x@example.com")).token, runId, approvalId, { decision: "deny" });
    const after = await decide(ci.token, runId, approvalId, { decision: "approve" });
    expect([after.status, ((await after.json()) as { error: string }).error]).toEqual([403, "not_an_approver"]);
  });
});

describe("approvers", () => {
  it("only a match of group:leads decides, token:root and other approvers included; the event names the patterns", async () => {
    const { runId, approvalId } = await startRun((await ownedToken(["requester"], "r", null)).token, ALERT, {
      dashboard_id: "dash-1",
      chart: "latency",
      threshold: 1,
    });
    const other = await ownedToken(["approver"], "sre", "access:sre@example.com");
    const res = await decide(other.token, runId, approvalId, { decision: "deny" });
    expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([403, "not_an_approver"]);
    const root = await api(`/api/runs/${runId}/approvals/${approvalId}`, { method: "POST", body: JSON.stringify({ decision: "approve" }) });
    expect(root.status).toBe(403);
    // A lead without the approver role still needs it (API principals need the role and the match).
    const viewerLead = await ownedToken(["viewer"], "lead", null);
    expect((await decide(viewerLead.token, runId, approvalId, { decision: "approve" })).status).toBe(403);
    const lead = await ownedToken(["approver"], "lead", null);
    const ok = await decide(lead.token, runId, approvalId, { decision: "approve" });
    expect([ok.status, await ok.json()]).toEqual([200, { approval_id: approvalId, decision: "approved", status: "resolved" }]);
    const events = await waitForEnd(runId);
    expect(events.find((e) => e.type === "approval_requested")).toMatchObject({ required: 1, approvers: ["group:leads"] });
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decided_by: lead.principal,
      approvals: [{ by: lead.principal }],
    });
  });
});

describe("tokens a person mints for themselves (contract sections 18-19)", () => {
  it("any access: user creates, lists and revokes only tokens owned by themselves, with roles they hold; else 403", async () => {
    const name = `ann-own-${crypto.randomUUID().slice(0, 8)}`;
    const made = await asAccess("ann@example.com", "/api/tokens", { name, roles: ["approver"] });
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({ name, roles: ["approver"], owner: "access:ann@example.com" });
    for (const body of [
      { name: `${name}-x`, roles: ["approver"], owner: "access:bob@example.com" },
      { name: `${name}-y`, roles: ["admin"] },
      { name: `${name}-z`, roles: ["requester"] },
    ]) {
      const refused = await asAccess("ann@example.com", "/api/tokens", body);
      expect([refused.status, ((await refused.json()) as { error: string }).error]).toEqual([403, "forbidden"]);
    }
    // An admin's token for ann is listed to her, but it is not hers by creation: it proves nothing.
    const byAdmin = `ann-adm-${crypto.randomUUID().slice(0, 8)}`;
    const adminMade = await api("/api/tokens", {
      method: "POST",
      body: JSON.stringify({ name: byAdmin, roles: ["approver"], owner: "access:ann@example.com" }),
    });
    expect(adminMade.status).toBe(201);
    const other = `bob-adm-${crypto.randomUUID().slice(0, 8)}`;
    expect((await api("/api/tokens", { method: "POST", body: JSON.stringify({ name: other, roles: ["viewer"] }) })).status).toBe(201);
    const listed = ((await (await asAccess("ann@example.com", "/api/tokens")).json()) as { tokens: any[] }).tokens;
    expect(listed.every((t) => t.owner === "access:ann@example.com")).toBe(true);
    expect(Object.fromEntries(listed.filter((t) => [name, byAdmin].includes(t.name)).map((t) => [t.name, t.owned_by_creator]))).toEqual({
      [name]: true,
      [byAdmin]: false,
    });
    const notHers = await asAccess("ann@example.com", `/api/tokens/${other}`, undefined, "DELETE");
    expect(notHers.status).toBe(403);
    const revoked = await asAccess("ann@example.com", `/api/tokens/${name}`, undefined, "DELETE");
    expect(revoked.status).toBe(200);
  });

  it("an owner an admin named proves nothing: that token plus its owner's login never make two votes (point 8)", async () => {
    const requester = await ownedToken(["requester"], "req8", "access:req@example.com");
    const name = `ann-adm8-${crypto.randomUUID().slice(0, 8)}`;
    const made = await api("/api/tokens", {
      method: "POST",
      body: JSON.stringify({ name, roles: ["approver"], owner: "access:ann@example.com" }),
    });
    const adminMadeToken = ((await made.json()) as { token: string }).token;
    const { runId, approvalId } = await startRun(requester.token, KPI, { name: "p8", query: "q" });
    const first = await asAccess("ann@example.com", `/api/runs/${runId}/approvals/${approvalId}`, { decision: "approve" });
    expect(first.status).toBe(200);
    const second = await decide(adminMadeToken, runId, approvalId, { decision: "approve" });
    expect([second.status, ((await second.json()) as { error: string }).error]).toEqual([403, "not_an_approver"]);
    const summary = (await (await api(`/api/runs/${runId}`)).json()) as { pending_approvals: unknown[] };
    expect(summary.pending_approvals).toHaveLength(1);
    expect((await api(`/api/runs/${runId}/cancel`, { method: "POST" })).ok).toBe(true);
  });

  it("ann's own token and her Access login are one person: the second is the same answer, no second vote", async () => {
    const requester = await ownedToken(["requester"], "req8b", "access:req@example.com");
    const name = `ann-mint-${crypto.randomUUID().slice(0, 8)}`;
    const minted = await asAccess("ann@example.com", "/api/tokens", { name, roles: ["approver"] });
    const own = ((await minted.json()) as { token: string }).token;
    const { runId, approvalId } = await startRun(requester.token, KPI, { name: "p8b", query: "q" });
    const pending = { approval_id: approvalId, decision: "approved", status: "pending", votes: 1, required: 2 };
    const first = await decide(own, runId, approvalId, { decision: "approve" });
    expect([first.status, await first.json()]).toEqual([200, pending]);
    const again = await asAccess("ann@example.com", `/api/runs/${runId}/approvals/${approvalId}`, { decision: "approve" });
    expect([again.status, await again.json()]).toEqual([200, pending]);
    expect((await api(`/api/runs/${runId}/cancel`, { method: "POST" })).ok).toBe(true);
  });
});
