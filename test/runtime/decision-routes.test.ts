// The decision routes' refusals (contract section 6), through the Worker with
// the engine client: unknown runs, approvals and questions are 404, bodies
// that break the schema are 400 with the issues in `details`, and none of
// them changes the run.
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/client";
import { engine, runStub } from "./helpers";

const UNKNOWN_RUN = "run_01ARZ3NDEKTSV4RRFFQ69G5FAV";

async function refusal(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    (value) => new Error(`expected a refusal, got ${JSON.stringify(value)}`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe("decision routes", () => {
  it("answer 404 for an unknown run, approval or question", async () => {
    expect(await refusal(engine.decideApproval(UNKNOWN_RUN, "approval_x", { decision: "approve" }))).toMatchObject({
      status: 404,
      code: "not_found",
    });
    expect(await refusal(engine.answerInput(UNKNOWN_RUN, "ask-1", { answer: "a" }))).toMatchObject({
      status: 404,
      code: "not_found",
    });
    expect(await refusal(engine.decideApproval("not-a-run-id", "approval_x", { decision: "deny" }))).toMatchObject({
      status: 404,
    });
    expect(await refusal(engine.cancel(UNKNOWN_RUN))).toMatchObject({ status: 404, code: "not_found" });

    const { run_id: runId } = await engine.trigger({
      message: "m",
      script: [{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "?" } }] }],
    });
    await expect.poll(async () => (await engine.summary(runId)).pending_inputs.length).toBe(1);
    const before = (await engine.summary(runId)).last_sequence;
    expect(await refusal(engine.decideApproval(runId, "approval_unknown", { decision: "approve" }))).toMatchObject({
      status: 404,
    });
    // A question is not an approval, and an approval id is not a question.
    expect(await refusal(engine.decideApproval(runId, "ask-1", { decision: "approve" }))).toMatchObject({ status: 404 });
    expect(await refusal(engine.answerInput(runId, "ask-2", { answer: "a" }))).toMatchObject({ status: 404 });
    const after = await engine.summary(runId);
    expect(after.last_sequence).toBe(before);
    expect(after.pending_inputs).toHaveLength(1);
    await engine.cancel(runId);
  });

  it("answer 400 with the validation issues for a body that breaks the schema", async () => {
    const { run_id: runId } = await engine.trigger({
      message: "m",
      script: [{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "?" } }] }],
    });
    const post = (path: string, body: unknown) => engine.raw(path, { method: "POST", body: JSON.stringify(body) });
    const cases: [string, unknown, string][] = [
      [`/api/runs/${runId}/approvals/approval_x`, { decision: "maybe" }, "decision"],
      [`/api/runs/${runId}/approvals/approval_x`, {}, "decision"],
      [`/api/runs/${runId}/approvals/approval_x`, { decision: "approve", decided_by: "" }, "decided_by"],
      [`/api/runs/${runId}/approvals/approval_x`, { decision: "approve", extra: 1 }, "extra"],
      [`/api/runs/${runId}/inputs/ask-1`, {}, "answer"],
      [`/api/runs/${runId}/inputs/ask-1`, { answer: 42 }, "answer"],
      [`/api/runs/${runId}/inputs/ask-1`, { answer: "a", answered_by: "" }, "answered_by"],
    ];
    for (const [path, body, field] of cases) {
      const res = await post(path, body);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      const error = (await res.json()) as { error: string; details: unknown };
      expect(error.error).toBe("invalid_request");
      expect(JSON.stringify(error.details)).toContain(field);
    }
    const notJson = await engine.raw(`/api/runs/${runId}/inputs/ask-1`, { method: "POST", body: "{" });
    expect(notJson.status).toBe(400);
    // The question is still waiting: nothing above answered it.
    expect((await engine.summary(runId)).pending_inputs).toEqual([expect.objectContaining({ tool_call_id: "ask-1" })]);
    await engine.cancel(runId);
  });

  it("a human__ask answer from Slack is judged by the run: a Slack user neither its requester nor in SLACK_APPROVERS is refused, one listed there answers", async () => {
    // Contract section 19: a human__ask question is answered in Slack by the run's requester or SLACK_APPROVERS.
    // The run is the API's (requested_by token:root), so only a listed Slack user may answer it.
    const { run_id: runId } = await engine.trigger({
      message: "m",
      script: [{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "?" } }] }],
    });
    await expect.poll(async () => (await engine.summary(runId)).pending_inputs.length).toBe(1);
    const slackUser = (user: string, listed: boolean) =>
      ({ via: "slack", principal_id: `slack:T0001:${user}`, person: `slack:T0001:${user}`, listed_in_slack_approvers: listed }) as const;
    const before = (await engine.summary(runId)).last_sequence;
    const refused = await runStub(runId).act({ kind: "answer", tool_call_id: "ask-1", answer: "a", actor: slackUser("USTRANGER", false) });
    expect(refused).toMatchObject({ kind: "refused", error: "not_an_approver", requester: { requested_by: "token:root" } });
    const unchanged = await engine.summary(runId);
    expect(unchanged.last_sequence).toBe(before);
    expect(unchanged.pending_inputs).toHaveLength(1);
    const taken = await runStub(runId).act({ kind: "answer", tool_call_id: "ask-1", answer: "b", actor: slackUser("UAPPROVER", true) });
    expect(taken).toMatchObject({ kind: "answered", tool_call_id: "ask-1" });
    await engine.cancel(runId);
  });
});
