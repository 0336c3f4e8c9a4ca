// Contract section 24, Shadow: a version stored with "mode":"shadow" decides
// nothing, but at every decision the run judges it beside the active one with
// the same functions and records where its verdict differs, through the run's
// pending index marks (written by the run object's flush). Listed by
// GET /api/policy/shadow (section 15's paging) and counted as
// aee_policy_shadow_differences_total{check}. The runtime config lets only
// group:leads decide mcp__demo__create_alert_from_chart; the shadow version
// lets only token:someone-else.
import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { insertTokenStatement, newTokenValue } from "../../src/auth/token-store";
import { api, apiAs, engine, runStub, sleep } from "./helpers";

const ALERT = "mcp__demo__create_alert_from_chart";
const DASHBOARD = "mcp__demo__create_dashboard";
const ROUNDS = 60;
const POLL_MS = 50;

async function token(roles: ("requester" | "approver")[], prefix: string): Promise<{ token: string; principal: string }> {
  const name = `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
  const value = newTokenValue();
  const now = Date.now();
  const record = {
    name,
    roles,
    owner: null,
    owned_by_creator: false,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + 86_400_000).toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  await (await insertTokenStatement(env.DB, record, value)).run();
  return { token: value, principal: `token:${name}` };
}

const ALERT_CALL = { tool_name: ALERT, tool_call_id: "s1", arguments: { dashboard_id: "dash-1", chart: "latency", threshold: 1 } };

/** Starts a run of one turn of `calls` and waits until all of them are asked; their approval ids in the calls' order. */
async function startCalls(
  requester: string,
  calls: { tool_name: string; tool_call_id: string; arguments: object }[],
  channel = `C-shadow-${crypto.randomUUID().slice(0, 8)}`,
): Promise<{ runId: string; approvalIds: string[] }> {
  const res = await apiAs(requester, "/api/trigger", {
    method: "POST",
    body: JSON.stringify({ message: "shadow", channel_id: channel, script: [{ tool_calls: calls }, { text: "done" }] }),
  });
  expect(res.status).toBe(202);
  const runId = ((await res.json()) as { run_id: string }).run_id;
  for (let round = 0; round < ROUNDS; round++) {
    const summary = (await (await api(`/api/runs/${runId}`)).json()) as {
      pending_approvals: { approval_id: string; tool_call_id: string }[];
    };
    if (summary.pending_approvals.length === calls.length) {
      const byCall = new Map(summary.pending_approvals.map((p) => [p.tool_call_id, p.approval_id]));
      return { runId, approvalIds: calls.map((c) => byCall.get(c.tool_call_id) ?? "") };
    }
    await sleep(POLL_MS);
  }
  throw new Error(`run ${runId} did not ask for ${calls.length} approvals`);
}

async function startRun(requester: string, channel?: string): Promise<{ runId: string; approvalId: string }> {
  const { runId, approvalIds } = await startCalls(requester, [ALERT_CALL], channel);
  return { runId, approvalId: approvalIds[0]! };
}

/** Waits until the run is no longer running. */
async function ended(runId: string): Promise<void> {
  for (let round = 0; round < ROUNDS; round++) {
    if (((await (await api(`/api/runs/${runId}`)).json()) as { status: string }).status !== "running") return;
    await sleep(POLL_MS);
  }
  throw new Error(`run ${runId} did not end`);
}

/** The shadow's differences once `count` are listed (the runs' alarms flush their pending marks). */
async function differences(version: number, runs: string[], count: number): Promise<Omit<Page["differences"][number], "at">[]> {
  let page: Page = { differences: [], next_cursor: null };
  for (let round = 0; round < ROUNDS && page.differences.length < count; round++) {
    for (const runId of runs) await runDurableObjectAlarm(runStub(runId));
    page = (await (await api(`/api/policy/shadow?version=${version}`)).json()) as Page;
    if (page.differences.length < count) await sleep(POLL_MS);
  }
  return page.differences.map(({ at: _, ...d }) => d);
}

const decide = (t: string, runId: string, approvalId: string, decision: "approve" | "deny") =>
  apiAs(t, `/api/runs/${runId}/approvals/${approvalId}`, { method: "POST", body: JSON.stringify({ decision }) });

interface Page {
  differences: { at: string; run_id: string; tool_call_id: string; tool_name: string; check: string; active: string; shadow: string }[];
  next_cursor: string | null;
}

async function counted(check: string): Promise<number> {
  const text = await (await api("/api/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`aee_policy_shadow_differences_total{check="${check}"}`));
  return line === undefined ? Number.NaN : Number(line.split(" ").at(-1));
}

type PolicyDocument = { tools: Record<string, object>; groups: object; budget: Record<string, number> };

/** Stores a shadow version: the active document as `edit` changes it. */
async function putShadow(edit: (document: PolicyDocument) => void): Promise<{ version: number; status: string }> {
  const active = (await (await api("/api/policy")).json()) as { version: number; policy: PolicyDocument };
  const document = structuredClone(active.policy);
  edit(document);
  const put = await api("/api/policy", {
    method: "PUT",
    body: JSON.stringify({ policy: document, base_version: active.version, mode: "shadow" }),
  });
  expect(put.status).toBe(201);
  return (await put.json()) as { version: number; status: string };
}

describe("a shadow version (contract section 24)", () => {
  it("records exactly the decider it would refuse, nothing where it agrees; listed in pages and counted", async () => {
    const shadow = await putShadow((d) => {
      d.tools[ALERT] = { ...d.tools[ALERT], approvers: ["token:someone-else"] };
    });
    expect(shadow.status).toBe("shadow");
    const before = { decider: await counted("decider"), quorum: await counted("quorum") };

    const requester = await token(["requester"], "req");
    const lead = await token(["approver"], "lead");
    const sre = await token(["approver"], "sre");
    const runs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { runId, approvalId } = await startRun(requester.token);
      runs.push(runId);
      // Refused by both (sre is neither a lead nor token:someone-else): they agree, nothing is recorded.
      expect((await decide(sre.token, runId, approvalId, "deny")).status).toBe(403);
      // Eligible under the active version, not under the shadow: the one difference. Quorum: both resolved.
      expect((await decide(lead.token, runId, approvalId, "approve")).status).toBe(200);
    }

    let page: Page = { differences: [], next_cursor: null };
    for (let round = 0; round < ROUNDS && page.differences.length < 2; round++) {
      for (const runId of runs) await runDurableObjectAlarm(runStub(runId));
      page = (await (await api(`/api/policy/shadow?version=${shadow.version}`)).json()) as Page;
      if (page.differences.length < 2) await sleep(POLL_MS);
    }
    expect(page.next_cursor).toBeNull();
    expect(page.differences.map(({ at: _, ...d }) => d)).toEqual(
      [...runs].reverse().map((run_id) => ({
        run_id,
        tool_call_id: "s1",
        tool_name: ALERT,
        check: "decider",
        active: "eligible",
        shadow: "not_an_approver",
      })),
    );

    // Section 15's paging: one a page, newest first, then the end.
    const first = (await (await api(`/api/policy/shadow?version=${shadow.version}&limit=1`)).json()) as Page;
    expect(first.differences.map((d) => d.run_id)).toEqual([runs[1]]);
    expect(first.next_cursor).not.toBeNull();
    const second = (await (await api(`/api/policy/shadow?version=${shadow.version}&limit=1&cursor=${first.next_cursor}`)).json()) as Page;
    expect(second.differences.map((d) => d.run_id)).toEqual([runs[0]]);
    const rest =
      second.next_cursor === null
        ? []
        : ((await (await api(`/api/policy/shadow?version=${shadow.version}&limit=1&cursor=${second.next_cursor}`)).json()) as Page)
            .differences;
    expect(rest).toEqual([]);
    // The engine client reads the same listing.
    const viaClient = await engine.listPolicyShadowDifferences({ version: shadow.version, limit: 1 });
    expect(viaClient.differences).toEqual(first.differences);
    expect((await api("/api/policy/shadow?cursor=not-ours")).status).toBe(400);
    expect((await api("/api/policy/shadow?version=x")).status).toBe(400);

    // Counted once per difference (a replayed flush inserts nothing).
    for (const runId of runs) await runDurableObjectAlarm(runStub(runId));
    expect(await counted("decider")).toBe(before.decider + 2);
    expect(await counted("quorum")).toBe(before.quorum);

    expect((await api(`/api/policy/versions/${shadow.version}`, { method: "DELETE" })).status).toBe(200);
  });

  it("records an ask whose level the shadow would change (approve → confirm)", async () => {
    const shadow = await putShadow((d) => {
      d.tools[ALERT] = { ...d.tools[ALERT], level: "confirm" };
    });
    const requester = await token(["requester"], "req");
    const { runId } = await startRun(requester.token);
    let page: Page = { differences: [], next_cursor: null };
    for (let round = 0; round < ROUNDS && page.differences.length < 1; round++) {
      await runDurableObjectAlarm(runStub(runId));
      page = (await (await api(`/api/policy/shadow?version=${shadow.version}`)).json()) as Page;
      if (page.differences.length < 1) await sleep(POLL_MS);
    }
    expect(page.differences.map(({ at: _, ...d }) => d)).toEqual([
      { run_id: runId, tool_call_id: "s1", tool_name: ALERT, check: "ask", active: "approve", shadow: "confirm" },
    ]);
    expect((await api(`/api/policy/versions/${shadow.version}`, { method: "DELETE" })).status).toBe(200);
    await engine.cancel(runId);
  });

  it("records a checkpoint the shadow's limit would refuse (its count is a column of the checkpoint's statement)", async () => {
    const shadow = await putShadow((d) => {
      d.tools[ALERT] = { ...d.tools[ALERT], limits: [{ max: 1, per: "1h", by: "channel" }] };
    });
    const requester = await token(["requester"], "req");
    const lead = await token(["approver"], "lead");
    const channel = `C-shadow-${crypto.randomUUID().slice(0, 8)}`;
    const runs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { runId, approvalId } = await startRun(requester.token, channel);
      runs.push(runId);
      expect((await decide(lead.token, runId, approvalId, "approve")).status).toBe(200);
      // The first call is dispatched (its row in the channel's window) before the second is checkpointed.
      for (let round = 0; round < ROUNDS; round++) {
        if (((await (await api(`/api/runs/${runId}`)).json()) as { status: string }).status !== "running") break;
        await sleep(POLL_MS);
      }
    }
    let page: Page = { differences: [], next_cursor: null };
    for (let round = 0; round < ROUNDS && page.differences.length < 1; round++) {
      for (const runId of runs) await runDurableObjectAlarm(runStub(runId));
      page = (await (await api(`/api/policy/shadow?version=${shadow.version}`)).json()) as Page;
      if (page.differences.length < 1) await sleep(POLL_MS);
    }
    // The first call had room under the shadow's limit (they agree); the second would have been refused.
    expect(page.differences.map(({ at: _, ...d }) => d)).toEqual([
      { run_id: runs[1], tool_call_id: "s1", tool_name: ALERT, check: "checkpoint", active: "allowed", shadow: "rate_limited" },
    ]);
    expect((await api(`/api/policy/versions/${shadow.version}`, { method: "DELETE" })).status).toBe(200);
  });

  it("judges the shadow's budget at the checkpoint against the run's count, and the checkpoint the active budget refused", async () => {
    // The runtime's budget: create_dashboard 5, create_alert_from_chart 1. The shadow's: 1 and 2.
    const shadow = await putShadow((d) => {
      d.budget = { ...d.budget, [DASHBOARD]: 1, [ALERT]: 2 };
    });
    const requester = await token(["requester"], "req");
    const lead = await token(["approver"], "lead");
    const dashboard = (id: string) => ({ tool_name: DASHBOARD, tool_call_id: id, arguments: { title: `shadow ${id}`, panels: ["p50"] } });
    const calls = [dashboard("d1"), dashboard("d2"), { ...ALERT_CALL, tool_call_id: "a1" }, { ...ALERT_CALL, tool_call_id: "a2" }];
    const { runId, approvalIds } = await startCalls(requester.token, calls);
    for (const approvalId of approvalIds) expect((await decide(lead.token, runId, approvalId, "approve")).status).toBe(200);
    await ended(runId);
    expect(await (await api(`/api/runs/${runId}/events`)).text()).toContain('"reason":"budget_exhausted"');
    // d2: the active budget (5) allowed it, the shadow's (1) was used by d1. a2: the active budget (1) was
    // used by a1, the shadow's (2) had room and it has no limits. d1 and a1: both allowed.
    expect(await differences(shadow.version, [runId], 2)).toEqual([
      { run_id: runId, tool_call_id: "a2", tool_name: ALERT, check: "checkpoint", active: "budget_exhausted", shadow: "allowed" },
      { run_id: runId, tool_call_id: "d2", tool_name: DASHBOARD, check: "checkpoint", active: "allowed", shadow: "budget_exhausted" },
    ]);
    expect((await api(`/api/policy/versions/${shadow.version}`, { method: "DELETE" })).status).toBe(200);
  });

  it("judges the shadow at a checkpoint the active version's limit refused", async () => {
    const settings = (await (await api("/api/policy")).json()) as { version: number; policy: { tools: Record<string, object> } };
    // Adding a limit tightens: active at once. The shadow is the settings' document, with no limit.
    const limited = structuredClone(settings.policy);
    limited.tools[ALERT] = { ...limited.tools[ALERT], limits: [{ max: 1, per: "1h", by: "channel" }] };
    const enforce = await api("/api/policy", { method: "PUT", body: JSON.stringify({ policy: limited, base_version: settings.version }) });
    expect(enforce.status).toBe(201);
    const activeVersion = ((await enforce.json()) as { version: number; status: string }).version;
    try {
      const put = await api("/api/policy", {
        method: "PUT",
        body: JSON.stringify({ policy: settings.policy, base_version: activeVersion, mode: "shadow" }),
      });
      expect(put.status).toBe(201);
      const shadow = (await put.json()) as { version: number };
      const requester = await token(["requester"], "req");
      const lead = await token(["approver"], "lead");
      const channel = `C-shadow-${crypto.randomUUID().slice(0, 8)}`;
      // Both asked before either is sent (the limit before asking has room), then one after the other.
      const first = await startRun(requester.token, channel);
      const second = await startRun(requester.token, channel);
      expect((await decide(lead.token, first.runId, first.approvalId, "approve")).status).toBe(200);
      await ended(first.runId);
      expect((await decide(lead.token, second.runId, second.approvalId, "approve")).status).toBe(200);
      await ended(second.runId);
      expect(await (await api(`/api/runs/${second.runId}/events`)).text()).toContain('"reason":"rate_limited"');
      expect(await differences(shadow.version, [first.runId, second.runId], 1)).toEqual([
        { run_id: second.runId, tool_call_id: "s1", tool_name: ALERT, check: "checkpoint", active: "rate_limited", shadow: "allowed" },
      ]);
      expect((await api(`/api/policy/versions/${shadow.version}`, { method: "DELETE" })).status).toBe(200);
    } finally {
      // Back to the settings for the other tests (in D1 itself: going back loosens).
      await env.DB.prepare("UPDATE policy_active SET version = 0 WHERE id = 1").run();
    }
  });
});
