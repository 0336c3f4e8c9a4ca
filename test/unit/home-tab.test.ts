// The Slack Home tab's pure rules (contract section 19): what one user may
// decide (by the same eligibility module as every path) and the view listing
// it, whose buttons carry the thread's action_ids and values.
import { describe, expect, it } from "vitest";
import { type HomeItem, decidableBy, HOME_ARGUMENTS_SHOWN_MAX_CHARS, homeDigest, homeView } from "../../src/slack/home-tab";

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
const rules = {
  TOOL_POLICY: { guarded: { approvers: ["slack:T1:U0SRE"] }, quorum: { approvals_required: 2 } },
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

describe("decidableBy", () => {
  it("follows the policy: approvers govern their tool, the default rule the rest; questions follow the default rule", () => {
    const viewer = (user: string, team = "T1") => ({ user, principal: `slack:${team}:${user}`, team: "T1" });
    expect(ids(decidableBy(viewer("U0REQ"), items, rules))).toEqual(["ap_1", "q_3", "ap_4"]);
    expect(ids(decidableBy(viewer("U0SRE"), items, rules))).toEqual(["ap_2"]);
    expect(ids(decidableBy(viewer("U0LISTED"), items, rules))).toEqual(["ap_1", "q_3", "ap_4"]);
    expect(ids(decidableBy(viewer("U0STRANGER"), items, rules))).toEqual([]);
    // The same user ids in another organisation's team are other people (contract section 18).
    expect(ids(decidableBy(viewer("U0REQ", "T9"), items, rules))).toEqual([]);
    expect(ids(decidableBy(viewer("U0SRE", "T9"), items, rules))).toEqual([]);
  });
});

describe("homeView", () => {
  const buttons = (view: ReturnType<typeof homeView>) =>
    (view.blocks as { type: string; elements?: { action_id?: string; value?: string; url?: string }[] }[]).flatMap((b) =>
      b.type === "actions" ? (b.elements ?? []) : [],
    );

  it("lists each item with the thread's buttons, their values naming the run's channel; escapes what a model wrote", () => {
    const view = homeView([items[0]!, items[2]!], "https://aee.example");
    expect(view.type).toBe("home");
    expect(buttons(view).map((b) => b.action_id)).toEqual(["approval_approve", "approval_deny", "home_open_console", "input_answer"]);
    expect(JSON.parse(buttons(view)[0]!.value!)).toEqual({ run_id: "run_1", approval_id: "ap_1", level: "approve", channel_id: "C1" });
    expect(JSON.parse(buttons(view)[3]!.value!)).toEqual({ run_id: "run_3", tool_call_id: "q_3", channel_id: "C1" });
    expect(buttons(view)[2]!.url).toBe("https://aee.example/console#/runs/run_1/approvals/ap_1");
    expect(JSON.stringify(view)).toContain("&lt;!channel&gt;");
    expect(JSON.stringify(view)).not.toContain("<!channel>");
  });

  it("offers no Approve for arguments it cannot show whole, and says nothing waits when nothing does", () => {
    const long = approval("5", "plain", "U0REQ", { blob: "x".repeat(HOME_ARGUMENTS_SHOWN_MAX_CHARS) });
    expect(buttons(homeView([long])).map((b) => b.action_id)).toEqual(["approval_deny"]);
    expect(JSON.stringify(homeView([long]))).toContain("too long to show here");
    expect(JSON.stringify(homeView([]))).toContain("Nothing waits for your decision.");
    expect(homeDigest([items[0]!])).not.toBe(homeDigest([]));
  });
});
