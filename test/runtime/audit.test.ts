// The audit log (contract section 18) in workerd against real D1: an entry
// for each action, wherever the change happened (D1 batches for tokens,
// sessions and reconciliations; the run object's pending marks for triggers,
// decisions, answers and cancels; the refusal queue's Durable Object for 403s,
// coalesced per minute), read back through GET /api/audit.
import { env, runDurableObjectAlarm, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";
import { checkpointRow } from "./outcome-rows";
import { insertIntent, settle } from "../../src/outcomes/mutation-outcomes";
import { api, apiAs, namedToken } from "./helpers";

const ORIGIN = "https://engine.test";
const CREATE = "mcp__demo__create_dashboard";

async function audit(query: string): Promise<any> {
  const res = await api(`/api/audit?${query}`);
  expect(res.status).toBe(200);
  return res.json();
}

/** Polls until the entry the run object or queue writes asynchronously is in D1. */
async function entryOf(query: string, target: string): Promise<any> {
  let found: any;
  await expect
    .poll(
      async () => {
        found = (await audit(query)).entries.find((e: any) => e.target === target);
        return found !== undefined;
      },
      { timeout: 5_000, interval: 25 },
    )
    .toBe(true);
  return found;
}

async function waitPending(token: string, runId: string, key: "pending_approvals" | "pending_inputs"): Promise<any> {
  let item: any;
  await expect
    .poll(async () => {
      item = (await (await apiAs(token, `/api/runs/${runId}`)).json<any>())[key][0];
      return item !== undefined;
    })
    .toBe(true);
  return item;
}

describe("GET /api/audit", () => {
  it("lists newest first with the listing rules: limit, next_cursor, filters; a bad query is 400", async () => {
    const admin = await namedToken(["admin"], "auditor");
    for (let i = 0; i < 3; i++)
      await apiAs(admin.token, "/api/tokens", {
        method: "POST",
        body: JSON.stringify({ name: `p-${crypto.randomUUID().slice(0, 8)}`, roles: ["viewer"] }),
      });
    const first = await audit(`principal=${admin.principal}&limit=2`);
    expect(first.entries).toHaveLength(2);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await audit(`principal=${admin.principal}&limit=2&cursor=${encodeURIComponent(first.next_cursor)}`);
    expect(second.entries).toHaveLength(1);
    expect(second.next_cursor).toBeNull();
    const all = [...first.entries, ...second.entries];
    expect(all.every((e: any) => e.principal === admin.principal && e.action === "token.create" && e.result === "ok")).toBe(true);
    expect(all.map((e: any) => e.at)).toEqual([...all.map((e: any) => e.at)].sort().reverse());
    expect(JSON.stringify(all)).not.toMatch(/aee_/);
    for (const bad of ["action=token.steal", "limit=0", "cursor=%%%", "extra=1"])
      expect((await api(`/api/audit?${bad}`)).status, bad).toBe(400);
  });
});

describe("an entry for each action", () => {
  it("session.create and session.end, as the token's principal, in the same batch as the session", async () => {
    const viewer = await namedToken(["viewer"], "sess");
    const signIn = await SELF.fetch(`${ORIGIN}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: viewer.token }),
    });
    expect(signIn.status).toBe(204);
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    expect((await SELF.fetch(`${ORIGIN}/console/session`, { method: "DELETE", headers: { cookie, origin: ORIGIN } })).status).toBe(204);
    const entries = (await audit(`principal=${viewer.principal}`)).entries;
    expect(entries.map((e: any) => e.action)).toEqual(["session.end", "session.create"]);
    expect(entries[0].target).toBe(entries[1].target);
    expect(entries[0].target).toMatch(/^console_session:[0-9a-f]{8}$/);
  });

  it("run.trigger, approval.decide, input.answer and run.cancel, through the run object's pending marks", async () => {
    const requester = await namedToken(["requester"], "trig");
    const approver = await namedToken(["approver"], "dec");
    const res = await apiAs(requester.token, "/api/trigger", {
      method: "POST",
      body: JSON.stringify({
        message: "audit",
        script: [
          {
            tool_calls: [
              { tool_name: CREATE, tool_call_id: "w1", arguments: { title: "audited", api_token: "s3cret-value" } },
              { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "?" } },
            ],
          },
          { text: "done", delay_ms: 60_000 },
        ],
      }),
    });
    const { run_id } = await res.json<any>();
    expect(await entryOf(`action=run.trigger&principal=${requester.principal}`, run_id)).toMatchObject({ result: "ok" });

    const approval = await waitPending(approver.token, run_id, "pending_approvals");
    await apiAs(approver.token, `/api/runs/${run_id}/approvals/${approval.approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny", reason: "not today" }),
    });
    expect(
      await entryOf(`action=approval.decide&principal=${approver.principal}`, `${run_id}/approvals/${approval.approval_id}`),
    ).toMatchObject({
      details: { decision: "denied", tool_name: CREATE },
    });

    await waitPending(approver.token, run_id, "pending_inputs");
    await apiAs(approver.token, `/api/runs/${run_id}/inputs/ask-1`, { method: "POST", body: '{"answer":"core"}' });
    expect(await entryOf(`action=input.answer&principal=${approver.principal}`, `${run_id}/inputs/ask-1`)).toMatchObject({ result: "ok" });

    expect((await apiAs(requester.token, `/api/runs/${run_id}/cancel`, { method: "POST" })).status).toBe(202);
    expect(await entryOf(`action=run.cancel&principal=${requester.principal}`, run_id)).toMatchObject({ result: "ok" });
    // A repeated cancel of the ended run changes nothing and records nothing.
    await apiAs(requester.token, `/api/runs/${run_id}/cancel`, { method: "POST" });
    expect((await audit(`action=run.cancel&principal=${requester.principal}`)).entries).toHaveLength(1);
  });

  it("mutation.reconcile in the same D1 batch as the reconciliation; a refused reconcile records nothing", async () => {
    const reconciler = await namedToken(["reconciler"], "rec");
    const { row } = await insertIntent(env.DB, {
      runId: newRunId(),
      channelId: "C-audit",
      deliveryId: null,
      toolCallId: newToolCallId(),
      approvalId: newApprovalId(),
      toolName: CREATE,
      argumentsDigest: `sha256:${crypto.randomUUID().replaceAll("-", "").repeat(2)}`,
      approvedBy: "token:root",
      approvedAt: new Date().toISOString(),
      createdAt: new Date().toISOString(),
    });
    await checkpointRow(env.DB, row.mutation_id);
    await settle(env.DB, row.mutation_id, {
      state: "outcome_unknown",
      reason: "transport_timeout",
      error: { code: "transport_timeout", message: "no answer" },
      settledAt: new Date().toISOString(),
    });
    const body = JSON.stringify({ outcome: "completed", evidence: "seen it" });
    expect((await apiAs(reconciler.token, `/api/mutations/${row.mutation_id}/reconcile`, { method: "POST", body })).status).toBe(200);
    expect((await apiAs(reconciler.token, `/api/mutations/${row.mutation_id}/reconcile`, { method: "POST", body })).status).toBe(409);
    const entries = (await audit(`action=mutation.reconcile&principal=${reconciler.principal}`)).entries;
    expect(entries).toEqual([
      expect.objectContaining({ target: row.mutation_id, result: "ok", details: { outcome: "completed", evidence: "seen it" } }),
    ]);
  });

  it("access.refused for every 403, coalesced per principal, action, target and minute, through the durable queue", async () => {
    const viewer = await namedToken(["viewer"], "refused");
    for (let i = 0; i < 3; i++) {
      expect((await apiAs(viewer.token, "/api/trigger", { method: "POST", body: '{"message":"no"}' })).status).toBe(403);
    }
    expect((await apiAs(viewer.token, "/api/tokens")).status).toBe(403);
    // The queue's alarm writes to D1; fired here rather than waited for.
    await runDurableObjectAlarm(env.AUDIT_QUEUE.get(env.AUDIT_QUEUE.idFromName(viewer.principal)));
    const entries = (await audit(`action=access.refused&principal=${viewer.principal}`)).entries;
    expect(entries).toHaveLength(2);
    expect(entries.find((e: any) => e.target === "POST /api/trigger")).toMatchObject({
      result: "refused",
      count: 3,
      details: { error: "forbidden" },
    });
    expect(entries.find((e: any) => e.target === "GET /api/tokens")).toMatchObject({ result: "refused", count: 1 });
    // Flushing again writes the same counts (D1 gets the count, not an increment).
    await runDurableObjectAlarm(env.AUDIT_QUEUE.get(env.AUDIT_QUEUE.idFromName(viewer.principal)));
    expect(
      (await audit(`action=access.refused&principal=${viewer.principal}`)).entries.find((e: any) => e.target === "POST /api/trigger").count,
    ).toBe(3);
  });
});
