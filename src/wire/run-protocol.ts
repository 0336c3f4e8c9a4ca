// The run protocol (contract sections 6, 19 and 21): a person's action enters
// the run once, typed, with its actor, through the run object's one RPC
// (`act`), and comes back as one verdict that says everything a surface needs
// to render. Surfaces (the HTTP API, Slack, the console through the API) only
// translate: they verify the caller, build the actor, call `act` once and
// render the verdict; the run alone decides. The verdicts of the call state
// machine (src/execution/tool-calls.ts) are the core of ActionVerdict; this
// module adds what only a surface asks for (a confirm step, a stale click, a
// refusal's policy and requester for naming who may decide, a cancel).
//
// The vocabulary the rooms above share is declared here, on the ground floor,
// so they import it downwards: the actor (Decider, Person), the policy in
// force (ApprovalPolicy), an MCP question's answer (QuestionAnswer), the call
// state machine's Verdict and a cancel's CancelResult.
import type { RunSummary } from "./run-summary";

/**
 * The human a principal stands for (contract sections 18-19): a canonical
 * principal id, or null when nothing proves one (src/policy/persons.ts resolves it).
 */
export type Person = string | null;

/** One tool's policy in force (contract section 19). `approvers` null means the default rule (roles, requester, SLACK_APPROVERS). */
export interface ApprovalPolicy {
  approvers: readonly string[] | null;
  approvals_required: number;
  self_approval: boolean;
}

/** Who is deciding, and by which path. */
export type Decider =
  | {
      /** An API, console or CLI principal: needs the `approver` role (the caller says whether it holds it). */
      via: "api";
      principal_id: string;
      person: Person;
      has_approver_role: boolean;
    }
  | {
      /** A Slack user: matches `approvers` only; under the default rule, the requester or listed in SLACK_APPROVERS. */
      via: "slack";
      principal_id: string;
      person: Person;
      listed_in_slack_approvers: boolean;
    };

/** Where a person's action came from, for the audit entries it leads to (contract section 25: `via`, `client_ip` where known). */
export interface ActionOrigin {
  via: "api" | "console" | "slack";
  client_ip?: string;
}

/** A person's answer to one MCP question: the elicitation result sent back (contract section 21). */
export type QuestionAnswer = { action: "accept"; content: Record<string, unknown> } | { action: "decline" } | { action: "cancel" };

/** The answer to a person's decision or answer, in domain terms (src/http/ maps it to a status); made by src/execution/tool-calls.ts. */
export type Verdict =
  | { kind: "resolved"; approval_id: string; decision: "approved" | "denied" }
  /** An approve counted (or repeated by the same person) while more are required (contract section 19). */
  | { kind: "vote_pending"; approval_id: string; votes: number; required: number }
  /** The decider may not decide this approval (section 19); nothing changed. */
  | { kind: "refused"; error: "not_an_approver" | "self_approval_forbidden" }
  | { kind: "answered"; tool_call_id: string }
  /** An MCP question answered (contract section 21), or the same answer repeated. */
  | { kind: "input_answered"; input_id: string; tool_call_id: string; action: QuestionAnswer["action"] }
  /** The accept's content does not fit the question's requested_schema; nothing changed. */
  | { kind: "invalid_answer"; issues: string[] }
  | { kind: "already_resolved"; decision: string; what: "approval" | "question" }
  /** `what: "question"`: an MCP question that can no longer be answered (its call goes on, or has ended). */
  | { kind: "expired"; what?: "question" }
  | { kind: "confirmation_mismatch"; tool_name: string }
  | { kind: "not_found"; what: "approval" | "question"; id: string }
  /** An approve (or an MCP question's accept) while a halt covers the call (contract section 23); nothing changed. */
  | { kind: "halted"; halt_id: string }
  /** The active halts could not be read within STORAGE_WAIT_MS (section 9); nothing changed. */
  | { kind: "storage_timeout" };

/** A run's status (GET /runs/{id}'s `status`). */
export type RunStatus = RunSummary["status"];

/** What a cancel did: nothing (no such run), or the run's status as the cancel found it. */
export type CancelResult = { found: false } | { found: true; status: "cancelling" | RunStatus; already_ended: boolean };

/**
 * `prompt`: the surface shows its own confirm step and a click that cannot
 * act on a pending approval says so: a `confirm` tool approved without
 * `confirmation` is `needs_confirmation` (not `confirmation_mismatch`), and an
 * approval no longer pending is `stale`.
 */
export type PersonAction =
  | { kind: "approve"; approval_id: string; actor: Decider; confirmation?: string; reason?: string; prompt?: true }
  | { kind: "deny"; approval_id: string; actor: Decider; reason?: string; prompt?: true }
  /** human__ask's answer (contract section 6). */
  | { kind: "answer"; tool_call_id: string; answer: string; actor: Decider }
  /** An MCP tool's question mid-call (contract section 21). */
  | { kind: "answer_form"; input_id: string; answer: QuestionAnswer; actor: Decider }
  | { kind: "cancel"; actor: Decider };

export type ActionVerdict =
  | Exclude<Verdict, { kind: "refused" }>
  /** Refused by section 19's rule in force (`policy`), told with the run's requester so a surface can name who may decide. */
  | {
      kind: "refused";
      error: "not_an_approver" | "self_approval_forbidden";
      /** Absent only on a refusal no rule of an approval made (none does today). */
      policy?: ApprovalPolicy;
      /** Contract section 24: the escalation the approval recorded (its `escalate_to` patterns), who may decide too. */
      escalated_to?: string[];
      requester?: { requested_by?: string; user_id: string };
    }
  /** A `confirm` tool approved from a surface with its own confirm step: nothing changed, the step opens. */
  | { kind: "needs_confirmation"; approval_id: string; tool_name: string }
  /** A click on an approval that no longer waits (decided, expired or never asked): nothing changed. */
  | { kind: "stale"; approval_id: string }
  | { kind: "cancel"; result: CancelResult }
  /** No such run (never started, or retention removed it). */
  | { kind: "gone" };
