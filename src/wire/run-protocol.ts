// The run protocol (contract sections 6, 19 and 21): a person's action enters
// the run once, typed, with its actor, through the run object's one RPC
// (`act`), and comes back as one verdict that says everything a surface needs
// to render. Surfaces (the HTTP API, Slack, the console through the API) only
// translate: they verify the caller, build the actor, call `act` once and
// render the verdict; the run alone decides. The verdicts of the call state
// machine (src/execution/tool-calls.ts) are the core of ActionVerdict; this
// module adds what only a surface asks for (a confirm step, a stale click, a
// refusal's policy and requester for naming who may decide, a cancel).
import type { CancelResult } from "../agent/run-record";
import type { QuestionAnswer } from "../execution/mcp-questions";
import type { Verdict } from "../execution/tool-calls";
import type { ApprovalPolicy, Decider } from "../policy/approval-policy";

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
      requester?: { requested_by?: string; user_id: string };
    }
  /** A `confirm` tool approved from a surface with its own confirm step: nothing changed, the step opens. */
  | { kind: "needs_confirmation"; approval_id: string; tool_name: string }
  /** A click on an approval that no longer waits (decided, expired or never asked): nothing changed. */
  | { kind: "stale"; approval_id: string }
  | { kind: "cancel"; result: CancelResult }
  /** No such run (never started, or retention removed it). */
  | { kind: "gone" };
