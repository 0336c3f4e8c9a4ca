// The Slack Home tab's pure rules (contract section 19): what one user may
// decide (by the same eligibility module as every path, persons included) and
// the view listing it, whose buttons carry the thread's action_ids and values.
import { describe, expect, it } from "vitest";
import { type Decider, decide, refusalOf, runRequester, effectivePolicy } from "../../src/policy/approval-policy";
import {
  type DecidableItem,
  type HomeFormQuestion,
  type HomeItem,
  decidableBy,
  HOME_ARGUMENTS_SHOWN_MAX_CHARS,
  homeDigest,
  homeView,
} from "../../src/slack/home-tab";
import { parseInputValue } from "../../src/slack/interactions";

const approval = (id: string, tool: string, requester: string, args: unknown = { title: "t" }): HomeItem => ({
  kind: "approval",
  run_id: `run_${id}`,
  approval_id: `ap_${id}`,
  channel_id: "C1",
  tool_name: tool,
  level: "approve",
  requester,
  arguments_json: JSON.stringify(args),
  expires_at: "2026-12-01T10:00:00.000Z",
});
const question = (id: string, requester: string): HomeItem => ({
  kind: "question",
  run_id: `run_${id}`,
  tool_call_id: `q_${id}`,
  channel_id: "C1",
  question: "which <!channel>?",
  requester,
  expires_at: "2026-12-01T10:00:00.000Z",
});
/** An MCP tool's question mid-call (contract section 21), asked by the call of `tool`. */
const formQuestion = (id: string, tool: string, requester: string, answerable = true): HomeFormQuestion => ({
  kind: "form_question",
  run_id: `run_${id}`,
  tool_call_id: `call_${id}`,
  input_id: `call_${id}:1:team`,
  tool_name: tool,
  channel_id: "C1",
  question: "Which team? <!here>",
  answerable,
  requester,
  expires_at: "2026-12-01T10:00:00.000Z",
});
const rules = {
  TOOL_POLICY: {
    guarded: { approvers: ["slack:T1:U0SRE"] },
    quorum: { approvals_required: 2 },
    own: { self_approval: false },
  },
  APPROVER_GROUPS: {},
  SLACK_APPROVERS: ["T1:U0LISTED"],
};
const items = [
  approval("1", "plain", "U0REQ"),
  approval("2", "guarded", "U0REQ"),
  question("3", "U0REQ"),
  approval("4", "quorum", "U0REQ"),
];
const ids = (list: HomeItem[]) => list.map((i) => (i.kind === "approval" ? i.approval_id : i.tool_call_id));
/** A Slack user as the tab sees them: a person of their own unless a person is given (their verified email's, or null). */
const viewer = (user: string, team = "T1", person?: string | null) => ({
  user,
  principal: `slack:${team}:${user}`,
  team: "T1",
  person: person === undefined ? `slack:${team}:${user}` : person,
});
const buttons = (view: ReturnType<typeof homeView>) =>
  (view.blocks as { type: string; elements?: { action_id?: string; value?: string; url?: string }[] }[]).flatMap((b) =>
    b.type === "actions" ? (b.elements ?? []) : [],
  );
const offered = (list: DecidableItem[]) =>
  list.map((i) => (i.kind === "approval" ? [i.approval_id, i.may_approve ? "approve" : "deny only"] : [i.tool_call_id, "answer"]));

describe("decidableBy", () => {
  it("follows the policy: approvers govern their tool, the default rule the rest; questions follow the default rule", () => {
    expect(ids(decidableBy(viewer("U0REQ"), items, rules))).toEqual(["ap_1", "q_3", "ap_4"]);
    expect(ids(decidableBy(viewer("U0SRE"), items, rules))).toEqual(["ap_2"]);
    expect(ids(decidableBy(viewer("U0LISTED"), items, rules))).toEqual(["ap_1", "q_3", "ap_4"]);
    expect(ids(decidableBy(viewer("U0STRANGER"), items, rules))).toEqual([]);
    // The same user ids in another organisation's team are other people (contract section 18).
    expect(ids(decidableBy(viewer("U0REQ", "T9"), items, rules))).toEqual([]);
    expect(ids(decidableBy(viewer("U0SRE", "T9"), items, rules))).toEqual([]);
  });

  it("judges persons as a click is judged: the requester's person under another account may only deny, nobody counts for no quorum", () => {
    const own = { ...approval("6", "own", "U0REQ"), requester_person: "access:ann@acme.com" } as HomeItem;
    const list = [own, approval("4", "quorum", "U0REQ"), approval("1", "plain", "U0REQ")];
    // The requester themself, and another Slack account of the same person (its verified email is ann's): deny only.
    expect(offered(decidableBy(viewer("U0REQ", "T1", "access:ann@acme.com"), list, rules))).toEqual([
      ["ap_6", "deny only"],
      ["ap_4", "approve"],
      ["ap_1", "approve"],
    ]);
    expect(offered(decidableBy(viewer("U0LISTED", "T1", "access:ann@acme.com"), list, rules))).toEqual([
      ["ap_6", "deny only"],
      ["ap_4", "approve"],
      ["ap_1", "approve"],
    ]);
    // Another person listed in SLACK_APPROVERS may approve all three.
    expect(offered(decidableBy(viewer("U0LISTED", "T1", "access:bob@acme.com"), list, rules))).toEqual([
      ["ap_6", "approve"],
      ["ap_4", "approve"],
      ["ap_1", "approve"],
    ]);
    // users.info failed: nobody, so no quorum and no approve under self_approval: false, single votes as before.
    expect(offered(decidableBy(viewer("U0LISTED", "T1", null), list, rules))).toEqual([
      ["ap_6", "deny only"],
      ["ap_1", "approve"],
    ]);
  });

  it("offers exactly what refusalOf would take from that user's click, for every viewer and item", () => {
    const list = [{ ...approval("6", "own", "U0REQ"), requester_person: "access:ann@acme.com" } as HomeItem, ...items];
    const viewers = [
      viewer("U0REQ", "T1", "access:ann@acme.com"),
      viewer("U0LISTED", "T1", "access:ann@acme.com"),
      viewer("U0LISTED", "T1", null),
      viewer("U0SRE"),
      viewer("U0STRANGER"),
    ];
    for (const v of viewers) {
      const shown = decidableBy(v, list, rules);
      for (const item of list) {
        if (item.kind !== "approval") continue;
        const decider: Decider = {
          via: "slack",
          principal_id: v.principal,
          person: v.person,
          listed_in_slack_approvers: v.principal === "slack:T1:U0LISTED",
        };
        const asked = {
          policy: effectivePolicy(rules.TOOL_POLICY, item.tool_name),
          groups: {},
          decider,
          requester: runRequester({
            user_id: item.requester,
            requested_by: `slack:T1:${item.requester}`,
            source: "slack",
            requester_person: item.requester_person ?? undefined,
          }),
        };
        const entry = shown.find((i) => i.kind === "approval" && i.approval_id === item.approval_id);
        expect([v.user, item.approval_id, entry !== undefined]).toEqual([
          v.user,
          item.approval_id,
          refusalOf({ ...asked, decision: "deny" }) === null,
        ]);
        if (entry?.kind === "approval") expect(entry.may_approve).toBe(refusalOf({ ...asked, decision: "approve" }) === null);
      }
    }
  });
});

describe("decidableBy: a two-person approval someone already voted on", () => {
  const voted = (by: string[]): HomeItem => ({ ...approval("4", "quorum", "U0REQ"), voted_by: by }) as HomeItem;

  it("offers no Approve to the person whose approve counted (Deny stays), and Approve to everyone else", () => {
    const list = [voted(["slack:T1:U0REQ"])];
    expect(offered(decidableBy(viewer("U0REQ"), list, rules))).toEqual([["ap_4", "deny only"]]);
    expect(offered(decidableBy(viewer("U0LISTED"), list, rules))).toEqual([["ap_4", "approve"]]);
    // The same person voted from the console (an Access login): their Slack account with that verified email is offered Deny only.
    const fromConsole = [voted(["access:ann@acme.com"])];
    expect(offered(decidableBy(viewer("U0LISTED", "T1", "access:ann@acme.com"), fromConsole, rules))).toEqual([["ap_4", "deny only"]]);
    expect(offered(decidableBy(viewer("U0LISTED", "T1", "access:bob@acme.com"), fromConsole, rules))).toEqual([["ap_4", "approve"]]);
  });

  it("says why, and the digest changes when their vote counts (so the tab is published again)", () => {
    const [item] = decidableBy(viewer("U0REQ"), [voted(["slack:T1:U0REQ"])], rules);
    const view = homeView([item!]);
    expect(buttons(view).map((b) => b.action_id)).toEqual(["approval_deny"]);
    expect(JSON.stringify(view)).toContain("Your approval is counted");
    expect(JSON.stringify(view)).not.toContain("forbids self-approval");
    expect(homeDigest([item!])).not.toBe(homeDigest(decidableBy(viewer("U0REQ"), [voted([])], rules)));
  });

  it("offers Approve exactly where the click's decide() would count a vote rather than answer duplicate_vote", () => {
    const votes = ["slack:T1:U0REQ", "access:ann@acme.com"];
    const viewers = [viewer("U0REQ"), viewer("U0LISTED", "T1", "access:ann@acme.com"), viewer("U0LISTED"), viewer("U0LISTED", "T1", null)];
    for (const v of viewers) {
      for (const by of votes) {
        const item = voted([by]);
        const entry = decidableBy(v, [item], rules)[0];
        const decider: Decider = { via: "slack", principal_id: v.principal, person: v.person, listed_in_slack_approvers: true };
        const verdict = decide({
          policy: effectivePolicy(rules.TOOL_POLICY, "quorum"),
          groups: {},
          decider,
          requester: runRequester({ user_id: "U0REQ", requested_by: "slack:T1:U0REQ", source: "slack" }),
          decision: "approve",
          // As the engine keeps it: the person each vote counted for (here what the listing's principal reads as).
          votes: [{ by, person: by, at: "2026-12-01T09:00:00.000Z" }],
          at: "2026-12-01T09:30:00.000Z",
        });
        const approvable = entry?.kind === "approval" && entry.may_approve;
        expect([v.user, v.person, by, approvable]).toEqual([v.user, v.person, by, verdict.kind === "approved"]);
      }
    }
  });
});

describe("decidableBy: MCP questions mid-call", () => {
  it("lists an MCP question to exactly those eligible to approve its call, by the tool's policy (not the default rule of human__ask)", () => {
    const list = [formQuestion("1", "plain", "U0REQ"), formQuestion("2", "guarded", "U0REQ"), formQuestion("3", "own", "U0REQ")];
    const inputIds = (shown: DecidableItem[]) => shown.map((i) => (i.kind === "form_question" ? i.input_id : "?"));
    // The default rule: the requester and SLACK_APPROVERS; self_approval: false still lets the requester answer (a deny's rule).
    expect(inputIds(decidableBy(viewer("U0REQ"), list, rules))).toEqual(["call_1:1:team", "call_3:1:team"]);
    expect(inputIds(decidableBy(viewer("U0LISTED"), list, rules))).toEqual(["call_1:1:team", "call_3:1:team"]);
    // The guarded tool's approvers alone may answer its call's question.
    expect(inputIds(decidableBy(viewer("U0SRE"), list, rules))).toEqual(["call_2:1:team"]);
    expect(inputIds(decidableBy(viewer("U0STRANGER"), list, rules))).toEqual([]);
    expect(inputIds(decidableBy(viewer("U0REQ", "T9"), list, rules))).toEqual([]);
  });

  it("lists it where refusalOf would take the same user's answer (the engine's check: a deny of the call), for every viewer", () => {
    const list = [formQuestion("1", "plain", "U0REQ"), formQuestion("2", "guarded", "U0REQ"), formQuestion("4", "quorum", "U0REQ")];
    for (const v of [viewer("U0REQ"), viewer("U0LISTED", "T1", null), viewer("U0SRE"), viewer("U0STRANGER")]) {
      const shown = decidableBy(v, list, rules);
      for (const item of list) {
        if (item.kind !== "form_question") continue;
        const decider: Decider = {
          via: "slack",
          principal_id: v.principal,
          person: v.person,
          listed_in_slack_approvers: v.principal === "slack:T1:U0LISTED",
        };
        const refusal = refusalOf({
          policy: effectivePolicy(rules.TOOL_POLICY, item.tool_name),
          groups: {},
          decider,
          requester: runRequester({ user_id: item.requester, requested_by: `slack:T1:${item.requester}`, source: "slack" }),
          decision: "deny",
        });
        const listed = shown.some((i) => i.kind === "form_question" && i.input_id === item.input_id);
        expect([v.user, item.input_id, listed]).toEqual([v.user, item.input_id, refusal === null]);
      }
    }
  });
});

describe("homeView", () => {
  const mayApprove = (item: HomeItem, may_approve = true): DecidableItem => (item.kind === "approval" ? { ...item, may_approve } : item);

  it("lists each item with the thread's buttons, their values naming the run's channel; escapes what a model wrote", () => {
    const view = homeView([mayApprove(items[0]!), mayApprove(items[2]!)], "https://aee.example");
    expect(view.type).toBe("home");
    expect(buttons(view).map((b) => b.action_id)).toEqual(["approval_approve", "approval_deny", "home_open_console", "input_answer"]);
    expect(JSON.parse(buttons(view)[0]!.value!)).toEqual({ run_id: "run_1", approval_id: "ap_1", level: "approve", channel_id: "C1" });
    expect(JSON.parse(buttons(view)[3]!.value!)).toEqual({ run_id: "run_3", tool_call_id: "q_3", channel_id: "C1" });
    expect(buttons(view)[2]!.url).toBe("https://aee.example/console#/runs/run_1/approvals/ap_1");
    expect(JSON.stringify(view)).toContain("&lt;!channel&gt;");
    expect(JSON.stringify(view)).not.toContain("<!channel>");
  });

  it("offers no Approve for arguments it cannot show whole, and says nothing waits when nothing does", () => {
    const long = mayApprove(approval("5", "plain", "U0REQ", { blob: "x".repeat(HOME_ARGUMENTS_SHOWN_MAX_CHARS) }));
    expect(buttons(homeView([long])).map((b) => b.action_id)).toEqual(["approval_deny"]);
    expect(JSON.stringify(homeView([long]))).toContain("too long to show here");
    expect(JSON.stringify(homeView([]))).toContain("Nothing waits for your decision.");
    expect(homeDigest([mayApprove(items[0]!)])).not.toBe(homeDigest([]));
  });

  it("offers only Deny, and says why, where self-approval forbids their approve; the digest tells the two apart", () => {
    const view = homeView([mayApprove(items[0]!, false)], "https://aee.example");
    expect(buttons(view).map((b) => b.action_id)).toEqual(["approval_deny", "home_open_console"]);
    expect(JSON.stringify(view)).toContain("another person must approve this call");
    expect(homeDigest([mayApprove(items[0]!, false)])).not.toBe(homeDigest([mayApprove(items[0]!)]));
  });

  it("offers an MCP question's Answer… (the modal from its schema) and Decline, with the thread's values and the run's channel", () => {
    const view = homeView([formQuestion("7", "plain", "U0REQ")], "https://aee.example");
    expect(buttons(view).map((b) => b.action_id)).toEqual(["input_answer", "input_decline", "home_open_console"]);
    const value = { run_id: "run_7", tool_call_id: "call_7", input_id: "call_7:1:team", channel_id: "C1" };
    expect(JSON.parse(buttons(view)[0]!.value!)).toEqual(value);
    expect(JSON.parse(buttons(view)[1]!.value!)).toEqual(value);
    // The click handler reads it back as an MCP question's button (src/slack/interactions.ts).
    expect(parseInputValue(buttons(view)[0]!.value)).toEqual(value);
    expect(buttons(view)[2]!.url).toBe("https://aee.example/console#/runs/run_7");
    expect(JSON.stringify(view)).toContain("&lt;!here&gt;");
    expect(JSON.stringify(view)).toContain("asked by *`plain`*");
    // A form Slack cannot show: Decline and the console only, and the digest tells the two apart.
    const unshown = homeView([formQuestion("7", "plain", "U0REQ", false)]);
    expect(buttons(unshown).map((b) => b.action_id)).toEqual(["input_decline"]);
    expect(JSON.stringify(unshown)).toContain("cannot be shown in Slack");
    expect(homeDigest([formQuestion("7", "plain", "U0REQ", false)])).not.toBe(homeDigest([formQuestion("7", "plain", "U0REQ")]));
  });

  it("fits Slack's 100 blocks with every item denied-only and more than it lists", () => {
    const many = Array.from({ length: 60 }, (_, i) => mayApprove(approval(`m${i}`, "own", "U0REQ"), false));
    const view = homeView(many);
    expect(view.blocks.length).toBeLessThanOrEqual(100);
    expect(JSON.stringify(view)).toMatch(/And \d+ more: see the console\./);
  });
});
