// The run index wired into the RunObject (contract section 15): real runs
// over SELF.fetch mark their object's index on append, and the object's alarm
// (fired here with runDurableObjectAlarm) writes the marks into the real D1 of
// miniflare. Proves a run, an approval and a question appear in GET /api/runs,
// /api/approvals?status=pending and /api/inputs?status=pending once started,
// move to the resolved listings once resolved, that a run ending with
// entries still waiting leaves none pending, and that after retention the
// run's summary is 404 while it stays listed.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RunObject } from "../../durable-objects/run-object";
import { api, openEvents, runStub, SseReader, sleep, trigger } from "./helpers";

/** Polling bound: the flush runs right after the alarm; this many rounds of ALARM_POLL_MS is far more than it needs. */
const ROUNDS = 40;
const ALARM_POLL_MS = 50;

async function listing(path: string): Promise<any> {
  const res = await api(path);
  expect(res.status).toBe(200);
  return res.json();
}

/** Fires the run's alarm (its index flush) and reads `path` until `found` holds, with a bound. */
async function pollListed(runId: string, path: string, found: (body: any) => boolean): Promise<any> {
  let body: any;
  for (let round = 0; round < ROUNDS; round++) {
    await runDurableObjectAlarm(runStub(runId));
    body = await listing(path);
    if (found(body)) return body;
    await sleep(ALARM_POLL_MS);
  }
  throw new Error(`${path} did not show the expected entry within ${ROUNDS} rounds: ${JSON.stringify(body)}`);
}

const CHANNEL = () => `C-index-${crypto.randomUUID().slice(0, 8)}`;

async function summary(runId: string): Promise<any> {
  return (await api(`/api/runs/${runId}`)).json();
}

describe("the run index, written by the run's object", () => {
  it("lists a run, its approval and its question once started, and in the resolved listings once resolved", async () => {
    const channel = CHANNEL();
    const { status, json } = await trigger({
      message: "index me",
      channel_id: channel,
      delivery_id: `dl-${channel}`,
      script: [
        {
          tool_calls: [
            { tool_name: "mcp__demo__create_dashboard", tool_call_id: "w1", arguments: { title: "indexed", api_token: "s3cret-value" } },
            { tool_name: "human__ask", tool_call_id: "q1", arguments: { question: "Which team?" } },
          ],
        },
        { text: "done" },
      ],
    });
    expect(status).toBe(202);
    const runId: string = json.run_id;
    await expect.poll(async () => (await summary(runId)).pending_approvals.length).toBe(1);
    await expect.poll(async () => (await summary(runId)).pending_inputs.length).toBe(1);
    const approvalId: string = (await summary(runId)).pending_approvals[0].approval_id;

    const runs = await pollListed(runId, `/api/runs?channel_id=${channel}`, (b) => b.runs.length === 1);
    expect(runs.runs[0]).toMatchObject({
      run_id: runId,
      channel_id: channel,
      user_id: "token:root",
      requested_by: "token:root",
      delivery_id: `dl-${channel}`,
      source: "api",
      status: "running",
    });
    const approvals = await pollListed(runId, "/api/approvals?status=pending&limit=200", (b) =>
      b.approvals.some((a: any) => a.approval_id === approvalId),
    );
    const approval = approvals.approvals.find((a: any) => a.approval_id === approvalId);
    expect(approval).toMatchObject({ run_id: runId, channel_id: channel, tool_name: "mcp__demo__create_dashboard", status: "pending" });
    // The listing's arguments are the redacted ones, and it names what was withheld as approval_requested does (section 19).
    expect(JSON.stringify(approval.arguments)).not.toContain("s3cret-value");
    expect(approval.hidden).toEqual([{ path: "/api_token", reason: "secret", chars: JSON.stringify("s3cret-value").length }]);
    const inputs = await pollListed(runId, "/api/inputs?status=pending&limit=200", (b) =>
      b.inputs.some((i: any) => i.run_id === runId && i.tool_call_id === "q1"),
    );
    expect(inputs.inputs.find((i: any) => i.run_id === runId)).toMatchObject({ question: "Which team?", status: "pending" });

    // Resolve both.
    const decided = await api(`/api/runs/${runId}/approvals/${approvalId}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBe(200);
    const answered = await api(`/api/runs/${runId}/inputs/q1`, {
      method: "POST",
      body: JSON.stringify({ answer: "platform" }),
    });
    expect(answered.status).toBe(200);
    await expect.poll(async () => (await summary(runId)).status, { timeout: 10_000 }).toBe("completed");

    const resolved = await pollListed(runId, "/api/approvals?status=resolved&limit=200", (b) =>
      b.approvals.some((a: any) => a.approval_id === approvalId),
    );
    expect(resolved.approvals.find((a: any) => a.approval_id === approvalId)).toMatchObject({
      status: "approved",
      decided_by: "token:root",
      hidden: [{ path: "/api_token", reason: "secret", chars: 14 }],
    });
    expect((await listing("/api/approvals?status=pending&limit=200")).approvals.some((a: any) => a.run_id === runId)).toBe(false);
    const answeredList = await pollListed(runId, "/api/inputs?status=answered&limit=200", (b) =>
      b.inputs.some((i: any) => i.run_id === runId && i.tool_call_id === "q1"),
    );
    expect(answeredList.inputs.find((i: any) => i.run_id === runId)).toMatchObject({ status: "answered" });
    const ended = await pollListed(runId, `/api/runs?channel_id=${channel}&status=completed`, (b) => b.runs.length === 1);
    expect(ended.runs[0]).toMatchObject({ run_id: runId, status: "completed", ended_at: expect.any(String) });
  });

  it("a deny's reason is kept redacted on approval_resolved and in the approvals listing; a longer one is 400", async () => {
    const { json } = await trigger({
      message: "deny me",
      channel_id: CHANNEL(),
      script: [
        { tool_calls: [{ tool_name: "mcp__demo__create_dashboard", tool_call_id: "w1", arguments: { title: "no" } }] },
        { text: "ok" },
      ],
    });
    const runId: string = json.run_id;
    await expect.poll(async () => (await summary(runId)).pending_approvals.length).toBe(1);
    const approvalId: string = (await summary(runId)).pending_approvals[0].approval_id;
    const decide = (reason: string) =>
      api(`/api/runs/${runId}/approvals/${approvalId}`, {
        method: "POST",
        body: JSON.stringify({ decision: "deny", reason }),
      });

    const tooLong = await decide("x".repeat(1_001));
    expect(tooLong.status).toBe(400);
    expect(JSON.stringify(await tooLong.json())).toContain("reason");
    expect((await summary(runId)).pending_approvals).toHaveLength(1);

    expect((await decide("wrong dashboard; api_key=sk-live-0123456789abcdef")).status).toBe(200);
    const kept = "wrong dashboard; api_key=[redacted]";
    const frames = await new SseReader(await openEvents(runId)).readToEnd();
    const resolved = frames.map((f) => JSON.parse(f.data)).find((e) => e.type === "approval_resolved");
    expect(resolved).toMatchObject({ decision: "denied", decided_by: "token:root", reason: kept });

    const listed = await pollListed(runId, "/api/approvals?status=resolved&limit=200", (b) =>
      b.approvals.some((a: any) => a.approval_id === approvalId),
    );
    expect(listed.approvals.find((a: any) => a.approval_id === approvalId)).toMatchObject({ status: "denied", reason: kept });
  });

  it("a cancelled run leaves no approval or question pending in the listings", async () => {
    const channel = CHANNEL();
    const { json } = await trigger({
      message: "cancel me",
      channel_id: channel,
      script: [
        {
          tool_calls: [
            { tool_name: "mcp__demo__create_dashboard", tool_call_id: "w1", arguments: { title: "never" } },
            { tool_name: "human__ask", tool_call_id: "q1", arguments: { question: "Never answered?" } },
          ],
        },
      ],
    });
    const runId: string = json.run_id;
    await expect.poll(async () => (await summary(runId)).pending_inputs.length).toBe(1);
    await pollListed(runId, "/api/inputs?status=pending&limit=200", (b) => b.inputs.some((i: any) => i.run_id === runId));
    expect((await api(`/api/runs/${runId}/cancel`, { method: "POST" })).status).toBe(202);
    await pollListed(runId, `/api/runs?channel_id=${channel}&status=failed`, (b) => b.runs.length === 1);
    await pollListed(runId, "/api/inputs?status=pending&limit=200", (b) => !b.inputs.some((i: any) => i.run_id === runId));
    const approvals = await listing("/api/approvals?status=pending&limit=200");
    expect(approvals.approvals.some((a: any) => a.run_id === runId)).toBe(false);
    const row = await env.DB.prepare(`SELECT status FROM approvals WHERE run_id = ?`).bind(runId).first<{ status: string }>();
    expect(row?.status).toBe("cancelled");
    const input = await env.DB.prepare(`SELECT status FROM inputs WHERE run_id = ?`).bind(runId).first<{ status: string }>();
    expect(input?.status).toBe("cancelled");
  });

  it("after retention the run's summary is 404 but it stays listed", async () => {
    const channel = CHANNEL();
    const { json } = await trigger({ message: "short-lived", channel_id: channel });
    const runId: string = json.run_id;
    await expect.poll(async () => (await summary(runId)).status).toBe("completed");
    const stub = runStub(runId);
    // Retention now instead of in a day, before the index was ever flushed: the purge must not lose the marks.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec(`UPDATE deadlines SET due_at = 0 WHERE name = 'retention'`);
    });
    // The object's own alarm may be running right now (an index flush): fire once it is free, with a bound.
    expect(await fireAlarm(stub)).toBe(true);
    expect((await api(`/api/runs/${runId}`)).status).toBe(404);
    const listed = await pollListed(runId, `/api/runs?channel_id=${channel}`, (b) => b.runs.length === 1);
    expect(listed.runs[0]).toMatchObject({ run_id: runId, status: "completed" });
    expect(await runInDurableObject(stub, (_i, state) => state.storage.sql.exec(`SELECT COUNT(*) AS n FROM run_index_marks`).one().n)).toBe(
      0,
    );
  });

  it("arms the index flush in the step that appended the marks, before anything else asks the run (issue 33's batched observers)", async () => {
    // The model's one turn waits 600 s, and nobody watches (no heartbeat): the only earlier
    // deadline is the flush of run_started's marks, armed by the observers' pass over the step.
    const { json } = await trigger({ message: "batch", channel_id: CHANNEL(), script: [{ delay_ms: 600_000 }] });
    const armed = await runInDurableObject(runStub(json.run_id), (_instance: RunObject, state) => state.storage.getAlarm());
    expect(armed).not.toBeNull();
    expect(armed! - Date.now()).toBeLessThan(60_000);
    await api(`/api/runs/${json.run_id}/cancel`, { method: "POST" });
  });
});

/** runDurableObjectAlarm, retried while the object's alarm is mid-run (then none is scheduled for a moment). */
async function fireAlarm(stub: DurableObjectStub<RunObject>): Promise<boolean> {
  for (let attempt = 0; attempt < 20; attempt++) {
    if (await runDurableObjectAlarm(stub)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
