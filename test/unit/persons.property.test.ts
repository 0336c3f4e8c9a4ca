// Property tests of the one person resolution (src/policy/persons.ts) and the
// approval rule over it (src/policy/approval-policy.ts), contract sections
// 18, 19 and 21: for any set of credentials of one person, that person counts
// once; under self_approval: false no credential of the requester's person
// (or of its on_behalf_of's) approves, or accepts the call's MCP question,
// while they may still deny, decline or cancel. The requester is built the
// way the trigger builds it (restricting persons, on_behalf_of resolved), so
// the chain from credential to verdict is what is tested.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerRefusal, type ApprovalPolicy, type Decider, decide, runRequester, type Vote } from "../../src/policy/approval-policy";
import { onBehalfOfPerson, type PersonFacts, personOf, restrictingPersonOf } from "../../src/policy/persons";

const RUNS = 500;
const AT = "2026-12-01T10:00:00.000Z";
const TEAM = "T0001";

/** One credential: a principal id and what the engine knows about it (a token's row, a Slack user's email). */
interface Credential {
  id: string;
  facts: PersonFacts;
}

const localArb = fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/);
const emailArb = fc.tuple(localArb, fc.constantFrom("acme.com", "example.org")).map(([l, d]) => `${l}@${d}`);
const slackUserArb = fc.stringMatching(/^U[A-Z0-9]{3,8}$/);
const tokenNameArb = fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/);

/** Every credential one person (`access:<email>`, Slack user `user` of TEAM with that verified email) may hold. */
function credentialsOf(email: string, user: string, tokens: string[]): { proven: Credential[]; unproven: Credential[] } {
  const slack = `slack:${TEAM}:${user}`;
  const slackFacts = { verified_email: email, trusted_teams: [TEAM] };
  const proven: Credential[] = [
    { id: `access:${email}`, facts: {} },
    { id: `access:${email.toUpperCase()}`, facts: {} },
    { id: slack, facts: slackFacts },
    // Minted by the person for themselves: that person.
    ...tokens.map((t) => ({ id: `token:${t}-own`, facts: { owner: `access:${email}`, owned_by_creator: true } })),
  ];
  const unproven: Credential[] = [
    // Made by an admin with the person as owner: no person (it only restricts).
    ...tokens.map((t) => ({ id: `token:${t}-adm`, facts: { owner: `access:${email}` } })),
    ...tokens.map((t) => ({ id: `token:${t}-slk`, facts: { owner: slack, ...slackFacts } })),
  ];
  return { proven, unproven };
}

/** Every way a run may name that person as its requester's or on_behalf_of. */
function namesOf(email: string, user: string, tokens: string[]): { value: string; facts: PersonFacts }[] {
  const slackFacts = { verified_email: email, trusted_teams: [TEAM] };
  return [
    { value: `access:${email}`, facts: {} },
    { value: email, facts: {} },
    { value: `slack:${TEAM}:${user}`, facts: slackFacts },
    { value: user, facts: slackFacts },
    ...tokens.map((t) => ({ value: `token:${t}-own`, facts: { owner: `access:${email}`, owned_by_creator: true } })),
    ...tokens.map((t) => ({ value: `token:${t}-adm`, facts: { owner: `access:${email}` } })),
    ...tokens.map((t) => ({ value: `token:${t}-slk`, facts: { owner: `slack:${TEAM}:${user}`, ...slackFacts } })),
  ];
}

const api = (c: Credential): Decider => ({ via: "api", principal_id: c.id, person: personOf(c.id, c.facts), has_approver_role: true });
const slackDecider = (c: Credential): Decider => ({
  via: "slack",
  principal_id: c.id,
  person: personOf(c.id, c.facts),
  listed_in_slack_approvers: true,
});
const asDecider = (c: Credential): Decider => (c.id.startsWith("slack:") ? slackDecider(c) : api(c));

const personArb = fc.record({ email: emailArb, user: slackUserArb, tokens: fc.uniqueArray(tokenNameArb, { minLength: 1, maxLength: 3 }) });

describe("one person resolution", () => {
  it("every credential of one person resolves to one person, or to nobody; none to anyone else", () => {
    fc.assert(
      fc.property(personArb, ({ email, user, tokens }) => {
        const { proven, unproven } = credentialsOf(email, user, tokens);
        expect(new Set(proven.map((c) => personOf(c.id, c.facts)))).toEqual(new Set([`access:${email}`]));
        for (const c of unproven) {
          expect(personOf(c.id, c.facts)).toBeNull();
          // ... and yet it holds its owner's person back.
          expect(restrictingPersonOf(c.id, c.facts)).toBe(`access:${email}`);
        }
        for (const name of namesOf(email, user, tokens)) expect(onBehalfOfPerson(name.value, TEAM, name.facts)).toBe(`access:${email}`);
      }),
      { numRuns: RUNS },
    );
  });

  it("any sequence of one person's approves counts once towards approvals_required", () => {
    fc.assert(
      fc.property(
        personArb,
        fc.integer({ min: 2, max: 5 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 12 }),
        ({ email, user, tokens }, required, picks) => {
          const { proven, unproven } = credentialsOf(email, user, tokens);
          const all = [...proven, ...unproven];
          const policy: ApprovalPolicy = { approvers: null, approvals_required: required, self_approval: true };
          const requester = runRequester({ user_id: "access:req@else.io", requested_by: "access:req@else.io" });
          const votes: Vote[] = [];
          for (const pick of picks) {
            const decider = asDecider(all[pick % all.length]!);
            const verdict = decide({ policy, groups: {}, decider, requester, decision: "approve", votes, at: AT });
            expect(verdict.kind).not.toBe("approved");
            if (verdict.kind === "vote_recorded") votes.push(verdict.vote);
            if (decider.person === null) expect(verdict).toEqual({ kind: "refused", error: "not_an_approver" });
          }
          expect(votes.length).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("under self_approval: false no credential of the requester's person, or of its on_behalf_of's, approves or accepts", () => {
    fc.assert(
      fc.property(
        personArb,
        fc.nat(),
        fc.boolean(),
        fc.nat(),
        fc.integer({ min: 1, max: 5 }),
        ({ email, user, tokens }, nameAt, relayed, deciderAt, required) => {
          // A requester is a principal; an on_behalf_of may also be a bare email or Slack user id.
          const names = namesOf(email, user, tokens).filter((n) => relayed || n.value.includes(":"));
          const name = names[nameAt % names.length]!;
          // The run as the trigger records it: the requester's restricting person, or an adapter relaying for the person.
          const requester = relayed
            ? runRequester({
                user_id: name.value,
                requested_by: "token:adapter",
                requester_person: null,
                on_behalf_of: name.value,
                on_behalf_of_person: onBehalfOfPerson(name.value, TEAM, name.facts),
              })
            : runRequester({
                user_id: name.value,
                requested_by: name.value,
                requester_person: restrictingPersonOf(name.value, name.facts),
              });
          const { proven, unproven } = credentialsOf(email, user, tokens);
          const all = [...proven, ...unproven];
          const decider = asDecider(all[deciderAt % all.length]!);
          const policy: ApprovalPolicy = { approvers: null, approvals_required: required, self_approval: false };
          const asked = { policy, groups: {}, decider, requester };
          const approve = decide({ ...asked, decision: "approve", votes: [], at: AT });
          expect(approve.kind).toBe("refused");
          expect(answerRefusal({ ...asked, action: "accept" })).not.toBeNull();
          // They may still say no, when they are eligible at all.
          if (approve.kind === "refused" && approve.error === "self_approval_forbidden") {
            expect(decide({ ...asked, decision: "deny", votes: [], at: AT }).kind).toBe("denied");
            expect(answerRefusal({ ...asked, action: "decline" })).toBeNull();
            expect(answerRefusal({ ...asked, action: "cancel" })).toBeNull();
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("under self_approval: false another proven person still approves and accepts", () => {
    fc.assert(
      fc.property(personArb, emailArb, (someone, other) => {
        fc.pre(other !== someone.email);
        const requester = runRequester({ user_id: `access:${someone.email}`, requested_by: `access:${someone.email}` });
        const policy: ApprovalPolicy = { approvers: null, approvals_required: 1, self_approval: false };
        const decider = api({ id: `access:${other}`, facts: {} });
        expect(decide({ policy, groups: {}, decider, requester, decision: "approve", votes: [], at: AT }).kind).toBe("approved");
        expect(answerRefusal({ policy, groups: {}, decider, requester, action: "accept" })).toBeNull();
      }),
      { numRuns: RUNS },
    );
  });
});
