// The console's fold of a run's events into call cards (src/console/app/call-cards.ts).
import { describe, expect, it } from "vitest";
import type { EngineEvent } from "../../src/client/types";
import { applyEvent, emptyRun, formatTimeLeft, secondsLeft } from "../../src/console/app/call-cards";

let seq = 0;
const env = () => ({ protocol_version: "v2" as const, sequence: ++seq, run_id: "run_1", channel_id: "C1", at: "2026-11-29T10:00:00.000Z" });
const fold = (events: EngineEvent[]) => events.reduce(applyEvent, emptyRun("run_1"));

describe("call cards", () => {
  it("moves a human-approved mutation through announced, waiting, approved, executed", () => {
    seq = 0;
    const stages: string[] = [];
    let view = emptyRun("run_1");
    const events: EngineEvent[] = [
      { ...env(), type: "run_started", user_id: "u" },
      { ...env(), type: "tool_started", tool_name: "t", tool_call_id: "c1", approval_required: true },
      {
        ...env(),
        type: "approval_requested",
        required: 1,
        approvers: null,
        tool_name: "t",
        tool_call_id: "c1",
        approval_id: "a1",
        level: "confirm",
        description: "d",
        arguments: { api_key: "[redacted]" },
        hidden: [{ path: "/api_key", reason: "secret", chars: 12 }],
        expires_at: "2026-11-29T10:05:00.000Z",
      },
      {
        ...env(),
        type: "approval_resolved",
        tool_name: "t",
        tool_call_id: "c1",
        approval_id: "a1",
        decision: "approved",
        decided_by: "console:a",
      },
      { ...env(), type: "tool_execution_started", tool_name: "t", tool_call_id: "c1", approval_id: "a1" },
      {
        ...env(),
        type: "tool_execution",
        tool_name: "t",
        tool_call_id: "c1",
        approval_id: "a1",
        execution_status: "executed",
        result: { is_error: false, content_bytes: 2, summary: "ok" },
        mutation_id: "mut_1",
      },
      { ...env(), type: "tool_completed", tool_name: "t", tool_call_id: "c1", approval_id: "a1", approved: true, duration_ms: 5 },
      { ...env(), type: "run_completed", text: "done", tool_calls: 1 },
    ];
    for (const e of events) {
      view = applyEvent(view, e);
      if (view.cards[0]) stages.push(view.cards[0].stage);
    }
    expect(stages).toEqual(["announced", "waiting_for_approval", "approved", "approved", "executed", "executed", "executed"]);
    expect(view.cards[0]).toMatchObject({ mutation_id: "mut_1", completed: true, decision: { decided_by: "console:a" } });
    expect(view.cards[0]!.approval?.level).toBe("confirm");
    expect(view).toMatchObject({ status: "completed", final_text: "done", last_sequence: 8 });
  });

  it("shows a denied call as not executed with its reason, and a question as waiting then answered", () => {
    seq = 0;
    const view = fold([
      { ...env(), type: "tool_started", tool_name: "t", tool_call_id: "c1", approval_required: true },
      { ...env(), type: "approval_resolved", tool_name: "t", tool_call_id: "c1", approval_id: "a1", decision: "denied" },
      { ...env(), type: "tool_execution", tool_name: "t", tool_call_id: "c1", execution_status: "not_executed", reason: "denied" },
      { ...env(), type: "tool_started", tool_name: "human__ask", tool_call_id: "q1", approval_required: false },
      { ...env(), type: "human_input_requested", tool_call_id: "q1", question: "Which?", expires_at: "2026-11-29T10:05:00.000Z" },
    ]);
    expect(view.cards.map((c) => [c.stage, c.reason])).toEqual([
      ["not_executed", "denied"],
      ["waiting_for_answer", undefined],
    ]);
    const answered = applyEvent(view, { ...env(), type: "human_input_received", tool_call_id: "q1", answered_by: "console:b" });
    expect(answered.cards[1]).toMatchObject({ stage: "answered", answered_by: "console:b" });
  });

  it("keeps an MCP server's questions mid-call by input_id with their schema, waiting until each is answered (contract section 21)", () => {
    seq = 0;
    const schema = { type: "object", properties: { name: { type: "string" } }, required: ["name"] };
    const asked = (key: string) =>
      ({
        ...env(),
        type: "human_input_requested",
        tool_call_id: "c1",
        input_id: `c1:1:${key}`,
        question: `Your ${key}?`,
        requested_schema: schema,
        expires_at: "2026-11-29T10:05:00.000Z",
      }) as EngineEvent;
    const received = (key: string, action: string) =>
      ({
        ...env(),
        type: "human_input_received",
        tool_call_id: "c1",
        input_id: `c1:1:${key}`,
        answered_by: "console:b",
        action,
      }) as EngineEvent;
    let view = fold([
      { ...env(), type: "tool_started", tool_name: "mcp__demo__ask", tool_call_id: "c1", approval_required: false },
      asked("name"),
      asked("team"),
    ]);
    expect(view.cards[0]?.stage).toBe("waiting_for_answer");
    expect(view.cards[0]?.form_questions?.map((q) => [q.input_id, q.question, q.requested_schema])).toEqual([
      ["c1:1:name", "Your name?", schema],
      ["c1:1:team", "Your team?", schema],
    ]);
    expect(view.cards[0]?.question).toBeUndefined();
    view = applyEvent(view, received("name", "accept"));
    expect(view.cards[0]?.stage).toBe("waiting_for_answer");
    expect(view.cards[0]?.form_questions?.[0]).toMatchObject({ answered_by: "console:b", action: "accept" });
    view = applyEvent(view, received("team", "decline"));
    expect(view.cards[0]?.stage).toBe("answered");
    expect(view.cards[0]?.form_questions?.map((q) => q.action)).toEqual(["accept", "decline"]);
  });

  it("marks a pending approval destructive only for an explicit destructiveHint: true", () => {
    const requested = (id: string, annotations?: { destructiveHint?: boolean; readOnlyHint?: boolean }): EngineEvent[] => [
      { ...env(), type: "tool_started", tool_name: "t", tool_call_id: id, approval_required: true },
      {
        ...env(),
        type: "approval_requested",
        required: 1,
        approvers: null,
        tool_name: "t",
        tool_call_id: id,
        approval_id: `a-${id}`,
        level: "confirm",
        description: "d",
        arguments: {},
        hidden: [],
        expires_at: "2026-11-29T10:05:00.000Z",
        ...(annotations ? { annotations } : {}),
      },
    ];
    seq = 0;
    const view = fold([...requested("c1", { destructiveHint: true }), ...requested("c2", { destructiveHint: false }), ...requested("c3")]);
    expect(view.cards.map((c) => c.approval?.destructive === true)).toEqual([true, false, false]);
  });

  it("ignores an event it has already folded (a replay after a resume)", () => {
    seq = 0;
    const first = { ...env(), type: "assistant_message" as const, text: "hi" };
    const view = fold([first, first]);
    expect(view.messages).toHaveLength(1);
  });

  it("orders the timeline by event: messages and calls interleaved, the final answer once, a cancelled run as cancelled", () => {
    seq = 0;
    const view = fold([
      { ...env(), type: "run_started", user_id: "u" },
      { ...env(), type: "assistant_message", text: "Looking." },
      { ...env(), type: "tool_started", tool_name: "t", tool_call_id: "c1", approval_required: false },
      { ...env(), type: "assistant_message", text: "Done." },
      { ...env(), type: "tool_completed", tool_name: "t", tool_call_id: "c1", approved: true, duration_ms: 3 },
      { ...env(), type: "run_completed", text: "Done.", tool_calls: 1 },
    ]);
    expect(view.timeline).toEqual([
      { kind: "message", sequence: 2, text: "Looking.", final: false },
      { kind: "call", sequence: 3, tool_call_id: "c1" },
      { kind: "message", sequence: 4, text: "Done.", final: true },
    ]);
    seq = 0;
    const other = fold([
      { ...env(), type: "assistant_message", text: "Thinking." },
      { ...env(), type: "run_completed", text: "The answer.", tool_calls: 0 },
    ]);
    expect(other.timeline.map((e) => e.kind === "message" && [e.text, e.final])).toEqual([
      ["Thinking.", false],
      ["The answer.", true],
    ]);
    seq = 0;
    expect(fold([{ ...env(), type: "run_failed", error: { code: "cancelled", message: "The run was cancelled." } }]).status).toBe(
      "cancelled",
    );
    seq = 0;
    expect(fold([{ ...env(), type: "run_failed", error: { code: "model_error", message: "x" } }]).status).toBe("failed");
  });

  it("names the requester from run_started: requested_by and on_behalf_of where sent, else user_id", () => {
    seq = 0;
    expect(fold([{ ...env(), type: "run_started", user_id: "U1" }]).requester).toEqual({ by: "U1" });
    seq = 0;
    const principal = {
      ...env(),
      type: "run_started",
      user_id: "U1",
      requested_by: "token:svc",
      on_behalf_of: "access:ada@x",
    } as EngineEvent;
    expect(fold([principal]).requester).toEqual({ by: "token:svc", on_behalf_of: "access:ada@x" });
  });

  it("keeps a deny's reason when the server sends one, and none when it does not", () => {
    seq = 0;
    const started = { ...env(), type: "tool_started" as const, tool_name: "t", tool_call_id: "c1", approval_required: true };
    const resolved = {
      ...env(),
      type: "approval_resolved" as const,
      tool_name: "t",
      tool_call_id: "c1",
      approval_id: "a1",
      decision: "denied" as const,
    };
    expect(fold([started, { ...resolved, reason: "not today" } as EngineEvent]).cards[0]!.decision).toMatchObject({ reason: "not today" });
    seq = 0;
    expect(
      fold([
        { ...started, sequence: ++seq },
        { ...resolved, sequence: ++seq },
      ]).cards[0]!.decision?.reason,
    ).toBeUndefined();
  });

  it("counts the time left down to expired", () => {
    const now = Date.parse("2026-11-29T10:00:00.000Z");
    expect(formatTimeLeft(secondsLeft("2026-11-29T10:04:05.000Z", now))).toBe("4m 05s");
    expect(formatTimeLeft(secondsLeft("2026-11-29T10:00:12.000Z", now))).toBe("12s");
    expect(formatTimeLeft(secondsLeft("2026-11-29T09:59:00.000Z", now))).toBe("expired");
  });
});

describe("votes (contract section 19)", () => {
  it("keeps required and approvers from approval_requested and adds each approval_vote in order", () => {
    const ids = { tool_name: "t", tool_call_id: "c9", approval_id: "a9" };
    const view = fold([
      { ...env(), type: "tool_started", tool_name: "t", tool_call_id: "c9", approval_required: true },
      {
        ...env(),
        type: "approval_requested",
        ...ids,
        level: "approve",
        description: "d",
        arguments: {},
        hidden: [],
        expires_at: "2026-11-29T10:05:00.000Z",
        required: 3,
        approvers: ["group:sre"],
      },
      { ...env(), type: "approval_vote", ...ids, decided_by: "token:ann", votes: 1, required: 3 },
      { ...env(), type: "approval_vote", ...ids, decided_by: "access:bob@example.com", votes: 2, required: 3 },
    ]);
    expect(view.cards[0]?.approval).toMatchObject({
      required: 3,
      approvers: ["group:sre"],
      votes: [
        { by: "token:ann", at: "2026-11-29T10:00:00.000Z" },
        { by: "access:bob@example.com", at: "2026-11-29T10:00:00.000Z" },
      ],
    });
    expect(view.cards[0]?.stage).toBe("waiting_for_approval");
  });
});
