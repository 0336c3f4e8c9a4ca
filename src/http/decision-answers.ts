// How the decision routes (contract section 6) answer: the call state
// machine's domain verdicts (src/execution/tool-calls.ts) as HTTP statuses
// and JSON bodies.
import type { Principal } from "../auth/principal";
import { grants } from "../auth/roles";
import type { Verdict } from "../execution/tool-calls";
import type { ActionVerdict } from "../wire/run-protocol";
import type { Decider } from "../policy/approval-policy";
import { personOf } from "../policy/persons";
import { errorJson, jsonResponse } from "../base/api-error";

/** An API, console or CLI principal as the eligibility module sees it (contract section 19). */
export function apiDecider(principal: Principal): Decider {
  return {
    via: "api",
    principal_id: principal.id,
    person: personOf(principal.id, { owner: principal.owner, owned_by_creator: principal.owned_by_creator }),
    has_approver_role: grants(principal.roles, "approver"),
  };
}

/**
 * The run's verdict on an action from the API (contract section 6): a run that is gone is the
 * approval or question not found in it, as before there was one RPC. The API never asks for a
 * surface's own steps (no `prompt`), so `stale` and `needs_confirmation` only come from Slack.
 */
export function actionResponse(verdict: ActionVerdict, what: "approval" | "question", id: string): Response {
  switch (verdict.kind) {
    case "gone":
    case "stale":
      return verdictResponse({ kind: "not_found", what, id });
    case "needs_confirmation":
      return verdictResponse({ kind: "confirmation_mismatch", tool_name: verdict.tool_name });
    case "cancel":
      // A cancel is answered by its own route from the run's CancelResult.
      return jsonResponse(202, { status: verdict.result.found ? verdict.result.status : "cancelling" });
    default:
      return verdictResponse(verdict);
  }
}

function verdictResponse(verdict: Verdict): Response {
  switch (verdict.kind) {
    case "resolved":
      return jsonResponse(200, { approval_id: verdict.approval_id, decision: verdict.decision, status: "resolved" });
    case "vote_pending":
      return jsonResponse(200, {
        approval_id: verdict.approval_id,
        decision: "approved",
        status: "pending",
        votes: verdict.votes,
        required: verdict.required,
      });
    case "refused":
      return errorJson(403, {
        error: verdict.error,
        message:
          verdict.error === "not_an_approver"
            ? "This tool's approval policy does not let you decide this approval (TOOL_POLICY approvers; a credential that is no person never counts towards approvals_required > 1). Nothing was changed."
            : "This tool's policy forbids self-approval: the run's requester (and a credential that is no person) may deny but not approve. Ask another approver. Nothing was changed.",
      });
    case "answered":
      return jsonResponse(200, { tool_call_id: verdict.tool_call_id, status: "answered" });
    case "input_answered":
      return jsonResponse(200, {
        input_id: verdict.input_id,
        tool_call_id: verdict.tool_call_id,
        action: verdict.action,
        status: "answered",
      });
    case "invalid_answer":
      return errorJson(400, {
        error: "invalid_answer",
        message: "The answer's content does not fit the question's requested_schema; fix it and send it again. Nothing was changed.",
        details: verdict.issues,
      });
    case "already_resolved":
      return errorJson(409, {
        error: "already_resolved",
        decision: verdict.decision,
        message:
          verdict.what === "approval"
            ? `This approval was already resolved as ${verdict.decision}.`
            : `This question was already ${verdict.decision}.`,
      });
    case "expired":
      return errorJson(410, {
        error: "expired",
        message:
          verdict.what === "question"
            ? "This question can no longer be answered: its time passed, its round closed, or its call ended (as it does when the engine restarts while that call's follow-up may be in flight); this answer was not sent. Nothing was changed."
            : "The time to decide has passed; the call was not executed.",
      });
    case "confirmation_mismatch":
      return errorJson(400, {
        error: "confirmation_mismatch",
        message: `Approving this call needs "confirmation" set to the tool name, ${verdict.tool_name}.`,
      });
    case "not_found":
      return errorJson(404, { error: "not_found", message: `No ${verdict.what} ${JSON.stringify(verdict.id)} in this run.` });
    case "halted":
      return errorJson(409, {
        error: "halted",
        halt_id: verdict.halt_id,
        message: `Mutations in this call's scope are halted (${verdict.halt_id}); an approve or accept is refused until the halt is released. A deny is still taken. Nothing was changed.`,
      });
    case "storage_timeout":
      return errorJson(
        503,
        {
          error: "storage_timeout",
          message: "Storage did not answer in time while checking for halts; nothing was changed. Try again shortly.",
        },
        { "retry-after": "1" },
      );
  }
}
