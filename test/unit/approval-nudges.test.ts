// Reminders and escalation (contract section 24) as pure transitions over the
// run's calls, at exact instants: the policy's fields as configured, when each
// fires, that a reminder is appended only for what Slack shows, that an
// escalation widens who may decide through approval-policy's one verdict, the
// Slack users told directly, and the MCP question's path (input_id).
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config";
import { armNudges, nudgeDue } from "../../src/execution/approval-nudges";
import { shownArguments } from "../../src/execution/shown-arguments";
import {
  announce,
  decideApproval,
  type Dispatched,
  expireDue,
  nextDeadline,
  type Proposed,
  rejudgePending,
  type ToolCall,
} from "../../src/execution/tool-calls";
import { nudgePolicy, refusalOf, type Requester, slackUsersToRemind } from "../../src/policy/approval-policy";
import type { ApprovalPolicy } from "../../src/wire/run-protocol";
import { approvalDeciders } from "../../src/slack/interactions";

const T0 = 1_000_000;
const TIMEOUT_MS = 60_000;
const TOOL = "mcp__demo__create_dashboard";
const limits = { ceiling: 25, budget: { [TOOL]: 2 }, approvalTimeoutMs: TIMEOUT_MS, admissionTimeoutMs: 5_000 };
const POLICY: ApprovalPolicy = { approvers: ["slack:T1:U1"], approvals_required: 1, self_approval: true };
const TOOL_POLICY = { [TOOL]: { approvers: ["slack:T1:U1"], remind_before: "10s", escalate_after: "20s", escalate_to: ["group:oncall"] } };
const GROUPS = { oncall: ["slack:T1:U3", "slack:T9:U9", "token:oncall-*"] };
const REQUESTER: Requester = { principal_id: "slack:T1:U0", person: "slack:T1:U0" };

function asked(): ToolCall[] {
  const proposed: Proposed = {
    turn: 0,
    index: 0,
    tool_call_id: "c1",
    tool_name: TOOL,
    arguments: {},
    arguments_digest: "sha256:x",
    kind: "mcp",
    mutating: true,
    level: "approve",
    description: "d",
    state: "proposed",
    started_at: T0,
  };
  const calls: ToolCall[] = [proposed];
  announce(calls, proposed, shownArguments({}), limits, T0, { approvalId: "a1", mutationId: "m1" }, POLICY);
  armNudges(calls, "c1", nudgePolicy(TOOL_POLICY, TOOL), T0);
  return calls;
}

const types = (effects: { kind: string; type?: string }[]) => effects.map((e) => e.type);
const fields = (effects: { kind: string; fields?: unknown }[]) => effects.map((e) => e.fields);
const always = () => true;
const policyOf = () => POLICY;

describe("the policy's reminder and escalation fields", () => {
  it('are read field by field over "*"; absent fields never fire', () => {
    expect(nudgePolicy({ "*": { remind_before: "1m", escalate_to: ["token:x"] }, [TOOL]: { escalate_after: "2h" } }, TOOL)).toEqual({
      remind_before_ms: 60_000,
      escalate_after_ms: 7_200_000,
      escalate_to: ["token:x"],
    });
    expect(nudgePolicy({}, TOOL)).toEqual({ escalate_to: [] });
  });

  it("are bad_config, naming the entry, outside 1s..30d or not shorter than the approval's timeout", () => {
    const paths = (toolPolicy: unknown, timeout?: string) => {
      const result = parseConfig({
        API_TOKEN: "t".repeat(32),
        TOOL_POLICY: JSON.stringify(toolPolicy),
        APPROVER_GROUPS: JSON.stringify({ oncall: ["token:a"] }),
        ...(timeout !== undefined ? { APPROVAL_TIMEOUT_MS: timeout } : {}),
      });
      return result.state === "bad_config" ? result.details.map((d) => d.path).sort() : result.state;
    };
    expect(paths({ [TOOL]: { remind_before: "4m", escalate_after: "1s", escalate_to: ["group:oncall"] } })).toBe("ready");
    expect(paths({ "*": { remind_before: "30s", escalate_after: "1m" } })).toBe("ready");
    expect(paths({ [TOOL]: { remind_before: "0s" } })).toEqual([`TOOL_POLICY.${TOOL}.remind_before`]);
    expect(paths({ [TOOL]: { escalate_after: "31d" } })).toEqual([`TOOL_POLICY.${TOOL}.escalate_after`]);
    expect(paths({ [TOOL]: { escalate_after: "5 m" } })).toEqual([`TOOL_POLICY.${TOOL}.escalate_after`]);
    // The default timeout is 300000 ms: 5m is not shorter.
    expect(paths({ [TOOL]: { remind_before: "5m", escalate_after: "299s" } })).toEqual([`TOOL_POLICY.${TOOL}.remind_before`]);
    expect(paths({ [TOOL]: { escalate_after: "10s" } }, "10000")).toEqual([`TOOL_POLICY.${TOOL}.escalate_after`]);
    expect(paths({ [TOOL]: { escalate_to: ["*"] } })).toEqual([`TOOL_POLICY.${TOOL}.escalate_to.0`]);
    expect(paths({ [TOOL]: { escalate_to: ["group:nobody"] } })).toEqual([`TOOL_POLICY.${TOOL}.escalate_to.0`]);
  });
});

describe("nudgeDue at the run's alarm", () => {
  it("reminds at expires_at - remind_before and escalates at asked + escalate_after, each once, never at expiry", () => {
    const calls = asked();
    const remindAt = T0 + TIMEOUT_MS - 10_000;
    const escalateAt = T0 + 20_000;
    expect(nextDeadline(calls, 0)).toBe(escalateAt);
    expect(nudgeDue(calls, 0, escalateAt - 1, always, policyOf).effects).toEqual([]);

    const escalation = nudgeDue(calls, 0, escalateAt, always, policyOf);
    expect(types(escalation.effects)).toEqual(["approval_escalated"]);
    expect(fields(escalation.effects)).toEqual([
      { tool_name: TOOL, tool_call_id: "c1", approval_id: "a1", approvers: ["slack:T1:U1"], escalated_to: ["group:oncall"] },
    ]);
    expect(escalation.reminded).toEqual([]);
    expect(nudgeDue(calls, 0, escalateAt + 1, always, policyOf).effects).toEqual([]);
    expect(nextDeadline(calls, 0)).toBe(remindAt);

    expect(nudgeDue(calls, 0, remindAt - 1, always, policyOf).effects).toEqual([]);
    const reminder = nudgeDue(calls, 0, remindAt, always, policyOf);
    expect(fields(reminder.effects)).toEqual([
      { tool_name: TOOL, tool_call_id: "c1", approval_id: "a1", expires_at: new Date(T0 + TIMEOUT_MS).toISOString() },
    ]);
    expect(reminder.reminded).toEqual([
      { tool_name: TOOL, tool_call_id: "c1", approval_id: "a1", policy: POLICY, escalated_to: ["group:oncall"] },
    ]);
    expect(nudgeDue(calls, 0, remindAt + 1, always, policyOf).effects).toEqual([]);
    expect(nextDeadline(calls, 0)).toBe(T0 + TIMEOUT_MS);
  });

  it("appends no reminder for an approval Slack does not show, and does not try again", () => {
    const calls = asked();
    const remindAt = T0 + TIMEOUT_MS - 10_000;
    const hidden = nudgeDue(calls, 0, remindAt, () => false, policyOf);
    expect(types(hidden.effects)).toEqual(["approval_escalated"]);
    expect(hidden.reminded).toEqual([]);
    expect(nudgeDue(calls, 0, remindAt + 1, always, policyOf).effects).toEqual([]);
  });

  it("leaves expiry alone: nothing fires at or after expires_at", () => {
    const calls = asked();
    expect(nudgeDue(calls, 0, T0 + TIMEOUT_MS, always, policyOf).effects).toEqual([]);
  });

  it("widens who may decide through refusalOf once escalated: a match of escalate_to beside the rule in force", () => {
    const calls = asked();
    const decider = (user: string) => ({
      via: "slack" as const,
      principal_id: `slack:T1:${user}`,
      person: `slack:T1:${user}`,
      listed_in_slack_approvers: false,
    });
    const decision = (user: string, at: number) =>
      decideApproval(
        calls,
        "a1",
        { decision: "approve", decided_by: `slack:T1:${user}`, decider: decider(user) },
        REQUESTER,
        GROUPS,
        limits,
        at,
        "m1",
      ).verdict;
    expect(decision("U3", T0 + 1)).toEqual({ kind: "refused", error: "not_an_approver" });
    nudgeDue(calls, 0, T0 + 20_000, always, policyOf);
    expect(decision("U4", T0 + 20_001)).toEqual({ kind: "refused", error: "not_an_approver" });
    expect(decision("U3", T0 + 20_001)).toEqual({ kind: "resolved", approval_id: "a1", decision: "approved" });
  });

  it("reminds a call's open MCP question by input_id, as its approval", () => {
    const question = { input_id: "c1:1:k", round: 1, key: "k", question: "q?", requested_schema: {}, expires_at: T0 + TIMEOUT_MS };
    const dispatched: Dispatched = {
      ...(asked()[0] as Omit<Dispatched, "state" | "grant" | "approved_at" | "mutation_id">),
      state: "dispatched",
      grant: "automatic",
      approved_at: T0,
      mutation_id: null,
      questions: [question],
      conversation: { phase: "waiting", round: 1, sends: 1 },
    } as Dispatched;
    const calls: ToolCall[] = [dispatched];
    armNudges(calls, "c1", nudgePolicy(TOOL_POLICY, TOOL), T0, 1);
    const due = nudgeDue(calls, 0, T0 + TIMEOUT_MS - 10_000, always, policyOf);
    expect(types(due.effects)).toEqual(["approval_escalated", "approval_reminded"]);
    expect(fields(due.effects)[1]).toEqual({
      tool_name: TOOL,
      tool_call_id: "c1",
      input_id: "c1:1:k",
      expires_at: new Date(T0 + TIMEOUT_MS).toISOString(),
    });
    expect(due.reminded[0]).toMatchObject({ input_id: "c1:1:k", escalated_to: ["group:oncall"] });
  });
});

describe("the Slack users a reminder tells directly", () => {
  it("are those eligible by exact id, of the run's installation only, as refusalOf judges them", () => {
    const base = { groups: GROUPS, requester: REQUESTER, slack_approvers: ["U5", "T9:U6"], team: "T1" };
    expect(slackUsersToRemind({ ...base, policy: POLICY })).toEqual(["U1"]);
    // Escalated: the exact Slack ids of escalate_to of this installation (not T9's, not a token pattern).
    expect(slackUsersToRemind({ ...base, policy: POLICY, escalated_to: ["group:oncall"] })).toEqual(["U1", "U3"]);
    // The default rule: the requester and SLACK_APPROVERS of this installation.
    const open: ApprovalPolicy = { approvers: null, approvals_required: 1, self_approval: true };
    expect(slackUsersToRemind({ ...base, policy: open })).toEqual(["U0", "U5"]);
    // self_approval: false: the requester may not approve, so is not told.
    expect(slackUsersToRemind({ ...base, policy: { ...open, self_approval: false } })).toEqual(["U5"]);
    // Each kept user is one refusalOf lets approve.
    for (const user of slackUsersToRemind({ ...base, policy: POLICY, escalated_to: ["group:oncall"] })) {
      const decider = {
        via: "slack" as const,
        principal_id: `slack:T1:${user}`,
        person: `slack:T1:${user}`,
        listed_in_slack_approvers: false,
      };
      expect(
        refusalOf({ policy: POLICY, escalated_to: ["group:oncall"], groups: GROUPS, decider, requester: REQUESTER, decision: "approve" }),
      ).toBeNull();
    }
  });
});

describe("a Slack refusal after an escalation", () => {
  it("names the escalated users by exact id beside the rule in force", () => {
    expect(approvalDeciders(POLICY, GROUPS, "U0", [])).toEqual({ users: ["U1"], elsewhere: false });
    expect(approvalDeciders(POLICY, GROUPS, "U0", [], ["group:oncall"])).toEqual({ users: ["U1", "U3", "U9"], elsewhere: true });
  });
});

describe("a pending approval at its alarm meets the version active now (rejudgePending)", () => {
  const TWO: ApprovalPolicy = { approvers: ["slack:T1:*"], approvals_required: 2, self_approval: true };
  const decider = (user: string) => ({
    via: "slack" as const,
    principal_id: `slack:T1:${user}`,
    person: `slack:T1:${user}`,
    listed_in_slack_approvers: false,
  });
  /** An approval asked under two votes, with `voters` counted (each at T0 + 1). */
  function voted(voters: string[]): ToolCall[] {
    const calls = asked();
    for (const user of voters) {
      const { verdict } = decideApproval(
        calls,
        "a1",
        { decision: "approve", decided_by: `slack:T1:${user}`, decider: decider(user) },
        REQUESTER,
        {},
        limits,
        T0 + 1,
        "m1",
        () => null,
        () => TWO,
      );
      expect(verdict.kind).toBe("vote_pending");
    }
    return calls;
  }
  const mutation = () => "m2";
  const votesOf = (calls: ToolCall[]) => (calls[0]?.state === "awaiting_approval" ? calls[0].approval.votes?.map((v) => v.by) : undefined);

  it("resolves approved, decided by the last counted voter, once the counted votes reach the new required", () => {
    const calls = voted(["U1"]);
    const effects = rejudgePending(calls, 0, REQUESTER, {}, () => ({ ...TWO, approvals_required: 1 }), limits, T0 + 5, mutation);
    expect(types(effects)).toEqual(["approval_resolved", "tool_execution_started", undefined]);
    expect(fields(effects)[0]).toMatchObject({ approval_id: "a1", decision: "approved", decided_by: "slack:T1:U1" });
    expect(calls[0]).toMatchObject({ state: "awaiting_admission", mutation_id: "m2", approved_at: T0 + 5 });
  });

  it("drops the votes of voters no longer eligible (an approver removed, self-approval turned off) and keeps it pending", () => {
    const calls = voted(["U1"]);
    expect(rejudgePending(calls, 0, REQUESTER, {}, () => ({ ...TWO, approvers: ["slack:T1:U7"] }), limits, T0 + 5, mutation)).toEqual([]);
    expect(votesOf(calls)).toEqual([]);
    expect(calls[0]?.state).toBe("awaiting_approval");

    // The requester's own vote (self_approval on when cast) stops counting when a version turns it off.
    const own = voted(["U0"]);
    expect(votesOf(own)).toEqual(["slack:T1:U0"]);
    const off = () => ({ ...TWO, approvals_required: 1, self_approval: false });
    expect(rejudgePending(own, 0, REQUESTER, {}, off, limits, T0 + 5, mutation)).toEqual([]);
    expect(votesOf(own)).toEqual([]);
  });

  it("leaves a halted one pending (votes kept); at its expiry alarm resolves one whose votes now suffice, else leaves it to the expiry", () => {
    const one = () => ({ ...TWO, approvals_required: 1 });
    const halted = voted(["U1"]);
    expect(rejudgePending(halted, 0, REQUESTER, {}, one, limits, T0 + 5, mutation, () => "halt_1")).toEqual([]);
    expect(votesOf(halted)).toEqual(["slack:T1:U1"]);
    // Contract section 24 lists expiry among the alarms a pending approval meets a new version at.
    const late = voted(["U1"]);
    expect(types(rejudgePending(late, 0, REQUESTER, {}, one, limits, T0 + TIMEOUT_MS, mutation))[0]).toBe("approval_resolved");
    const short = voted(["U1"]);
    expect(rejudgePending(short, 0, REQUESTER, {}, () => TWO, limits, T0 + TIMEOUT_MS, mutation)).toEqual([]);
    expect(short[0]?.state).toBe("awaiting_approval");
    expect(types(expireDue(short, 0, T0 + TIMEOUT_MS))[0]).toBe("approval_resolved");
    expect(short[0]).toMatchObject({ state: "done", approval: { decision: "expired" } });
  });
});
