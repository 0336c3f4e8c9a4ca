// The eligibility module of contract section 19 (src/policy/): patterns,
// groups, persons, the effective policy and the verdict of one decision.
import { describe, expect, it } from "vitest";
import {
  answerRefusal,
  type ApprovalPolicy,
  type Decider,
  decide,
  effectivePolicy,
  type Requester,
  type Vote,
} from "../../src/policy/approval-policy";
import { expandApprovers, matchesApprovers, patternMatches } from "../../src/policy/approver-patterns";
import { nonCanonicalReason, onBehalfOfPerson, onBehalfOfPrincipal, personOf, restrictingPersonOf } from "../../src/policy/persons";

const AT = "2026-12-01T10:00:00.000Z";
const policy = (p: Partial<ApprovalPolicy> = {}): ApprovalPolicy => ({ approvers: null, approvals_required: 1, self_approval: true, ...p });
const api = (principal_id: string, person = personOf(principal_id), has_approver_role = true): Decider => ({
  via: "api",
  principal_id,
  person,
  has_approver_role,
});
const requester: Requester = { principal_id: "access:req@acme.com", person: "access:req@acme.com" };

describe("principal patterns", () => {
  it("matches exact ids, * runs anywhere, and access: ids in lower case", () => {
    expect(patternMatches("token:sre-one", "token:sre-one")).toBe(true);
    expect(patternMatches("token:sre-one", "token:sre-two")).toBe(false);
    expect(patternMatches("token:sre-*", "token:sre-two")).toBe(true);
    expect(patternMatches("token:sre-*", "token:ops-two")).toBe(false);
    expect(patternMatches("slack:T1:*", "slack:T1:U9")).toBe(true);
    expect(patternMatches("slack:T1:*", "slack:T2:U9")).toBe(false);
    expect(patternMatches("access:*@acme.com", "access:Bob@ACME.com")).toBe(true);
    expect(patternMatches("access:*@acme.com", "access:bob@acme.com.evil.io")).toBe(false);
    expect(patternMatches("ACCESS:BOB@acme.com", "access:bob@acme.com")).toBe(true);
    // Other kinds stay case-sensitive: a Slack id or token name is not an email.
    expect(patternMatches("token:SRE", "token:sre")).toBe(false);
    expect(patternMatches("a*b*c", "abc")).toBe(true);
    expect(patternMatches("a*b*c", "acb")).toBe(false);
    expect(patternMatches("ab*ba", "aba")).toBe(false);
    // No glob meanings beyond *: ? and / are literal.
    expect(patternMatches("slack:T1:U?", "slack:T1:UX")).toBe(false);
  });

  it("expands group: entries from APPROVER_GROUPS; unknown groups name nobody", () => {
    const groups = { sre: ["token:sre-*", "access:lead@acme.com"] };
    expect(expandApprovers(["group:sre", "token:x"], groups)).toEqual(["token:sre-*", "access:lead@acme.com", "token:x"]);
    expect(matchesApprovers(["group:sre"], groups, "access:LEAD@acme.com")).toBe(true);
    expect(matchesApprovers(["group:ops"], groups, "token:sre-1")).toBe(false);
    expect(matchesApprovers(["group:constructor"], groups, "token:sre-1")).toBe(false);
  });
});

describe("persons", () => {
  it("an access user, a token they minted for themselves and a trusted team's Slack user with that verified email are one person", () => {
    expect(personOf("access:Alice@Acme.com")).toBe("access:alice@acme.com");
    expect(personOf("token:alice-cli", { owner: "access:alice@acme.com", owned_by_creator: true })).toBe("access:alice@acme.com");
    expect(personOf("slack:T1:U1", { verified_email: "Alice@acme.com", trusted_teams: ["T1"] })).toBe("access:alice@acme.com");
  });

  it("a Slack user's email joins an access person only for a team in SLACK_EMAIL_TRUSTED_TEAMS", () => {
    expect(personOf("slack:T2:U1", { verified_email: "alice@acme.com", trusted_teams: ["T1"] })).toBe("slack:T2:U1");
    expect(personOf("slack:T1:U1", { verified_email: "alice@acme.com" })).toBe("slack:T1:U1");
    expect(personOf("slack:T1:U1", { verified_email: null, trusted_teams: ["T1"] })).toBe("slack:T1:U1");
  });

  it("a Slack user without a verified email is a person of their own; root, other tokens and services are nobody", () => {
    expect(personOf("slack:T1:U1")).toBe("slack:T1:U1");
    expect(personOf("token:root")).toBeNull();
    expect(personOf("token:root", { owner: "access:a@b.c", owned_by_creator: true })).toBeNull();
    expect(personOf("token:ci")).toBeNull();
    expect(personOf("token:ci", { owner: "token:other" })).toBeNull();
    expect(personOf("access-service:abc.access")).toBeNull();
    // An owner an admin named proves nothing (contract section 19): the token is no person for any vote.
    expect(personOf("token:alice-cli", { owner: "access:alice@acme.com" })).toBeNull();
    expect(personOf("token:bot", { owner: "slack:T1:U2" })).toBeNull();
    expect(personOf("token:bot", { owner: "slack:T1:U2", owned_by_creator: true })).toBeNull();
  });

  it("an owner only restricts: the token is its owner's person for requesters, a slack: owner's through its verified email", () => {
    expect(restrictingPersonOf("token:bot", { owner: "slack:T1:U2" })).toBe("slack:T1:U2");
    expect(restrictingPersonOf("token:bot", { owner: "slack:T1:U2", verified_email: "a@x.io", trusted_teams: ["T1"] })).toBe(
      "access:a@x.io",
    );
    expect(restrictingPersonOf("token:cli", { owner: "access:a@x.io" })).toBe("access:a@x.io");
    expect(restrictingPersonOf("token:root")).toBeNull();
    expect(restrictingPersonOf("token:ci")).toBeNull();
  });

  it("on_behalf_of naming a principal is that principal's person; a bare Slack id is the installation team's user", () => {
    expect(onBehalfOfPrincipal("UALICE", "T0001")).toBe("slack:T0001:UALICE");
    expect(onBehalfOfPerson("UALICE", "T0001", { verified_email: "alice@x.io", trusted_teams: ["T0001"] })).toBe("access:alice@x.io");
    expect(onBehalfOfPerson("slack:T0001:UALICE", "T0001")).toBe("slack:T0001:UALICE");
    expect(onBehalfOfPerson("token:appr-a", null, { owner: "access:alice@x.io", owned_by_creator: true })).toBe("access:alice@x.io");
    expect(onBehalfOfPerson("token:appr-b", null, { owner: "access:alice@x.io" })).toBe("access:alice@x.io");
    expect(onBehalfOfPerson("Alice@X.io", null)).toBe("access:alice@x.io");
    expect(onBehalfOfPerson("chat-user-42", null)).toBe("chat-user-42");
    expect(onBehalfOfPerson("token:gone", null)).toBe("token:gone");
  });

  it("ids not in canonical form are named as such", () => {
    for (const bad of [
      " access:a@x.io",
      "access:a@x.io ",
      "access:a\u200b@x.io",
      "\ufeffUALICE",
      "access:A@x.io",
      "mailto:a@x.io",
      "access:mailto:a@x.io",
      "a\u0000b",
      "cafe\u0301",
    ]) {
      expect(nonCanonicalReason(bad), JSON.stringify(bad)).not.toBeNull();
    }
    for (const good of ["access:a@x.io", "slack:T1:U1", "token:appr-a", "UALICE", "chat-user-42", "caf\u00e9"]) {
      expect(nonCanonicalReason(good), good).toBeNull();
    }
  });
});

describe("effectivePolicy", () => {
  it("the tool's entry over \"*\", field by field, over the contract's defaults", () => {
    expect(effectivePolicy({}, "mcp__a__b")).toEqual({ approvers: null, approvals_required: 1, self_approval: true });
    const toolPolicy = {
      "*": { approvers: ["group:sre"], approvals_required: 2 },
      mcp__a__b: { self_approval: false, approvals_required: 3 },
      mcp__a__c: { approvers: ["token:x"] },
    };
    expect(effectivePolicy(toolPolicy, "mcp__a__b")).toEqual({ approvers: ["group:sre"], approvals_required: 3, self_approval: false });
    expect(effectivePolicy(toolPolicy, "mcp__a__c")).toEqual({ approvers: ["token:x"], approvals_required: 2, self_approval: true });
    expect(effectivePolicy(toolPolicy, "mcp__z__z")).toEqual({ approvers: ["group:sre"], approvals_required: 2, self_approval: true });
    expect(effectivePolicy(toolPolicy, "toString")).toEqual({ approvers: ["group:sre"], approvals_required: 2, self_approval: true });
  });
});

describe("decide", () => {
  const base = { groups: {}, requester, at: AT, votes: [] as Vote[] };

  it("without approvers: an API principal needs the approver role; a Slack user must be the requester or listed", () => {
    expect(decide({ ...base, policy: policy(), decider: api("token:a", null, false), decision: "approve" })).toEqual({
      kind: "refused",
      error: "not_an_approver",
    });
    expect(decide({ ...base, policy: policy(), decider: api("token:root", null), decision: "approve" }).kind).toBe("approved");
    const slack = (id: string, listed: boolean): Decider => ({
      via: "slack",
      principal_id: id,
      person: id,
      listed_in_slack_approvers: listed,
    });
    const slackRun = { ...base, requester: { principal_id: "slack:T1:U1", person: "slack:T1:U1" } };
    expect(decide({ ...slackRun, policy: policy(), decider: slack("slack:T1:U2", false), decision: "deny" }).kind).toBe("refused");
    expect(decide({ ...slackRun, policy: policy(), decider: slack("slack:T1:U2", true), decision: "deny" }).kind).toBe("denied");
    expect(decide({ ...slackRun, policy: policy(), decider: slack("slack:T1:U1", false), decision: "approve" }).kind).toBe("approved");
  });

  it("with approvers: only a match decides, token:root included; API principals still need the role, Slack users only the match", () => {
    const p = policy({ approvers: ["access:*@acme.com"] });
    expect(decide({ ...base, policy: p, decider: api("token:root", null), decision: "deny" })).toEqual({
      kind: "refused",
      error: "not_an_approver",
    });
    expect(decide({ ...base, policy: p, decider: api("access:bob@acme.com", undefined, false), decision: "approve" }).kind).toBe("refused");
    expect(decide({ ...base, policy: p, decider: api("access:bob@acme.com"), decision: "approve" })).toEqual({
      kind: "approved",
      decided_by: "access:bob@acme.com",
      approvals: [{ by: "access:bob@acme.com", person: "access:bob@acme.com", at: AT }],
    });
    const slackP = policy({ approvers: ["slack:T1:U7"] });
    const u7: Decider = { via: "slack", principal_id: "slack:T1:U7", person: "slack:T1:U7", listed_in_slack_approvers: false };
    expect(decide({ ...base, policy: slackP, decider: u7, decision: "approve" }).kind).toBe("approved");
  });

  it("eligibility comes before self-approval: an ineligible requester hears not_an_approver", () => {
    const p = policy({ approvers: ["token:sre-*"], self_approval: false });
    expect(decide({ ...base, policy: p, decider: api("access:req@acme.com"), decision: "approve" })).toEqual({
      kind: "refused",
      error: "not_an_approver",
    });
  });

  it("self_approval: false refuses the requester (by any credential of theirs) and on_behalf_of, but lets them deny", () => {
    const p = policy({ self_approval: false });
    const own = api("token:req-cli", personOf("token:req-cli", { owner: "access:req@acme.com", owned_by_creator: true }));
    expect(decide({ ...base, policy: p, decider: own, decision: "approve" })).toEqual({
      kind: "refused",
      error: "self_approval_forbidden",
    });
    expect(decide({ ...base, policy: p, decider: own, decision: "deny" })).toEqual({ kind: "denied", decided_by: "token:req-cli" });
    const relayed: Requester = {
      principal_id: "token:adapter",
      person: null,
      on_behalf_of: "alice@acme.com",
      on_behalf_of_person: "access:alice@acme.com",
    };
    expect(decide({ ...base, requester: relayed, policy: p, decider: api("access:alice@acme.com"), decision: "approve" }).kind).toBe(
      "refused",
    );
    expect(decide({ ...base, requester: relayed, policy: p, decider: api("token:adapter", null), decision: "approve" }).kind).toBe(
      "refused",
    );
    expect(decide({ ...base, requester: relayed, policy: p, decider: api("access:bob@acme.com"), decision: "approve" }).kind).toBe(
      "approved",
    );
    // Relayed for a principal whose person is alice (issue 28's point 9): alice may not approve through another credential.
    for (const on_behalf_of of ["token:appr-a", "slack:T0001:UALICE", "UALICE"]) {
      const forAlice: Requester = {
        principal_id: "token:adapter",
        person: null,
        on_behalf_of,
        on_behalf_of_person: "access:alice@acme.com",
      };
      expect(decide({ ...base, requester: forAlice, policy: p, decider: api("access:alice@acme.com"), decision: "approve" })).toEqual({
        kind: "refused",
        error: "self_approval_forbidden",
      });
      expect(decide({ ...base, requester: forAlice, policy: p, decider: api("access:alice@acme.com"), decision: "deny" }).kind).toBe(
        "denied",
      );
    }
  });

  it("token:root and ownerless tokens are no person: they never pass self_approval:false, never count towards N > 1", () => {
    expect(decide({ ...base, policy: policy({ self_approval: false }), decider: api("token:root", null), decision: "approve" })).toEqual({
      kind: "refused",
      error: "self_approval_forbidden",
    });
    for (const decision of ["approve", "deny"] as const) {
      expect(decide({ ...base, policy: policy({ approvals_required: 2 }), decider: api("token:ci", null), decision })).toEqual({
        kind: "refused",
        error: "not_an_approver",
      });
    }
  });

  it("two persons resolve a two-person call; the same person twice is a duplicate, by another credential too", () => {
    const p = policy({ approvals_required: 2 });
    const first = decide({ ...base, policy: p, decider: api("access:bob@acme.com"), decision: "approve" });
    expect(first).toEqual({
      kind: "vote_recorded",
      vote: { by: "access:bob@acme.com", person: "access:bob@acme.com", at: AT },
      votes: 1,
      required: 2,
    });
    if (first.kind !== "vote_recorded") return;
    const votes = [first.vote];
    expect(decide({ ...base, votes, policy: p, decider: api("access:bob@acme.com"), decision: "approve" })).toEqual({
      kind: "duplicate_vote",
      votes: 1,
      required: 2,
    });
    const bobsToken = api("token:bob-cli", personOf("token:bob-cli", { owner: "access:bob@acme.com", owned_by_creator: true }));
    expect(decide({ ...base, votes, policy: p, decider: bobsToken, decision: "approve" }).kind).toBe("duplicate_vote");
    const later = "2026-12-01T10:01:00.000Z";
    expect(decide({ ...base, votes, at: later, policy: p, decider: api("access:carol@acme.com"), decision: "approve" })).toEqual({
      kind: "approved",
      decided_by: "access:carol@acme.com",
      approvals: [first.vote, { by: "access:carol@acme.com", person: "access:carol@acme.com", at: later }],
    });
    expect(decide({ ...base, votes, policy: p, decider: api("access:carol@acme.com"), decision: "deny" }).kind).toBe("denied");
  });
});

describe("answering an MCP question (contract section 21)", () => {
  const asked = { groups: {}, requester };
  it("under self_approval: false the requester's person may only decline or cancel; accept is self_approval_forbidden", () => {
    const p = policy({ self_approval: false });
    const own = api("token:req-cli", personOf("token:req-cli", { owner: "access:req@acme.com", owned_by_creator: true }));
    for (const decider of [api("access:req@acme.com"), own]) {
      expect(answerRefusal({ ...asked, policy: p, decider, action: "accept" })).toBe("self_approval_forbidden");
      expect(answerRefusal({ ...asked, policy: p, decider, action: "decline" })).toBeNull();
      expect(answerRefusal({ ...asked, policy: p, decider, action: "cancel" })).toBeNull();
    }
    expect(answerRefusal({ ...asked, policy: p, decider: api("access:bob@acme.com"), action: "accept" })).toBeNull();
    // With self_approval allowed, the requester answers as any eligible approver does.
    expect(answerRefusal({ ...asked, policy: policy(), decider: api("access:req@acme.com"), action: "accept" })).toBeNull();
  });

  it("eligibility first, for every action: an ineligible principal hears not_an_approver", () => {
    const p = policy({ approvers: ["access:lead@acme.com"], self_approval: false });
    for (const action of ["accept", "decline", "cancel"] as const) {
      expect(answerRefusal({ ...asked, policy: p, decider: api("access:bob@acme.com"), action })).toBe("not_an_approver");
      expect(answerRefusal({ ...asked, policy: p, decider: api("access:lead@acme.com", undefined, false), action })).toBe(
        "not_an_approver",
      );
    }
  });
});
