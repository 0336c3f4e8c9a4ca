// Policy as versioned data end to end (contract section 24), over loopback
// against one `wrangler dev` shared by the cases (in order: each reads the
// active version first and bases its change on it), with the real demo MCP
// server process and two Cloudflare Access admins (a JWKS stand-in signs
// their assertions), ann and bob, two persons:
//  - bad input: an invalid document is 400 invalid_policy with the details a
//    bad TOOL_POLICY gives; a base that is not active 409 policy_conflict;
//    a non-integer version 400, an unknown one 404; approving or deleting the
//    active version 409 not_proposed / not_deletable.
//  - a tightening PUT (approvers where there were none) is active at once and
//    refuses the next decision of an approval already pending (token:root is
//    no longer an approver); ann, named by it, decides; the approval events
//    and the mutation row carry the new policy_version and policy_hash.
//  - a loosening PUT stays proposed, with `loosens`, and decides nothing
//    (root is still refused); its author (ann) cannot approve it, neither by
//    Access nor with a token she made for herself (one person, two
//    credentials), nor can token:root (no person): 403
//    second_person_required; bob approves it, and then root may decide.
//  - two PUTs on the same base at once: one 201, one 409 policy_conflict.
//  - a version survives a SIGKILL of the runtime.
//  - a shadow version naming only bob records root's approve as exactly one
//    difference (decider: eligible / not_an_approver) and decides nothing.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type AccessIssuer, startAccessIssuer } from "../support/jwks-server";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { demoReset } from "../support/e2e-client";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const CREATE = "mcp__demo__create_dashboard";
const AUD = "aud-policy";
const ANN = "ann@example.com";
const BOB = "bob@example.com";
const HASH = /^sha256:[0-9a-f]{64}$/;

let server: WorkerServer;
let access: AccessIssuer;

beforeAll(async () => {
  access = await startAccessIssuer("k-policy", AUD);
  server = await startWorkerServer({
    ...e2eVars(`${demo}/mcp`),
    APPROVAL_TIMEOUT_MS: "120000",
    ADMISSION_TIMEOUT_MS: "60000",
    ACCESS_TEAM_DOMAIN: access.url,
    ACCESS_AUD: AUD,
    ACCESS_ROLES: JSON.stringify({ [ANN]: ["admin"], [BOB]: ["admin"] }),
  });
  await demoReset();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await access?.stop();
});

async function json(res: Response): Promise<any> {
  return res.json();
}

/** A request as an Access user (a person): the assertion Access adds, and this origin (a browser-held credential's rule). */
async function asPerson(email: string, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("cf-access-jwt-assertion", await access.assertion(email));
  headers.set("origin", server.url);
  if (init.body !== undefined) headers.set("content-type", "application/json");
  return fetch(`${server.url}${path}`, { ...init, headers });
}

async function active(): Promise<any> {
  const res = await server.api("/api/policy");
  expect(res.status).toBe(200);
  return json(res);
}

function put(body: unknown, as?: string): Promise<Response> {
  const init = { method: "PUT", body: JSON.stringify(body) };
  return as === undefined ? server.api("/api/policy", init) : asPerson(as, "/api/policy", init);
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A run that wants to create a dashboard, and its pending approval. */
async function pendingApproval(title: string): Promise<{ runId: string; approvalId: string }> {
  const res = await server.api("/api/trigger", {
    method: "POST",
    body: JSON.stringify({
      message: title,
      script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "w-1", arguments: { title } }] }, { text: "Done." }],
    }),
  });
  expect(res.status).toBe(202);
  const runId = (await json(res)).run_id as string;
  const summary = await until(
    async () => json(await server.api(`/api/runs/${runId}`)),
    (s) => s.pending_approvals?.length === 1,
    "the approval to be asked",
  );
  return { runId, approvalId: summary.pending_approvals[0].approval_id };
}

function decide(runId: string, approvalId: string, as?: string): Promise<Response> {
  const path = `/api/runs/${runId}/approvals/${approvalId}`;
  const init = { method: "POST", body: JSON.stringify({ decision: "approve" }) };
  return as === undefined ? server.api(path, init) : asPerson(as, path, init);
}

async function eventsOf(runId: string, type: string): Promise<any[]> {
  const text = await (await server.api(`/api/runs/${runId}/events`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)))
    .filter((e) => e.type === type);
}

const baseDoc = () => ({
  tools: { mcp__demo__create_alert_from_chart: { level: "confirm" } },
  groups: {},
  budget: JSON.parse(e2eVars("http://x/mcp").MUTATION_BUDGET!),
});

describe("policy versions (contract section 24)", () => {
  it("starts at version 0, the settings, and answers bad input with 400, 404 and 409", async () => {
    const zero = await active();
    expect(zero).toMatchObject({ version: 0, status: "active", policy: baseDoc() });
    expect(zero.hash).toMatch(HASH);
    const health = await json(await server.api("/api/health"));
    expect(health.policy).toEqual({ version: 0, hash: zero.hash, state: "ok" });

    // An invalid document: the details a bad TOOL_POLICY gives.
    const bad = await put({ policy: { ...baseDoc(), tools: { [CREATE]: { level: "bogus" } } }, base_version: 0 });
    expect(bad.status).toBe(400);
    const badBody = await json(bad);
    expect(badBody.error).toBe("invalid_policy");
    expect(badBody.details).toEqual([{ path: `TOOL_POLICY.${CREATE}.level`, message: expect.stringContaining("approve") }]);
    expect((await put({ policy: { ...baseDoc(), tools: { [CREATE]: { approvers: ["*"] } } }, base_version: 0 })).status).toBe(400);
    expect((await put({ policy: baseDoc(), base_version: 0, comment: "x".repeat(1_001) })).status).toBe(400);

    // A base that is not the active version.
    const stale = await put({ policy: { ...baseDoc(), budget: {} }, base_version: 7 });
    expect(stale.status).toBe(409);
    expect(await json(stale)).toMatchObject({ error: "policy_conflict", active_version: 0 });

    // Identical to the active one: 200 with the active version, nothing stored.
    const same = await put({ policy: baseDoc(), base_version: 0 });
    expect(same.status).toBe(200);
    expect(await json(same)).toMatchObject({ version: 0, hash: zero.hash });

    expect((await server.api("/api/policy/versions/abc")).status).toBe(400);
    expect((await server.api("/api/policy/versions/1.5")).status).toBe(400);
    expect((await server.api("/api/policy/versions/9999")).status).toBe(404);
    expect((await server.api("/api/policy/versions/9999/approve", { method: "POST" })).status).toBe(404);
    expect((await server.api("/api/policy/versions/9999", { method: "DELETE" })).status).toBe(404);
    const notProposed = await server.api("/api/policy/versions/0/approve", { method: "POST" });
    expect(notProposed.status).toBe(409);
    expect(await json(notProposed)).toMatchObject({ error: "not_proposed", status: "active" });
  });

  it("a tightening PUT is active at once and refuses the next decision of a pending approval", async () => {
    const { runId, approvalId } = await pendingApproval(`tight-${Date.now()}`);
    const base = await active();
    const doc = { ...baseDoc(), tools: { ...baseDoc().tools, [CREATE]: { approvers: [`access:${ANN}`] } } };
    const res = await put({ policy: doc, base_version: base.version, comment: "only ann creates dashboards" }, ANN);
    expect(res.status).toBe(201);
    const v = await json(res);
    expect(v).toMatchObject({ status: "active", created_by: `access:${ANN}`, comment: "only ann creates dashboards", loosens: [] });
    expect(v.version).toBe(base.version + 1);
    expect(v.hash).toMatch(HASH);
    expect((await active()).version).toBe(v.version);

    // The approval was asked under version 0; the decision is judged by the version active now.
    const refused = await decide(runId, approvalId);
    expect(refused.status).toBe(403);
    expect((await json(refused)).error).toBe("not_an_approver");
    const ok = await decide(runId, approvalId, ANN);
    expect(ok.status).toBe(200);
    const resolved = await until(
      () => eventsOf(runId, "approval_resolved"),
      (e) => e.length === 1,
      "approval_resolved",
    );
    expect(resolved[0]).toMatchObject({ decision: "approved", policy_version: v.version, policy_hash: v.hash });
    const [requested] = await eventsOf(runId, "approval_requested");
    expect(requested).toMatchObject({ policy_version: 0 });
    const rows = await until(
      async () => (await json(await server.api(`/api/runs/${runId}/mutations`))).mutations as any[],
      (m) => m.length === 1 && m[0].state === "completed",
      "the row to complete",
    );
    expect(rows[0]).toMatchObject({ policy_version: v.version, policy_hash: v.hash, approved_by: `access:${ANN}` });
    // The decision's audit entry names the version that judged it.
    const decided = await until(
      async () => (await json(await server.api("/api/audit?action=approval.decide&limit=50"))).entries as any[],
      (entries) => entries.some((e) => e.target === `${runId}/approvals/${approvalId}`),
      "the approval.decide entry",
    );
    expect(decided.find((e) => e.target === `${runId}/approvals/${approvalId}`)).toMatchObject({
      principal: `access:${ANN}`,
      policy_version: v.version,
      policy_hash: v.hash,
    });
  });

  it("a loosening PUT stays proposed and decides nothing until another person approves it", async () => {
    const base = await active();
    const { runId, approvalId } = await pendingApproval(`loose-${Date.now()}`);
    const res = await put({ policy: baseDoc(), base_version: base.version, comment: "anyone again" }, ANN);
    expect(res.status).toBe(201);
    const v = await json(res);
    expect(v.status).toBe("proposed");
    expect(v.loosens).toEqual([{ path: `/tools/${CREATE}/approvers`, from: [`access:${ANN}`], to: null }]);
    expect((await active()).version).toBe(base.version);
    const one = await json(await server.api(`/api/policy/versions/${v.version}`));
    expect(one).toMatchObject({ version: v.version, status: "proposed", loosens: v.loosens, policy: baseDoc() });

    // Nothing decided by it: token:root is still no approver of the tool.
    expect((await decide(runId, approvalId)).status).toBe(403);

    // Its author may not approve it, by Access or with a token she made for herself; nor token:root (no person).
    const approve = `/api/policy/versions/${v.version}/approve`;
    const byAuthor = await asPerson(ANN, approve, { method: "POST" });
    expect(byAuthor.status).toBe(403);
    expect((await json(byAuthor)).error).toBe("second_person_required");
    const minted = await asPerson(ANN, "/api/tokens", {
      method: "POST",
      body: JSON.stringify({ name: `ann-cli-${Date.now()}`, roles: ["admin"], owner: `access:${ANN}` }),
    });
    expect(minted.status).toBe(201);
    const annToken = (await json(minted)).token as string;
    const byAnnToken = await fetch(`${server.url}${approve}`, { method: "POST", headers: { authorization: `Bearer ${annToken}` } });
    expect(byAnnToken.status).toBe(403);
    expect((await json(byAnnToken)).error).toBe("second_person_required");
    const byRoot = await server.api(approve, { method: "POST" });
    expect(byRoot.status).toBe(403);
    expect((await json(byRoot)).error).toBe("second_person_required");
    expect((await active()).version).toBe(base.version);

    // Bob is another person: the pointer moves, the old version is superseded.
    const byBob = await asPerson(BOB, approve, { method: "POST" });
    expect(byBob.status).toBe(200);
    expect(await json(byBob)).toMatchObject({ version: v.version, status: "active", approved_by: `access:${BOB}` });
    expect((await active()).version).toBe(v.version);
    expect((await json(await server.api(`/api/policy/versions/${base.version}`))).status).toBe("superseded");
    const again = await asPerson(BOB, approve, { method: "POST" });
    expect(again.status).toBe(409);
    expect(await json(again)).toMatchObject({ error: "not_proposed", status: "active" });

    // Now the default rule decides: root may approve.
    expect((await decide(runId, approvalId)).status).toBe(200);

    // The audit entry names what it loosened, and the version.
    const audit = await json(await server.api("/api/audit?action=policy.put&limit=5"));
    const entry = audit.entries.find((e: any) => e.target === `policy:${v.version}`);
    expect(entry).toMatchObject({ principal: `access:${ANN}`, policy_version: v.version, policy_hash: v.hash });
    expect(entry.details.loosens).toEqual(v.loosens);
  });

  it("a proposal whose base is no longer active is stale, and a withdrawn one is not deletable again", async () => {
    const base = await active();
    const looser = await json(
      await put({ policy: { ...baseDoc(), budget: { ...baseDoc().budget, [CREATE]: 5 } }, base_version: base.version }, ANN),
    );
    expect(looser.status).toBe("proposed");
    const withdrawnOne = await json(
      await put({ policy: { ...baseDoc(), budget: { ...baseDoc().budget, [CREATE]: 6 } }, base_version: base.version }, ANN),
    );
    const del = await server.api(`/api/policy/versions/${withdrawnOne.version}`, { method: "DELETE" });
    expect(del.status).toBe(200);
    expect((await json(del)).status).toBe("withdrawn");
    const delAgain = await server.api(`/api/policy/versions/${withdrawnOne.version}`, { method: "DELETE" });
    expect(delAgain.status).toBe(409);
    expect(await json(delAgain)).toMatchObject({ error: "not_deletable", status: "withdrawn" });
    // A tightening activates at once and makes the other proposal stale.
    const tighter = await put({ policy: { ...baseDoc(), budget: { ...baseDoc().budget, [CREATE]: 1 } }, base_version: base.version });
    expect(tighter.status).toBe(201);
    expect((await json(tighter)).status).toBe("active");
    expect((await json(await server.api(`/api/policy/versions/${looser.version}`))).status).toBe("stale");
    const late = await asPerson(BOB, `/api/policy/versions/${looser.version}/approve`, { method: "POST" });
    expect(late.status).toBe(409);
    expect(await json(late)).toMatchObject({ error: "not_proposed", status: "stale" });
  });

  it("two PUTs on the same base at once: one 201, one 409 policy_conflict", async () => {
    const base = await active();
    const a = { ...baseDoc(), budget: { ...base.policy.budget, mcp__demo__create_kpi: 0 } };
    const b = { ...baseDoc(), budget: { ...base.policy.budget, mcp__demo__update_dashboard: 1 } };
    const answers = await Promise.all([put({ policy: a, base_version: base.version }), put({ policy: b, base_version: base.version })]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409]);
    const loser = answers.find((r) => r.status === 409)!;
    const winner = await json(answers.find((r) => r.status === 201)!);
    expect(await json(loser)).toMatchObject({ error: "policy_conflict", active_version: winner.version });
  });

  it("a version survives a SIGKILL of the runtime", async () => {
    const before = await active();
    const listed = await json(await server.api("/api/policy/versions?limit=200"));
    server = await server.crashAndRestart();
    const after = await active();
    expect(after).toEqual(before);
    expect(await json(await server.api("/api/policy/versions?limit=200"))).toEqual(listed);
    expect(listed.versions.at(-1)).toMatchObject({ version: 0, status: "superseded" });
    expect(listed.versions[0]).toMatchObject({ version: before.version, status: "active" });
  });

  it("a shadow version that would refuse a decider records exactly that difference, and decides nothing", async () => {
    const base = await active();
    const doc = structuredClone(base.policy);
    doc.tools[CREATE] = { ...doc.tools[CREATE], approvers: [`access:${BOB}`] };
    const res = await put({ policy: doc, base_version: base.version, mode: "shadow" });
    expect(res.status).toBe(201);
    const shadow = await json(res);
    expect(shadow.status).toBe("shadow");
    expect((await active()).version).toBe(base.version);

    // token:root is an approver under the active version (the default rule), not under the shadow (bob only).
    const { runId, approvalId } = await pendingApproval(`shadow-${Date.now()}`);
    expect((await decide(runId, approvalId)).status).toBe(200);
    // The run ends and the index lists it completed: every difference of its checks has been flushed with it.
    await until(
      async () => ((await json(await server.api("/api/runs?limit=200"))).runs as any[]).find((r) => r.run_id === runId)?.status,
      (status) => status === "completed",
      "the run to be listed completed",
    );
    const listing = await json(await server.api(`/api/policy/shadow?version=${shadow.version}`));
    expect(listing.next_cursor).toBeNull();
    expect(listing.differences.map(({ at: _, ...d }: any) => d)).toEqual([
      { run_id: runId, tool_call_id: "w-1", tool_name: CREATE, check: "decider", active: "eligible", shadow: "not_an_approver" },
    ]);
    // The shadow decided nothing: the row completed, approved by root under the active version.
    const rows = (await json(await server.api(`/api/runs/${runId}/mutations`))).mutations as any[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ state: "completed", approved_by: "token:root", policy_version: base.version });
    expect((await server.api(`/api/policy/versions/${shadow.version}`, { method: "DELETE" })).status).toBe(200);
  });
});
