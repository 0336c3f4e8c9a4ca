// Reminders and escalation (contract section 24) driven by the run's alarm, in
// the real Worker, run object and D1 of miniflare. The runtime config
// (vitest.config.ts) gives mcp__demo__schedule_report `approvers:
// ["token:sched-owner-*"]`, `remind_before: "299s"` (of the default 300 s
// timeout), `escalate_after: "1s"` and `escalate_to:
// ["token:sched-escalated-*"]`. The alarm is fired by the test
// (runDurableObjectAlarm), never waited for.
import { createExecutionContext, env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createParser } from "eventsource-parser";
import worker from "../../src/index";
import { api, apiAs, freshAddress, namedToken, runStub, sleep, TOKEN } from "./helpers";

const TOOL = "mcp__demo__schedule_report";
const ESCALATE_AFTER_MS = 1_000;
const ROUNDS = 80;
const POLL_MS = 50;

/** The run's stream, read as it arrives: `settle` takes what came within a short wait (a running run's stream stays open). */
class Stream {
  readonly events: any[] = [];
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  readonly #parser = createParser({
    onEvent: (e) => {
      const event = JSON.parse(e.data);
      if (event.type !== "heartbeat") this.events.push(event);
    },
  });
  #pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;

  constructor(response: Response) {
    if (!response.body) throw new Error("no body");
    this.#reader = response.body.getReader();
  }

  async settle(ms = POLL_MS): Promise<any[]> {
    const waited = sleep(ms).then(() => null);
    for (;;) {
      this.#pending ??= this.#reader.read();
      const read = await Promise.race([this.#pending, waited]);
      if (read === null) return this.events;
      this.#pending = undefined;
      if (read.done) return this.events;
      this.#parser.feed(this.#decoder.decode(read.value, { stream: true }));
    }
  }

  close(): Promise<void> {
    return this.#reader.cancel();
  }
}

/** Fires the run's alarm until `found` holds of its events (each round fires it once; the clock decides what is due). */
async function alarmUntil(runId: string, stream: Stream, found: (events: any[]) => boolean): Promise<any[]> {
  for (let round = 0; round < ROUNDS; round++) {
    await runDurableObjectAlarm(runStub(runId));
    if (found(await stream.settle())) return stream.events;
  }
  throw new Error(`not found within ${ROUNDS} rounds: ${JSON.stringify(stream.events.map((e) => e.type))}`);
}

async function startRun(): Promise<{ runId: string; approvalId: string; askedAt: number; stream: Stream }> {
  const res = await api("/api/trigger", {
    method: "POST",
    body: JSON.stringify({
      message: "nudges",
      channel_id: `C-nudge-${crypto.randomUUID().slice(0, 8)}`,
      script: [{ tool_calls: [{ tool_name: TOOL, tool_call_id: "n1", arguments: { dashboard_id: "dash-none" } }] }, { text: "done" }],
    }),
  });
  expect(res.status).toBe(202);
  const runId = ((await res.json()) as { run_id: string }).run_id;
  const stream = new Stream(await api(`/api/runs/${runId}/events`));
  for (let round = 0; round < ROUNDS; round++) {
    const asked = (await stream.settle()).find((e) => e.type === "approval_requested");
    if (asked) return { runId, approvalId: asked.approval_id, askedAt: Date.parse(asked.at), stream };
  }
  throw new Error(`run ${runId} asked for no approval`);
}

const decide = (token: string, runId: string, approvalId: string) =>
  apiAs(token, `/api/runs/${runId}/approvals/${approvalId}`, { method: "POST", body: JSON.stringify({ decision: "approve" }) });

describe("escalate_after, from the run's alarm", () => {
  it("escalates once escalate_after has passed, not before; the escalated principal may then decide", async () => {
    const escalated = await namedToken(["approver"], "sched-escalated");
    const outsider = await namedToken(["approver"], "sched-outsider");
    const { runId, approvalId, askedAt, stream } = await startRun();

    // Before the escalation, only the approvers in force may decide: the escalate_to principal is refused, nothing changes.
    const early = await decide(escalated.token, runId, approvalId);
    expect(early.status).toBe(403);
    expect(await early.json()).toMatchObject({ error: "not_an_approver" });

    await runDurableObjectAlarm(runStub(runId));
    if (Date.now() < askedAt + ESCALATE_AFTER_MS) {
      // The alarm ran before escalate_after passed: nothing is escalated yet.
      expect((await stream.settle()).map((e) => e.type)).not.toContain("approval_escalated");
    }

    const events = await alarmUntil(runId, stream, (all) => all.some((e) => e.type === "approval_escalated"));
    const escalation = events.filter((e) => e.type === "approval_escalated");
    expect(escalation).toHaveLength(1);
    expect(escalation[0]).toMatchObject({
      tool_name: TOOL,
      tool_call_id: "n1",
      approval_id: approvalId,
      approvers: ["token:sched-owner-*"],
      escalated_to: ["token:sched-escalated-*"],
    });
    expect(escalation[0].input_id).toBeUndefined();
    expect(Date.parse(escalation[0].at)).toBeGreaterThanOrEqual(askedAt + ESCALATE_AFTER_MS);
    // Contract section 24: nothing is reminded for an approval not shown in Slack (an API run posts nowhere).
    expect(events.map((e) => e.type)).not.toContain("approval_reminded");
    // Between approval_requested and approval_resolved (section 4's order), and still pending.
    expect(events.map((e) => e.type).slice(-2)).toEqual(["approval_requested", "approval_escalated"]);

    // Escalation widens, it does not open to anyone: another approver is still refused.
    const other = await decide(outsider.token, runId, approvalId);
    expect(other.status).toBe(403);

    // A later alarm escalates nothing again.
    await runDurableObjectAlarm(runStub(runId));
    expect((await stream.settle()).filter((e) => e.type === "approval_escalated")).toHaveLength(1);

    // The escalated principal now decides it.
    const decided = await decide(escalated.token, runId, approvalId);
    expect(decided.status).toBe(200);
    expect(await decided.json()).toMatchObject({ approval_id: approvalId, decision: "approved", status: "resolved" });
    const resolved = (await stream.settle()).find((e) => e.type === "approval_resolved");
    expect(resolved).toMatchObject({ decision: "approved", decided_by: escalated.principal });
    await stream.close();
  });
});

describe("a pending approval meets the version active now at its alarm (contract section 24)", () => {
  it("resolves once its counted votes reach the new required, at the escalation's alarm, before escalating", async () => {
    type Policy = { version: number; policy: { tools: Record<string, Record<string, unknown>> } };
    const settings = (await (await api("/api/policy")).json()) as Policy;
    // Its owner makes the token a person's, so its vote counts towards a quorum of two (section 19).
    const owner = await namedToken(["approver"], "sched-owner", "access:sched-owner@example.com");
    // Raising approvals_required tightens: active at once. The approval is asked under it (two votes needed).
    const two = structuredClone(settings.policy);
    two.tools[TOOL] = { ...two.tools[TOOL], approvals_required: 2 };
    const tightened = await api("/api/policy", { method: "PUT", body: JSON.stringify({ policy: two, base_version: settings.version }) });
    expect(tightened.status).toBe(201);
    const twoVersion = ((await tightened.json()) as { version: number; status: string }).version;
    try {
      const { runId, approvalId, askedAt, stream } = await startRun();
      const voted = await decide(owner.token, runId, approvalId);
      expect(voted.status).toBe(200);
      expect(await voted.json()).toMatchObject({ status: "pending", votes: 1, required: 2 });

      // Back to one vote: a loosening, proposed until another person approves it; moved here in D1 itself
      // (the second person's approval is the policy e2e's). Nothing is appended by the change itself.
      const one = await api("/api/policy", { method: "PUT", body: JSON.stringify({ policy: settings.policy, base_version: twoVersion }) });
      expect(one.status).toBe(201);
      const proposed = (await one.json()) as { version: number; status: string };
      expect(proposed.status).toBe("proposed");
      const oneVersion = proposed.version;
      await env.DB.prepare("UPDATE policy_active SET version = ?, activated_by = 'test', activated_at = 'now' WHERE id = 1")
        .bind(oneVersion)
        .run();
      expect((await stream.settle()).map((e) => e.type)).not.toContain("approval_resolved");

      // The escalation's alarm (escalate_after 1 s) meets the new version first: the counted vote reaches
      // required 1, so the approval resolves, decided by its voter, and is never escalated.
      const events = await alarmUntil(runId, stream, (all) => all.some((e) => e.type === "approval_resolved"));
      const resolved = events.find((e) => e.type === "approval_resolved");
      expect(resolved).toMatchObject({
        approval_id: approvalId,
        decision: "approved",
        decided_by: owner.principal,
        policy_version: oneVersion,
      });
      expect(resolved.approvals.map((a: { by: string }) => a.by)).toEqual([owner.principal]);
      expect(Date.parse(resolved.at)).toBeGreaterThanOrEqual(askedAt + ESCALATE_AFTER_MS);
      expect(events.map((e) => e.type)).not.toContain("approval_escalated");
      // Resolved approved: the call's execution starts (what the runtime's demo server then does with it is not this test's).
      const types = events.map((e) => e.type);
      expect(types[types.indexOf("approval_resolved") + 1]).toBe("tool_execution_started");
      await stream.close();

      // One approval.decide per vote (sections 19 and 25): the owner's vote has its entry; the alarm's
      // resolution is nobody's vote and adds none. The index lists the approval approved once the flush that
      // carries the resolution's marks (audit entries with them) has landed.
      await expect
        .poll(async () => ((await (await api(`/api/approvals/${approvalId}`)).json()) as { status?: string }).status, {
          timeout: 5_000,
          interval: 25,
        })
        .toBe("approved");
      const decided = await env.DB.prepare("SELECT principal FROM audit_log WHERE action = 'approval.decide' AND target = ?")
        .bind(`${runId}/approvals/${approvalId}`)
        .all<{ principal: string }>();
      expect(decided.results).toEqual([{ principal: owner.principal }]);
    } finally {
      await env.DB.prepare("UPDATE policy_active SET version = 0 WHERE id = 1").run();
    }
  });
});

describe("a bad reminder or escalation setting", () => {
  it("is 503 bad_config on every /api route, naming the entry (a duration out of 1s..30d, or not shorter than the timeout)", async () => {
    const answer = async (toolPolicy: unknown) => {
      const res = await worker.fetch(
        new Request("https://engine.test/api/runs?limit=1", {
          headers: { authorization: `Bearer ${TOKEN}`, "cf-connecting-ip": freshAddress() },
        }),
        { ...env, TOOL_POLICY: JSON.stringify(toolPolicy) } as never,
        createExecutionContext(),
      );
      return { status: res.status, body: (await res.json()) as { error: string; details?: { path: string }[] } };
    };
    const zero = await answer({ [TOOL]: { remind_before: "0s" } });
    expect(zero.status).toBe(503);
    expect(zero.body.error).toBe("bad_config");
    expect(zero.body.details?.map((d) => d.path)).toEqual([`TOOL_POLICY.${TOOL}.remind_before`]);
    // The runtime's APPROVAL_TIMEOUT_MS is the default 300000 ms: 300s is not shorter than it.
    const late = await answer({ "*": { escalate_after: "300s" } });
    expect(late.status).toBe(503);
    expect(late.body.details?.map((d) => d.path)).toEqual(["TOOL_POLICY.*.escalate_after"]);
    expect((await answer({ "*": { escalate_after: "299s", remind_before: "1s" } })).status).toBe(200);
  });
});
