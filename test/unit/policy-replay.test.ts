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

const KPI = "mcp__demo__create_kpi";
const approved: Partial<ReplayCall> = {
  tool_name: KPI,
  level: "approve",
  mutating: true,
  trusted_read_only: false,
  ask: "approve",
  approval_id: "approval_1",
  approval_status: "approved",
  requested_by: "access:req@example.com",
  requester_person: "access:req@example.com",
  budget_used: 0,
  checkpoint: "allowed",
};
const vote = (n: number, principal: string, person: string | null, decision: "approve" | "deny" = "approve") => ({
  run_id: "run_1",
  tool_call_id: "c1",
  n,
  decision,
  principal,
  person,
  at: `2026-12-01T10:00:0${n}.000Z`,
});
const budget = { [KPI]: 1 };

describe("judgeCall's decider, quorum and checkpoint checks", () => {
  it("the same rules as recorded change nothing", () => {
    const call = recorded(approved, [vote(1, "access:ann@example.com", "access:ann@example.com")]);
    expect(judgeCall({ tools: {}, groups: {}, budget }, call, rules)).toEqual([]);
  });

  it("a voter outside the candidate's approvers is not_an_approver, and the quorum is no longer met", () => {
    const call = recorded(approved, [vote(1, "access:ann@example.com", "access:ann@example.com")]);
    const candidate = { tools: { [KPI]: { approvers: ["group:sre"] } }, groups: { sre: ["access:bob@example.com"] }, budget };
    expect(judgeCall(candidate, call, rules).map((c) => [c.check, c.recorded, c.candidate, c.principal])).toEqual([
      ["decider", "eligible", "not_an_approver", "access:ann@example.com"],
      ["quorum", "resolved", "pending:0", undefined],
    ]);
  });

  it("self_approval: false refuses the requester's own approve; two required leaves one counted", () => {
    const call = recorded(approved, [
      vote(1, "access:req@example.com", "access:req@example.com"),
      vote(2, "access:ann@example.com", "access:ann@example.com"),
    ]);
    const candidate = { tools: { [KPI]: { self_approval: false, approvals_required: 2 } }, groups: {}, budget };
    expect(judgeCall(candidate, call, rules).map((c) => [c.check, c.recorded, c.candidate])).toEqual([
      ["decider", "eligible", "self_approval_forbidden"],
      ["quorum", "resolved", "pending:1"],
    ]);
  });

  it("a Slack voter counts under the default rule only when listed in SLACK_APPROVERS", () => {
    const call = recorded(approved, [vote(1, "slack:T1:U1", "slack:T1:U1")]);
    const candidate = { tools: {}, groups: {}, budget };
    expect(judgeCall(candidate, call, { slackListed: () => true })).toEqual([]);
    expect(judgeCall(candidate, call, rules).map((c) => c.candidate)).toEqual(["not_an_approver", "pending:0"]);
  });

  it("the checkpoint: a budget already used, then a full limit window", () => {
    const voted = recorded({ ...approved, budget_used: 1 }, [vote(1, "access:ann@example.com", "access:ann@example.com")]);
    const call = { ...voted, windows: () => ({ asked: 0, checkpoint: 3 }) };
    expect(judgeCall({ tools: {}, groups: {}, budget }, call, rules).map((c) => [c.check, c.candidate])).toEqual([
      ["checkpoint", "budget_exhausted"],
    ]);
    const limited = { tools: { [KPI]: { limits: [{ max: 3, per: "1h", by: "all" as const }] } }, groups: {}, budget: { [KPI]: 5 } };
    expect(judgeCall(limited, call, rules).map((c) => [c.check, c.candidate])).toEqual([["checkpoint", "rate_limited"]]);
  });
});
