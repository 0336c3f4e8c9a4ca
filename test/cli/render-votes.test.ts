// What the CLI prints of section 19 (cli/render.ts): required and approvers on
// approval_requested, each approval_vote, and the votes of a listed approval;
// the paths withheld from the arguments on both.
import { describe, expect, it } from "vitest";
import { approvalLine, eventLine } from "../../cli/render";

const envelope = { protocol_version: "v2" as const, run_id: "run-1", channel_id: "C1", at: "2026-12-01T10:00:01.250Z" };
const ids = { tool_name: "mcp__demo__delete_dashboard", tool_call_id: "c1", approval_id: "a1" };

describe("the CLI's lines for votes", () => {
  it("prints required and approvers when the policy asks for more than the default, and each vote", () => {
    const asked = {
      ...envelope,
      ...ids,
      sequence: 3,
      type: "approval_requested" as const,
      level: "approve" as const,
      description: "d",
      arguments: {},
      hidden: [],
      expires_at: "2026-12-01T10:05:00.000Z",
    };
    expect(eventLine({ ...asked, required: 1, approvers: null })).not.toMatch(/required=|approvers=/);
    expect(eventLine({ ...asked, required: 2, approvers: ["group:sre", "token:ops-*"] })).toContain(
      "required=2 approvers=group:sre,token:ops-*",
    );
    expect(eventLine({ ...asked, required: 1, approvers: null })).not.toContain("hidden=");
    expect(eventLine({ ...asked, required: 1, approvers: null, hidden: [{ path: "/a b/password", reason: "secret", chars: 9 }] })).toMatch(
      / args=\{\} hidden=\["\/a b\/password \(9 chars\)"\]$/,
    );
    expect(eventLine({ ...envelope, ...ids, sequence: 4, type: "approval_vote", decided_by: "token:ann", votes: 1, required: 2 })).toMatch(
      /^#4\s+10:00:01\.250Z approval_vote\s+mcp__demo__delete_dashboard call=c1 approval=a1 vote=1\/2 by=token:ann$/,
    );
  });

  it("prints a listed approval's votes, voters, approvers and withheld paths", () => {
    const line = approvalLine({
      ...ids,
      run_id: "run-1",
      channel_id: "C1",
      level: "approve",
      description: "d",
      arguments: {},
      requested_at: "2026-12-01T10:00:00.000Z",
      expires_at: "2026-12-01T10:05:00.000Z",
      status: "pending",
      required: 2,
      approvers: ["group:sre"],
      approvals: [{ by: "token:ann", at: "2026-12-01T10:00:30.000Z" }],
      hidden: [
        { path: "/session", reason: "secret", chars: 26 },
        { path: "/a~1b/password", reason: "secret", chars: 9 },
      ],
    });
    expect(line).toContain('args={} hidden=["/session (26 chars)","/a~1b/password (9 chars)"]');
    expect(line).toContain("votes=1/2 voters=token:ann approvers=group:sre");
  });
});
