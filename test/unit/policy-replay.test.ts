// Policy replay's judgment (contract section 24), pure: one recorded call
// judged by a candidate, check by check, with the engine's own rules.
import { describe, expect, it } from "vitest";
import { judgeCall, type RecordedCall } from "../../src/listings/policy-replay";
import type { ReplayCall } from "../../src/listings/replay-facts";

const base: ReplayCall = {
  run_id: "run_1",
  tool_call_id: "c1",
  proposed_at: "2026-12-01T10:00:00.000Z",
  tool_name: "mcp__demo__list_dashboards",
  channel_id: "C1",
  requested_by: "token:root",
  requester_person: null,
  limit_key: "token:root",
  level: null,
  mutating: false,
  trusted_read_only: true,
  destructive_hint: false,
  arguments_digest: "sha256:x",
  ask: "automatic",
};
const rules = { slackListed: () => false };
const recorded = (call: Partial<ReplayCall>, votes: RecordedCall["votes"] = []): RecordedCall => ({
  call: { ...base, ...call },
  votes,
  windows: () => ({}),
});
const empty = { tools: {}, groups: {}, budget: {} };

describe("judgeCall", () => {
  it("a trusted read-only call stays automatic; read_only: false makes it a mutation outside the budget", () => {
    expect(judgeCall(empty, recorded({}), rules)).toEqual([]);
    const changed = judgeCall({ ...empty, tools: { mcp__demo__list_dashboards: { read_only: false } } }, recorded({}), rules);
    expect(changed).toEqual([expect.objectContaining({ check: "ask", recorded: "automatic", candidate: "not_in_budget" })]);
  });
});
