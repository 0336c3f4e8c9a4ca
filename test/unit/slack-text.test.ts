// The one Slack text escaper (contract section 20): cut before escaping,
// fences broken, `&<>` escaped; and every string the app posts, block or
// fallback `text`, of every kind of message (each event's posts and
// updates, the modals, the ephemeral replies), is built through it: given
// the mrkdwn control sequences in every field a model, tool or caller
// writes, no output string carries one.
import { describe, expect, it } from "vitest";
import type { Verdict } from "../../src/execution/tool-calls";
import { answerInputModal, confirmApprovalModal, inputAnswered, renderPerson } from "../../src/slack/blocks";
import { emptyMemory, type PostsMemory, postsForEvent as postsOf } from "../../src/slack/event-posts";
import { runEventFromJson } from "../runtime/run-events";
import { decisionReplyText, policyRefusalText, refusalText } from "../../src/slack/interactions";
import { CUT_NOTE, mention, mrkdwn, untrusted, untrustedCode } from "../../src/slack/slack-text";

/** The posts of one event, written as its JSON. */
const postsForEvent = (json: string, memory: Parameters<typeof postsOf>[1]) => postsOf(runEventFromJson(json), memory);

/** The control sequences of issue 17's finding 5, and a fence that would close the app's code block. */
const HOSTILE = "<!channel> <!here> <@U0CEO0001> <https://evil.example/login|Click to re-authenticate> ``` & done";
const RAW_SEQUENCES = ["<!channel>", "<!here>", "<@U0CEO0001>", "<https://evil.example", "|Click to re-authenticate>", "```\u0020&"];

/** Fields Slack never renders as text: ids and values the app reads back. */
const NOT_SHOWN = new Set(["block_id", "action_id", "value", "private_metadata", "callback_id"]);

/**
 * Every string Slack renders as mrkdwn or shows as fallback: all strings but the ids and values it
 * never shows and `plain_text` objects (shown as written: no mention, link or markup in them works).
 */
function stringsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, out);
  else if (value !== null && typeof value === "object") {
    if ((value as { type?: unknown }).type === "plain_text") return out;
    for (const [k, v] of Object.entries(value)) if (!NOT_SHOWN.has(k)) stringsOf(v, out);
  }
  return out;
}

function expectEscaped(what: string, rendered: unknown): void {
  const strings = stringsOf(rendered);
  expect(strings.length, what).toBeGreaterThan(0);
  for (const s of strings) for (const raw of RAW_SEQUENCES) expect(s, `${what}: ${s.slice(0, 200)}`).not.toContain(raw);
}

describe("untrusted", () => {
  it("escapes &, < and > and shows control sequences as characters", () => {
    expect(untrusted("<!here> & <@U1>", 100)).toBe("&lt;!here&gt; &amp; &lt;@U1&gt;");
  });

  it("breaks code fences so they cannot close the app's code block", () => {
    const out = untrusted("a ``` b ```` c", 100);
    expect(out).not.toContain("```");
    expect(out.replace(/\u200b/g, "")).toBe("a ``` b ```` c");
  });

  it("cuts before escaping: the result fits, ends with the note, and never ends inside an escape", () => {
    const out = untrusted("<".repeat(100), 50);
    expect(out.length).toBeLessThanOrEqual(50);
    expect(out.endsWith(CUT_NOTE)).toBe(true);
    expect(out.slice(0, -CUT_NOTE.length)).toMatch(/^(&lt;)+$/);
    expect(untrusted("x".repeat(50), 50)).toBe("x".repeat(50));
  });

  it("inline code: backticks cannot end the span", () => {
    expect(untrustedCode("a`b<c>", 50)).toBe("a'b&lt;c&gt;");
  });

  it("mentions only a Slack user id; the template escapes nothing it did not get escaped", () => {
    expect(mention("U0CEO0001")).toBe("<@U0CEO0001>");
    expect(mention("<!channel>")).toBe("&lt;!channel&gt;");
    expect(mrkdwn`by ${untrusted("<x>", 10)}`).toBe("by &lt;x&gt;");
  });
});

const at = "2026-11-29T10:05:00.000Z";
/** One event of every type that posts, each hostile text field given HOSTILE. */
const events: Record<string, unknown>[] = [
  { type: "run_started", user_id: HOSTILE },
  { type: "assistant_message", text: HOSTILE },
  { type: "tool_started", tool_call_id: "c1", approval_required: false },
  {
    type: "approval_requested",
    tool_call_id: "c2",
    tool_name: HOSTILE,
    approval_id: HOSTILE,
    level: "confirm",
    arguments: { title: HOSTILE, [HOSTILE]: "x", list: [HOSTILE] },
    expires_at: at,
  },
  { type: "approval_resolved", tool_name: HOSTILE, tool_call_id: "c2", approval_id: HOSTILE, decision: "denied", decided_by: HOSTILE },
  {
    type: "approval_resolved",
    tool_name: HOSTILE,
    tool_call_id: "c2",
    approval_id: HOSTILE,
    decision: "approved",
    decided_by: `slack:${HOSTILE}`,
  },
  { type: "human_input_requested", tool_call_id: "q1", question: HOSTILE, expires_at: at },
  { type: "human_input_received", tool_call_id: "q1", answered_by: HOSTILE },
  { type: "tool_execution", tool_name: HOSTILE, tool_call_id: "c1", execution_status: "not_executed", reason: HOSTILE },
  {
    type: "tool_execution",
    tool_name: HOSTILE,
    tool_call_id: "c1",
    execution_status: "executed",
    error: { code: HOSTILE },
    mutation_id: HOSTILE,
  },
  {
    type: "tool_execution",
    tool_name: HOSTILE,
    tool_call_id: "c1",
    execution_status: "executed",
    error: { code: "transport_timeout" },
    mutation_id: HOSTILE,
  },
  { type: "tool_execution", tool_name: HOSTILE, tool_call_id: "c1", execution_status: "executed", mutation_id: HOSTILE },
  { type: "run_completed", text: `final ${HOSTILE}`, tool_calls: 1 },
  { type: "run_failed", error: { code: HOSTILE, message: HOSTILE } },
];

describe("every string the app posts is built through the escaper", () => {
  it("each event's posts and updates, fallback text and blocks", () => {
    let memory: PostsMemory = emptyMemory();
    let posted = 0;
    events.forEach((event, i) => {
      const result = postsForEvent(JSON.stringify({ run_id: "run_1", sequence: i + 1, ...event }), memory);
      memory = result.memory;
      for (const item of result.items) {
        if (item.kind === "reaction") continue;
        posted++;
        expectEscaped(`${event.type} ${item.kind}`, item.message);
      }
    });
    // Every kind of message was rendered: assistant, approval, its update, question, its update, 4 outcomes, final, failure.
    expect(posted).toBeGreaterThanOrEqual(11);
  });

  it("the modals, the ephemeral replies and the names of people", () => {
    expectEscaped("confirm modal", confirmApprovalModal(HOSTILE, "{}").blocks);
    expectEscaped("answer modal", answerInputModal(HOSTILE, "{}").blocks);
    expectEscaped("answered", inputAnswered(HOSTILE, HOSTILE));
    expectEscaped("person", renderPerson(HOSTILE));
    expectEscaped("refusal", refusalText({ users: [HOSTILE, HOSTILE], elsewhere: true }));
    expectEscaped("policy refusal", policyRefusalText("not_an_approver", { users: [HOSTILE], elsewhere: false }));
    const verdicts: Verdict[] = [
      { kind: "already_resolved", decision: HOSTILE } as unknown as Verdict,
      { kind: "confirmation_mismatch", tool_name: HOSTILE } as unknown as Verdict,
    ];
    for (const verdict of verdicts) expectEscaped(verdict.kind, decisionReplyText(verdict));
  });
});
