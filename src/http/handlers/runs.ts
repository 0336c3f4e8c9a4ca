// One run's routes (contract sections 3 and 6): its summary, cancelling it,
// and a person's decision or answer. Each validates the body, builds the
// PersonAction with the request's principal as its actor, calls the run's
// one `act` RPC, and answers its verdict (src/http/decision-answers.ts).
import { z } from "zod";
import { jsonResponse } from "../../base/api-error";
import { actorOf } from "../../auth/actor-fields";
import type { Env } from "../../config/env";
import type { PersonAction } from "../../wire/run-protocol";
import { actionResponse, apiDecider } from "../decision-answers";
import { approvalDecisionSchema, inputAnswerSchema, mcpInputAnswerSchema } from "../decision-requests";
import { readJsonBody, validate } from "../request-body";
import { requestOrigin } from "../request-origin";
import { type ApiRequest, decodePathParam, notFound, runStub } from "../route-spec";

export async function handleGetRun({ params }: ApiRequest, env: Env): Promise<Response> {
  const summary = await runStub(env, params.runId).summary();
  if (!summary) throw notFound("run", params.runId);
  return jsonResponse(200, summary);
}

export async function handleCancel(request: ApiRequest, env: Env): Promise<Response> {
  const { params, principal } = request;
  const verdict = await runStub(env, params.runId).act(
    { kind: "cancel", actor: apiDecider(principal) },
    undefined,
    requestOrigin(principal, request),
  );
  if (verdict.kind !== "cancel" || !verdict.result.found) throw notFound("run", params.runId);
  return jsonResponse(verdict.result.already_ended ? 200 : 202, { status: verdict.result.status });
}

export async function handleApprovalDecision(request: ApiRequest, env: Env): Promise<Response> {
  const { decided_by, decision, ...body } = await readJsonBody(request, approvalDecisionSchema);
  const { principal } = request;
  actorOf(principal, "decided_by", decided_by);
  const id = decodePathParam(request.params.approvalId);
  const actor = apiDecider(principal);
  const reason = body.reason !== undefined ? { reason: body.reason } : {};
  const action: PersonAction =
    decision === "approve"
      ? {
          kind: "approve",
          approval_id: id,
          actor,
          ...reason,
          ...(body.confirmation !== undefined ? { confirmation: body.confirmation } : {}),
        }
      : { kind: "deny", approval_id: id, actor, ...reason };
  return actionResponse(await runStub(env, request.params.runId).act(action, undefined, requestOrigin(principal, request)), "approval", id);
}

export async function handleInputAnswer(request: ApiRequest, env: Env): Promise<Response> {
  // An MCP question's answer names its `action`; anything else is checked as human__ask's, so the issues name its fields.
  const raw = await readJsonBody(request, z.unknown());
  const isAction = typeof raw === "object" && raw !== null && "action" in raw;
  const body = isAction ? validate(mcpInputAnswerSchema, raw) : validate(inputAnswerSchema, raw);
  actorOf(request.principal, "answered_by", body.answered_by);
  const id = decodePathParam(request.params.toolCallId);
  const stub = runStub(env, request.params.runId);
  const actor = apiDecider(request.principal);
  const origin = requestOrigin(request.principal, request);
  if ("answer" in body)
    return actionResponse(
      await stub.act({ kind: "answer", tool_call_id: id, answer: body.answer, actor }, undefined, origin),
      "question",
      id,
    );
  // An MCP tool's question mid-call (contract section 21): only someone eligible to approve the call answers it.
  const answer = body.action === "accept" ? { action: body.action, content: body.content } : { action: body.action };
  return actionResponse(await stub.act({ kind: "answer_form", input_id: id, answer, actor }, undefined, origin), "question", id);
}
