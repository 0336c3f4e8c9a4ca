// Property tests of the eligibility module (src/policy/approval-policy.ts),
// driven the way a decision path drives it: each verdict's vote is kept, a
// resolution ends the approval. The invariants are section 19's: nothing
// resolves approved with fewer than N distinct eligible persons; a requester's
// vote never counts under self_approval: false; one eligible deny ends it;
// an ineligible or no-person decider never changes anything.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ApprovalPolicy, type Decider, decide, isEligible, type Requester, type Vote } from "../../src/policy/approval-policy";
import { personOf } from "../../src/policy/persons";

const RUNS = 1_000;
const AT = "2026-12-01T10:00:00.000Z";

/** A small world of credentials, several of them the same person. */
const CREDENTIALS: { id: string; owner?: string; owned_by_creator?: boolean; verified_email?: string; trusted_teams?: string[] }[] = [
  { id: "token:root" },
  { id: "token:ci" },
  { id: "token:alice-cli", owner: "access:alice@acme.com", owned_by_creator: true },
  // Made by an admin for alice: proves nothing (contract section 19).
  { id: "token:alice-admin-made", owner: "slack:T1:UALICE" },
  { id: "access:alice@acme.com" },
  { id: "access:ALICE@acme.com" },
  { id: "slack:T1:UALICE", verified_email: "alice@acme.com", trusted_teams: ["T1"] },
  { id: "access:bob@acme.com" },
  { id: "token:bob-cli", owner: "access:bob@acme.com", owned_by_creator: true },
  { id: "slack:T1:UCAROL" },
  { id: "access:dave@other.io" },
  { id: "token:sre-eve", owner: "access:eve@acme.com", owned_by_creator: true },
  { id: "access-service:svc.access" },
];

const REQUESTERS: Requester[] = [
  { principal_id: "access:alice@acme.com", person: "access:alice@acme.com" },
  { principal_id: "slack:T1:UCAROL", person: "slack:T1:UCAROL" },
  { principal_id: "token:root", person: null },
  { principal_id: "token:adapter", person: null, on_behalf_of: "bob@acme.com", on_behalf_of_person: "access:bob@acme.com" },
];

const policyArb: fc.Arbitrary<ApprovalPolicy> = fc.record({
  approvers: fc.option(
    fc.subarray(["access:*@acme.com", "token:*", "slack:T1:*", "group:leads", "access:dave@other.io"], { minLength: 1 }),
    {
      nil: null,
    },
  ),
  approvals_required: fc.integer({ min: 1, max: 5 }),
  self_approval: fc.boolean(),
});
const GROUPS = { leads: ["access:bob@acme.com", "slack:T1:UCAROL"] };

const stepArb = fc.record({
  who: fc.integer({ min: 0, max: CREDENTIALS.length - 1 }),
  via: fc.constantFrom("api" as const, "slack" as const),
  role: fc.boolean(),
  listed: fc.boolean(),
  decision: fc.constantFrom("approve" as const, "deny" as const),
});

function deciderOf(step: { who: number; via: "api" | "slack"; role: boolean; listed: boolean }): Decider {
  const c = CREDENTIALS[step.who]!;
  const person = personOf(c.id, c);
  return step.via === "api"
    ? { via: "api", principal_id: c.id, person, has_approver_role: step.role }
    : { via: "slack", principal_id: c.id, person, listed_in_slack_approvers: step.listed };
}

describe("approval-policy properties", () => {
  it("holds the invariants of section 19 over any sequence of decisions", () => {
    fc.assert(
      fc.property(policyArb, fc.constantFrom(...REQUESTERS), fc.array(stepArb, { maxLength: 20 }), (policy, requester, steps) => {
        const votes: Vote[] = [];
        const eligibleVoters: Decider[] = [];
        for (const step of steps) {
          const decider = deciderOf(step);
          const verdict = decide({ policy, groups: GROUPS, decider, requester, decision: step.decision, votes, at: AT });
          const eligible = isEligible(policy, GROUPS, decider, requester);
          if (!eligible) {
            // Eligibility first: an ineligible principal learns nothing, changes nothing.
            expect(verdict).toEqual({ kind: "refused", error: "not_an_approver" });
            continue;
          }
          if (step.decision === "deny") {
            expect(verdict.kind).toBe("denied");
            return;
          }
          if (verdict.kind === "refused") {
            expect(verdict.error).toBe("self_approval_forbidden");
            expect(policy.self_approval).toBe(false);
            continue;
          }
          // Anything counted under self_approval: false is neither the requester nor nobody.
          if (!policy.self_approval) {
            expect(decider.person).not.toBeNull();
            expect([requester.person, requester.on_behalf_of_person]).not.toContain(decider.person);
            expect(decider.principal_id).not.toBe(requester.principal_id);
          }
          if (policy.approvals_required > 1) expect(decider.person).not.toBeNull();
          if (verdict.kind === "duplicate_vote") {
            expect(verdict.votes).toBe(votes.length);
            continue;
          }
          eligibleVoters.push(decider);
          if (verdict.kind === "vote_recorded") {
            votes.push(verdict.vote);
            expect(verdict.votes).toBe(votes.length);
            expect(verdict.votes).toBeLessThan(policy.approvals_required);
            continue;
          }
          if (verdict.kind !== "approved") throw new Error(`unexpected verdict ${verdict.kind} for an approve`);
          // Approved: at least N distinct persons, every one of them an eligible voter of this sequence.
          const persons = new Set(verdict.approvals.map((v) => v.person));
          expect(persons.size).toBe(verdict.approvals.length);
          expect(persons.size).toBeGreaterThanOrEqual(policy.approvals_required);
          for (const vote of verdict.approvals) expect(eligibleVoters.map((d) => d.principal_id)).toContain(vote.by);
          expect(verdict.decided_by).toBe(decider.principal_id);
          return;
        }
        expect(votes.length).toBeLessThan(policy.approvals_required);
      }),
      { numRuns: RUNS },
    );
  });
});
