// Every event of real runs (all fourteen types of contract section 4, made by
// the real Worker, RunObject and demo MCP server) validates against the
// strict zod event schemas AND against the committed JSON Schema
// (schemas/event.json, read by a JSON Schema validator nobody here wrote);
// and the schemas are strict: an extra or missing field fails.
import { Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { eventSchemas, EVENT_TYPES, runEventSchema } from "../../src/wire/event-schemas";
import eventJsonSchema from "../../schemas/event.json";
import { env } from "cloudflare:test";
import { insertTokenStatement, newTokenValue } from "../../src/auth/token-store";
import { api, apiAs, openEvents, SseReader, trigger } from "./helpers";

const CREATE = "mcp__demo__create_dashboard";
const KPI = "mcp__demo__create_kpi";

/** An approver token that is a person (its owner), so its vote counts towards a quorum. */
async function ownedApprover(): Promise<string> {
  const token = newTokenValue();
  const now = Date.now();
  const record = {
    name: `voter-${crypto.randomUUID().slice(0, 8)}`,
    roles: ["approver" as const],
    owner: "access:voter@example.com",
    // A person's own token (section 19: minted by that access: user for themselves) when it has an owner.
    owned_by_creator: true,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + 86_400_000).toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  await (await insertTokenStatement(env.DB, record, token)).run();
  return token;
}

async function post(path: string, body: unknown): Promise<number> {
  const res = await api(path, { method: "POST", body: JSON.stringify(body) });
  await res.body?.cancel();
  return res.status;
}

/** Reads until `found` holds for the events read so far, with a bound. */
async function readUntilFound(reader: SseReader, found: (events: any[]) => boolean, bound = 200): Promise<any[]> {
  for (let i = 0; i < bound; i++) {
    const events = reader.events.map((e) => JSON.parse(e.data));
    if (found(events) || reader.done) return events;
    await reader.readUntil(reader.events.length + 1);
  }
  throw new Error("the awaited events did not arrive");
}

describe("event schemas against real runs", () => {
  it("every event of a run with a question, an approved and a denied write, heartbeats and a cancelled run validates", async () => {
    const { json } = await trigger({
      message: "schemas",
      channel_id: "C-schemas",
      script: [
        {
          text: "Asking first.",
          tool_calls: [
            { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which team?" } },
            { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "Schema check", api_key: "not-a-real-key" } },
            { tool_name: CREATE, tool_call_id: "write-2", arguments: { title: "Denied one" } },
            // Two persons must approve it (the runtime TOOL_POLICY, contract section 19): one vote, then a deny.
            { tool_name: KPI, tool_call_id: "write-3", arguments: { name: "k", query: "q" } },
          ],
        },
        { text: "Done." },
      ],
    });
    const runId: string = json.run_id;
    const reader = new SseReader(await openEvents(runId));
    const asked = await readUntilFound(reader, (es) => es.filter((e) => e.type === "approval_requested").length === 3);
    // Heartbeats fill the silence while the run waits for people (HEARTBEAT_INTERVAL_MS is 100 in tests).
    await readUntilFound(reader, (es) => es.some((e) => e.type === "heartbeat"));
    const approvals = asked.filter((e) => e.type === "approval_requested");
    expect(approvals[0].arguments.api_key).toBe("[redacted]");
    expect(await post(`/api/runs/${runId}/inputs/ask-1`, { answer: "Platform" })).toBe(200);
    expect(await post(`/api/runs/${runId}/approvals/${approvals[0].approval_id}`, { decision: "approve" })).toBe(200);
    expect(await post(`/api/runs/${runId}/approvals/${approvals[1].approval_id}`, { decision: "deny" })).toBe(200);
    const voter = await ownedApprover();
    for (const decision of ["approve", "deny"]) {
      const res = await apiAs(voter, `/api/runs/${runId}/approvals/${approvals[2].approval_id}`, {
        method: "POST",
        body: JSON.stringify({ decision }),
      });
      expect(res.status).toBe(200);
    }
    await reader.readToEnd();

    // A second run, cancelled while it waits: run_failed.
    const second = await trigger({
      message: "cancel me",
      script: [{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-x", arguments: { question: "Anyone?" } }] }],
    });
    const secondReader = new SseReader(await openEvents(second.json.run_id));
    await readUntilFound(secondReader, (es) => es.some((e) => e.type === "human_input_requested"));
    expect(await post(`/api/runs/${second.json.run_id}/cancel`, {})).toBe(202);
    await secondReader.readToEnd();

    // A third run, escalated (contract section 24: the runtime TOOL_POLICY escalates schedule_report after 1 s), then cancelled.
    const third = await trigger({
      message: "escalate me",
      script: [{ tool_calls: [{ tool_name: "mcp__demo__schedule_report", tool_call_id: "esc-1", arguments: { dashboard_id: "d" } }] }],
    });
    const thirdReader = new SseReader(await openEvents(third.json.run_id));
    await readUntilFound(thirdReader, (es) => es.some((e) => e.type === "approval_escalated"));
    expect(await post(`/api/runs/${third.json.run_id}/cancel`, {})).toBe(202);
    await thirdReader.readToEnd();

    const events = [...reader.events, ...secondReader.events, ...thirdReader.events].map((e) => JSON.parse(e.data));
    // approval_reminded needs an approval shown in Slack (contract section 24): test/e2e/policy-reminders.test.ts validates it.
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(EVENT_TYPES.filter((t) => t !== "approval_reminded")));
    const jsonSchema = new Validator(eventJsonSchema as object, "2020-12", false);
    for (const event of events) {
      const zodResult = runEventSchema.safeParse(event);
      expect(zodResult.success ? "ok" : JSON.stringify(zodResult.error.issues), JSON.stringify(event)).toBe("ok");
      const jsonResult = jsonSchema.validate(event);
      expect(jsonResult.valid ? "ok" : JSON.stringify(jsonResult.errors.slice(0, 3)), JSON.stringify(event)).toBe("ok");
    }
  });

  it("is strict: an extra field, a missing field or a wrong type fails, in zod and in the JSON Schema", () => {
    const base = { protocol_version: "v2", sequence: 5, run_id: "run-1", channel_id: "C1", at: "2026-11-29T10:00:00.000Z" };
    const started = { ...base, type: "tool_execution_started", tool_name: CREATE, tool_call_id: "write-1", approval_id: "approval-1" };
    const jsonSchema = new Validator(eventJsonSchema as object, "2020-12", false);
    const both = (event: unknown) => [eventSchemas.tool_execution_started.safeParse(event).success, jsonSchema.validate(event).valid];
    expect(both(started)).toEqual([true, true]);
    // tool_execution_started carries those fields "and nothing else".
    expect(both({ ...started, result: { is_error: false } })).toEqual([false, false]);
    const { approval_id: _omitted, ...missing } = started;
    expect(both(missing)).toEqual([false, false]);
    expect(both({ ...started, sequence: 0 })).toEqual([false, false]);
    expect(both({ ...started, protocol_version: "v1" })).toEqual([false, false]);
    expect(runEventSchema.safeParse({ ...base, type: "heartbeat", note: "x" }).success).toBe(false);
    expect(runEventSchema.safeParse({ ...base, type: "no_such_type" }).success).toBe(false);
  });
});
