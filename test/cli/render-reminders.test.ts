// What the CLI prints of contract section 24's reminders and escalations (cli/render.ts):
// the approval (or the MCP question, by input_id), when it expires, the approvers in force and
// who it was escalated to.
import { describe, expect, it } from "vitest";
import { eventLine } from "../../cli/render";

const envelope = { protocol_version: "v2" as const, run_id: "run-1", channel_id: "C1", at: "2026-12-01T10:00:01.250Z" };
const ids = { tool_name: "mcp__demo__delete_dashboard", tool_call_id: "c1" };

describe("the CLI's lines for reminders and escalations", () => {
  it("prints a reminder with its approval or question and when it expires", () => {
    expect(
      eventLine({ ...envelope, ...ids, sequence: 4, type: "approval_reminded", approval_id: "a1", expires_at: "2026-12-01T10:05:00.000Z" }),
    ).toMatch(
      /^#4\s+10:00:01\.250Z approval_reminded\s+mcp__demo__delete_dashboard call=c1 approval=a1 expires=2026-12-01T10:05:00\.000Z$/,
    );
    expect(
      eventLine({
        ...envelope,
        ...ids,
        sequence: 5,
        type: "approval_reminded",
        input_id: "c1:1:k",
        expires_at: "2026-12-01T10:05:00.000Z",
      }),
    ).toContain("call=c1 input=c1:1:k expires=");
  });

  it("prints an escalation with the approvers in force (default for the default rule) and who it went to", () => {
    const escalated = { ...envelope, ...ids, sequence: 6, type: "approval_escalated" as const, approval_id: "a1" };
    expect(eventLine({ ...escalated, approvers: ["slack:T1:U1"], escalated_to: ["group:oncall", "slack:T1:U3"] })).toMatch(
      / approval=a1 approvers=slack:T1:U1 escalated_to=group:oncall,slack:T1:U3$/,
    );
    expect(eventLine({ ...escalated, approvers: null, escalated_to: [] })).toMatch(/ approvers=default escalated_to=$/);
  });
});
