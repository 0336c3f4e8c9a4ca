// What the CLI prints of contract section 23's tool identity (cli/render.ts): a call stopped because
// its tool changed after the approval names the reason and the digest now listed, or that it is gone.
import { describe, expect, it } from "vitest";
import { eventLine } from "../../cli/render";

const envelope = { protocol_version: "v2" as const, run_id: "run-1", channel_id: "C1", at: "2026-12-01T10:00:01.250Z" };
const stopped = {
  ...envelope,
  sequence: 6,
  type: "tool_execution" as const,
  tool_name: "mcp__demo__create_kpi",
  tool_call_id: "c1",
  approval_id: "a1",
  execution_status: "not_executed" as const,
  reason: "tool_changed" as const,
  mutation_id: "mut_1",
};
const DIGEST = `sha256:${"0123456789abcdef".repeat(4)}`;

describe("the CLI's line for a tool that changed after its approval", () => {
  it("prints the reason and the digest now listed, or gone", () => {
    expect(eventLine({ ...stopped, tool_digest: DIGEST })).toContain(`not_executed reason=tool_changed tool_digest=${DIGEST}`);
    expect(eventLine({ ...stopped, tool_digest: null })).toContain("not_executed reason=tool_changed tool_digest=gone");
    expect(eventLine({ ...stopped, reason: "denied" })).not.toContain("tool_digest=");
  });
});
