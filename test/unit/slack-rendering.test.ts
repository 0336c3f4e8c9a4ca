// Pure Slack modules: Block Kit rendering, the event-to-post mapping, which
// events start runs, and the click rules. Plain data in, data out.
import { describe, expect, it } from "vitest";
import {
  ARGUMENTS_SHOWN_MAX_CHARS,
  approvalRequest,
  approvalResolved,
  argumentsPreview,
  mutationOutcomeUnknown,
  runFailed,
  SECTION_TEXT_MAX_CHARS,
} from "../../src/slack/blocks";
import { intakeEvent, scriptFromText, stripOwnMention } from "../../src/slack/event-intake";
import { emptyMemory, type PostsMemory, postsForEvent as postsOf } from "../../src/slack/event-posts";
import { runEventFromJson } from "../runtime/run-events";
import {
  answerDeciders,
  approvalDeciders,
  decisionReplyText,
  parseApprovalValue,
  policyRefusalText,
  refusalText,
} from "../../src/slack/interactions";
import { mayAnswerAsk } from "../../src/policy/approval-policy";

/** The posts of one event, written as its JSON. */
const postsForEvent = (json: string, memory: Parameters<typeof postsOf>[1]) => postsOf(runEventFromJson(json), memory);

const view = {
  run_id: "run_1",
  approval_id: "approval_1",
  tool_name: "mcp__demo__create_dashboard",
  level: "confirm" as const,
  ...argumentsPreview({ title: "t", password: "hunter2" }),
  expires_at: "2026-11-29T10:05:00.000Z",
};

const buttonsOf = (message: { blocks?: unknown[] }) =>
  (message.blocks as { type: string; elements?: { action_id?: string; url?: string }[] }[])
    .filter((b) => b.type === "actions")
    .flatMap((b) => b.elements ?? []);

describe("Block Kit", () => {
  it("an approval request shows tool, level, redacted arguments, expiry, and the two buttons whose value reads back", () => {
    const message = approvalRequest(view);
    const json = JSON.stringify(message);
    expect(json).toContain("mcp__demo__create_dashboard");
    expect(json).toContain("confirm");
    expect(json).not.toContain("hunter2");
    expect(json).toContain("[redacted]");
    expect(json).toContain("<!date^");
    const actions = message.blocks?.find((b) => b.type === "actions");
    expect(actions?.type === "actions" && actions.elements.map((e) => [e.action_id, "style" in e ? e.style : undefined])).toEqual([
      ["approval_approve", "primary"],
      ["approval_deny", "danger"],
    ]);
    const button = actions?.type === "actions" ? actions.elements[0] : undefined;
    expect(parseApprovalValue(button && "value" in button ? button.value : undefined)).toEqual({
      run_id: "run_1",
      approval_id: "approval_1",
      level: "confirm",
    });
  });

  it("arguments past 2,500 characters are cut there: the message says how many it leaves out and offers Deny and the console, no Approve", () => {
    const args = { blob: "x".repeat(50_000) };
    const json = JSON.stringify(args, null, 2);
    const preview = argumentsPreview(args);
    expect(preview.arguments_preview).toBe(json.slice(0, ARGUMENTS_SHOWN_MAX_CHARS));
    expect(preview.arguments_omitted_chars).toBe(json.length - ARGUMENTS_SHOWN_MAX_CHARS);
    const url = "https://aee.example/console#/runs/run_1/approvals/approval_1";
    const message = approvalRequest({ ...view, ...preview, console_url: url });
    for (const block of message.blocks ?? []) {
      if (block.type === "section") expect(block.text?.text.length).toBeLessThanOrEqual(SECTION_TEXT_MAX_CHARS);
    }
    expect(JSON.stringify(message)).toContain(`${json.length - ARGUMENTS_SHOWN_MAX_CHARS} characters of the arguments are not shown`);
    expect(buttonsOf(message).map((b) => b.action_id)).toEqual(["approval_deny", "approval_open_console"]);
    expect(buttonsOf(message)[1]?.url).toBe(url);
  });

  it("arguments of exactly 2,500 characters are shown whole, with Approve; escaping never cuts them", () => {
    const blob = "<&>".repeat(1_000);
    const args = { blob: blob.slice(0, ARGUMENTS_SHOWN_MAX_CHARS - JSON.stringify({ blob: "" }, null, 2).length) };
    const preview = argumentsPreview(args);
    expect(JSON.stringify(args, null, 2).length).toBe(ARGUMENTS_SHOWN_MAX_CHARS);
    expect(preview.arguments_omitted_chars).toBe(0);
    const message = approvalRequest({ ...view, ...preview });
    const text = JSON.stringify(message);
    expect(text).not.toContain("(truncated)");
    expect(text).not.toContain("not shown");
    for (const block of message.blocks ?? []) {
      if (block.type === "section") expect(block.text?.text.length).toBeLessThanOrEqual(SECTION_TEXT_MAX_CHARS);
    }
    const shown = (message.blocks ?? [])
      .flatMap((b) => (b.type === "section" && b.text?.text.startsWith("```") ? [b.text.text.slice(3, -3)] : []))
      .join("");
    expect(shown.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&")).toBe(JSON.stringify(args, null, 2));
    expect(buttonsOf(message).map((b) => b.action_id)).toEqual(["approval_approve", "approval_deny"]);
  });

  it("lists every withheld path with its length, escaped, and counts those past the first ten", () => {
    const hidden = [
      { path: "/db/password", chars: 14 },
      { path: "/<@U1>", chars: 3 },
      ...Array.from({ length: 10 }, (_, i) => ({ path: `/k${i}`, chars: 2 })),
    ];
    const text = JSON.stringify(approvalRequest({ ...view, hidden }));
    expect(text).toContain("`/db/password` (14 characters)");
    expect(text).toContain("`/&lt;@U1&gt;` (3 characters)");
    expect(text).toContain("and 2 more");
    expect(JSON.stringify(approvalResolved({ ...view, hidden }, "denied", "slack:U1"))).toContain("/db/password");
  });

  it("the decided form has no buttons and says who decided, or that it expired or was cancelled", () => {
    for (const [decision, by, expected] of [
      ["approved", "slack:U0AAA", "Approved by <@U0AAA>"],
      ["denied", "ops-bot", "Denied by `ops-bot`"],
      ["expired", undefined, "Expired"],
      ["cancelled", undefined, "Cancelled"],
    ] as const) {
      const message = approvalResolved(view, decision, by);
      expect(message.blocks?.some((b) => b.type === "actions")).toBe(false);
      expect(JSON.stringify(message)).toContain(expected);
    }
  });

  it("the decided form carries the decider's reason, escaped, and none when there is none", () => {
    const denied = JSON.stringify(approvalResolved(view, "denied", "ops-bot", "not <now> & not here"));
    expect(denied).toContain("*Reason:* not &lt;now&gt; &amp; not here");
    expect(JSON.stringify(approvalResolved(view, "denied", "ops-bot"))).not.toContain("Reason");
  });

  it("outcome_unknown is spelled out with its mutation_id and reconciliation; run_failed names its code", () => {
    const unknown = JSON.stringify(mutationOutcomeUnknown("mcp__demo__create_dashboard", "mut_123", "transport_timeout"));
    expect(unknown).toContain("may or may not have happened");
    expect(unknown).toContain("mut_123");
    expect(unknown).toContain("needs reconciliation");
    expect(JSON.stringify(runFailed("model_error", "upstream 500"))).toContain("model_error");
  });
});

describe("event → posts", () => {
  const play = (events: Record<string, unknown>[]) => {
    let memory: PostsMemory = emptyMemory();
    const out = [];
    for (const [i, e] of events.entries()) {
      const result = postsForEvent(JSON.stringify({ run_id: "run_1", sequence: i + 1, ...e }), memory);
      memory = result.memory;
      out.push(...result.items);
    }
    return out;
  };

  it("maps a run to a reaction, texts, the approval post and its update, the ending, and skips the final text already posted", () => {
    const items = play([
      { type: "run_started", user_id: "U1" },
      { type: "assistant_message", text: "working on it" },
      { type: "tool_started", tool_call_id: "c1", approval_required: true },
      {
        type: "approval_requested",
        tool_name: "mcp__demo__x",
        tool_call_id: "c1",
        approval_id: "a1",
        level: "approve",
        arguments: {},
        expires_at: "2026-01-01T00:00:00Z",
      },
      { type: "heartbeat" },
      {
        type: "approval_resolved",
        tool_name: "mcp__demo__x",
        tool_call_id: "c1",
        approval_id: "a1",
        decision: "approved",
        decided_by: "slack:U2",
      },
      { type: "tool_execution_started", tool_name: "mcp__demo__x", tool_call_id: "c1", approval_id: "a1" },
      {
        type: "tool_execution",
        tool_name: "mcp__demo__x",
        tool_call_id: "c1",
        execution_status: "executed",
        error: { code: "transport_timeout" },
        mutation_id: "mut_9",
      },
      { type: "tool_completed", tool_name: "mcp__demo__x", tool_call_id: "c1", approved: true, duration_ms: 5 },
      { type: "assistant_message", text: "done" },
      { type: "run_completed", text: "done", tool_calls: 1 },
    ]);
    expect(
      items.map((i) =>
        i.kind === "post"
          ? `post${i.key ? `:${i.key}` : ""}`
          : i.kind === "update"
            ? `update:${i.ref}`
            : i.kind === "reaction"
              ? `reaction:${i.name}`
              : `direct:${i.user}`,
      ),
    ).toEqual(["reaction:eyes", "post", "post:approval:a1", "update:approval:a1", "post", "post", "reaction:white_check_mark"]);
    expect(JSON.stringify(items[4])).toContain("mut_9");
  });

  it('marks a tool its server calls destructive (destructiveHint: true) "Destructive", before and after the decision; no other', () => {
    const requested = (annotations?: Record<string, unknown>) => ({
      type: "approval_requested",
      tool_name: "mcp__demo__delete_dashboard",
      tool_call_id: "c1",
      approval_id: "a1",
      level: "confirm",
      arguments: {},
      expires_at: "2026-01-01T00:00:00Z",
      ...(annotations ? { annotations } : {}),
    });
    const resolved = {
      type: "approval_resolved",
      tool_name: "mcp__demo__delete_dashboard",
      tool_call_id: "c1",
      approval_id: "a1",
      decision: "denied",
    };
    const [post, update] = play([requested({ destructiveHint: true, title: "Delete <!channel>" }), resolved]);
    const header = (item: typeof post) => {
      const message = item && "message" in item ? item.message : undefined;
      const first = message?.blocks?.[0];
      return first?.type === "section" ? first.text?.text : undefined;
    };
    expect(header(post)).toBe(
      ":warning: *Destructive* · *`mcp__demo__delete_dashboard`* needs your approval with confirmation (type the tool name).",
    );
    expect(header(update)).toMatch(/^:warning: \*Destructive\* · /);
    // The server's title is not shown, so its text cannot reach Slack unescaped.
    expect(JSON.stringify(post)).not.toContain("<!channel>");
    for (const annotations of [undefined, { destructiveHint: false }, { readOnlyHint: false }]) {
      const [plain, plainUpdate] = play([requested(annotations), resolved]);
      expect(JSON.stringify(plain)).not.toContain("Destructive");
      expect(JSON.stringify(plainUpdate)).not.toContain("Destructive");
    }
  });

  it("a call that ended not_executed after approval names its reason; a denied one is told by the approval update only", () => {
    const approvedThenExpired = play([
      { type: "approval_resolved", tool_name: "t", tool_call_id: "c1", approval_id: "a1", decision: "approved", decided_by: "slack:U2" },
      { type: "tool_execution", tool_name: "t", tool_call_id: "c1", execution_status: "not_executed", reason: "budget_exhausted" },
    ]);
    expect(JSON.stringify(approvedThenExpired)).toContain("budget_exhausted");
    // Contract section 23: a tool that changed after its approval is named as such in the thread.
    const changed = play([
      { type: "approval_resolved", tool_name: "t", tool_call_id: "c1", approval_id: "a1", decision: "approved", decided_by: "slack:U2" },
      {
        type: "tool_execution",
        tool_name: "t",
        tool_call_id: "c1",
        execution_status: "not_executed",
        reason: "tool_changed",
        tool_digest: null,
        mutation_id: "m",
      },
    ]);
    expect(JSON.stringify(changed)).toContain("the tool's schema changed after it was approved");
    const denied = play([
      { type: "approval_resolved", tool_name: "t", tool_call_id: "c1", approval_id: "a1", decision: "denied", decided_by: "slack:U2" },
      { type: "tool_execution", tool_name: "t", tool_call_id: "c1", execution_status: "not_executed", reason: "denied" },
    ]);
    expect(denied).toEqual([]);
    const failed = play([
      { type: "tool_started", tool_call_id: "c2", approval_required: false },
      {
        type: "tool_execution",
        tool_name: "t",
        tool_call_id: "c2",
        execution_status: "executed",
        error: { code: "tool_error" },
        mutation_id: "m",
      },
    ]);
    expect(JSON.stringify(failed)).toContain("tool_error");
  });

  it("a human__ask question is posted with its input_answer button and updated in place to say who answered", () => {
    const items = play([
      { type: "tool_started", tool_name: "human__ask", tool_call_id: "q1", approval_required: false },
      { type: "human_input_requested", tool_call_id: "q1", question: "Which channel?", expires_at: "2026-01-01T00:00:00Z" },
      { type: "human_input_received", tool_call_id: "q1", answered_by: "slack:U7" },
    ]);
    expect(items.map((i) => i.kind)).toEqual(["post", "update"]);
    const [asked, answered] = items;
    if (asked?.kind !== "post" || answered?.kind !== "update") throw new Error("expected a post, then its update");
    expect(JSON.stringify(asked)).toContain("Which channel?");
    expect(JSON.stringify(asked)).toContain('"action_id":"input_answer"');
    expect(answered.ref).toBe(asked.key);
    expect(JSON.stringify(answered)).toContain("<@U7>");
    expect(JSON.stringify(answered)).not.toContain("input_answer");
  });
});

describe("which events start runs", () => {
  const ctx = { event_id: "Ev1", bot_user_id: "UBOT", scripted: true };
  it("a mention starts a run in its thread with the app's mention removed", () => {
    const intake = intakeEvent(
      { type: "app_mention", user: "U1", channel: "C1", text: "<@UBOT> hi <@U2>", ts: "2.0", thread_ts: "1.0" },
      ctx,
    );
    expect(intake).toEqual({
      kind: "start",
      input: expect.objectContaining({
        message: "hi <@U2>",
        channel_id: "C1",
        user_id: "U1",
        delivery_id: "Ev1",
        source: "slack",
        slack: { thread_ts: "1.0", message_ts: "2.0" },
      }),
    });
    expect(stripOwnMention("<@UBOT|bot> go", "UBOT")).toBe("go");
  });

  it("starts nothing for a DM mention, subtypes, bots, itself, or channel chatter", () => {
    for (const event of [
      { type: "app_mention", user: "U1", channel: "D1", text: "<@UBOT> x", ts: "1" },
      { type: "message", subtype: "message_changed", channel: "D1", channel_type: "im", ts: "1" },
      { type: "message", bot_id: "B1", user: "U9", channel: "D1", channel_type: "im", text: "x", ts: "1" },
      { type: "message", user: "UBOT", channel: "D1", channel_type: "im", text: "x", ts: "1" },
      { type: "message", user: "U1", channel: "C1", channel_type: "channel", text: "x", ts: "1" },
    ]) {
      expect(intakeEvent(event, ctx).kind).toBe("ignore");
    }
  });

  it("plays a fenced ```json script only with the scripted provider, and only with known tool names", () => {
    const text = 'go\n```json\n{"script":[{"text":"hi"}]}\n```';
    expect(scriptFromText(text)).toEqual([{ text: "hi" }]);
    expect(scriptFromText('```json\n{"script":[{"tool_calls":[{"tool_name":"rm -rf"}]}]}\n```')).toBeNull();
    expect(scriptFromText("no fence")).toBeNull();
    const start = intakeEvent({ type: "app_mention", user: "U1", channel: "C1", text, ts: "1" }, { ...ctx, scripted: false });
    expect(start.kind === "start" && start.input.script).toBeNull();
  });
});

describe("click rules", () => {
  it("the requester and SLACK_APPROVERS may decide; the refusal names them", () => {
    expect(mayAnswerAsk("slack:T1:U1", "slack:T1:U1", [])).toBe(true);
    expect(mayAnswerAsk("slack:T1:U2", "slack:T1:U1", ["slack:T1:U2"])).toBe(true);
    expect(mayAnswerAsk("slack:T1:U3", "slack:T1:U1", ["slack:T1:U2"])).toBe(false);
    expect(mayAnswerAsk("slack:T1:U3", undefined, [])).toBe(false);
    expect(refusalText(answerDeciders("U1", ["U2"]))).toContain("Who may: <@U1>, <@U2> or an approver in the console.");
    expect(refusalText(answerDeciders(undefined, []))).toContain("Who may: an approver in the console.");
  });

  it("every refusal names who may decide the same way: Slack users by exact id, then anyone else as an approver in the console", () => {
    const policy = (approvers: string[] | null, self_approval = true) => ({ approvers, approvals_required: 1, self_approval });
    const groups = { leads: ["slack:T1:U0LEAD", "access:*@acme.com"], slackOnly: ["slack:T1:U0ONE", "slack:U0TWO"] };
    const who = (d: ReturnType<typeof approvalDeciders>) => String(policyRefusalText("not_an_approver", d));
    // The default rule: the requester and SLACK_APPROVERS, and the approver role in the console.
    expect(who(approvalDeciders(policy(null), groups, "U0REQ", ["U0LISTED"]))).toContain(
      "Who may: <@U0REQ>, <@U0LISTED> or an approver in the console.",
    );
    expect(who(approvalDeciders(policy(null), groups, "U0REQ", []))).toContain("Who may: <@U0REQ> or an approver in the console.");
    // Self-approval forbidden: the requester is never named, under either rule.
    expect(who(approvalDeciders(policy(null, false), groups, "U0REQ", []))).toContain("Who may: an approver in the console.");
    expect(who(approvalDeciders(policy(["slack:T1:U0REQ", "group:slackOnly"], false), groups, "U0REQ", []))).toContain(
      "Who may: <@U0ONE>, <@U0TWO>.",
    );
    // approvers: exact Slack ids by name; a pattern or a principal outside Slack as an approver in the console.
    expect(who(approvalDeciders(policy(["group:leads"]), groups, "U0REQ", ["U0LISTED"]))).toContain(
      "Who may: <@U0LEAD> or an approver in the console.",
    );
    expect(who(approvalDeciders(policy(["slack:T1:*"]), groups, "U0REQ", []))).toContain("Who may: an approver in the console.");
    expect(who(approvalDeciders(policy(["group:slackOnly"]), groups, "U0REQ", []))).toContain("Who may: <@U0ONE>, <@U0TWO>. Nothing");
    expect(String(policyRefusalText("self_approval_forbidden", approvalDeciders(policy(null, false), groups, "U0REQ", ["U0L"])))).toContain(
      "another person must approve it (<@U0L> or an approver in the console)",
    );
  });

  it("stale answers are told; a taken decision is silent", () => {
    expect(decisionReplyText({ kind: "resolved", approval_id: "a-1", decision: "approved" })).toBeNull();
    expect(decisionReplyText({ kind: "already_resolved", decision: "denied", what: "approval" })).toContain("already decided (denied)");
    expect(decisionReplyText({ kind: "expired" })).toContain("expired");
    expect(decisionReplyText({ kind: "not_found", what: "approval", id: "a-1" })).toContain("already decided, expired or cancelled");
  });
});
