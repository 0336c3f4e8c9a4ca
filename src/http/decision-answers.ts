// How the decision routes (contract section 6) answer: the call state
// machine's domain verdicts (src/execution/tool-calls.ts) as HTTP statuses
// and JSON bodies.
import type { Verdict } from "../execution/tool-calls";
import { jsonResponse } from "./api-error";

export function verdictResponse(verdict: Verdict): Response {
  switch (verdict.kind) {
    case "resolved":
      return jsonResponse(200, { approval_id: verdict.approval_id, decision: verdict.decision, status: "resolved" });
    case "answered":
      return jsonResponse(200, { tool_call_id: verdict.tool_call_id, status: "answered" });
    case "already_resolved":
      return jsonResponse(409, {
        error: "already_resolved",
        decision: verdict.decision,
        message:
          verdict.what === "approval"
            ? `This approval was already resolved as ${verdict.decision}.`
            : `This question was already ${verdict.decision}.`,
      });
    case "expired":
      return jsonResponse(410, { error: "expired", message: "The time to decide has passed; the call was not executed." });
    case "confirmation_mismatch":
      return jsonResponse(400, {
        error: "confirmation_mismatch",
        message: `Approving this call needs "confirmation" set to the tool name, ${verdict.tool_name}.`,
      });
    case "not_found":
      return jsonResponse(404, { error: "not_found", message: `No ${verdict.what} ${JSON.stringify(verdict.id)} in this run.` });
  }
}
