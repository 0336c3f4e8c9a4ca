// Answering an MCP server's question from Slack (contract sections 14 and 21):
// the pending question (its text and requested_schema) found in the run's
// summary, the answer handed to the run's RPC with the Slack user as the
// decider (the engine decides who may answer: whoever may approve the call),
// and the engine's verdict turned into the modal's errors or an ephemeral.
import type { RunSummary } from "../agent/run-record";
import type { FormField } from "../client/requested-form";
import type { Env } from "../config/env";
import type { QuestionAnswer } from "../execution/mcp-questions";
import type { ActionVerdict } from "../wire/run-protocol";
import { runStubFor } from "../http/start-run";
import type { Decider } from "../policy/approval-policy";
import { decisionReplyText } from "./interactions";
import type { SlackText } from "./slack-text";

export type FormAnswer = QuestionAnswer;

export type PendingForm = { kind: "gone" } | { kind: "stale" } | { kind: "pending"; question: string; requested_schema: unknown };

/** The question `inputId` while it waits: gone with its run, stale once answered or expired. */
export function pendingFormQuestion(summary: RunSummary | null, inputId: string): PendingForm {
  if (summary === null) return { kind: "gone" };
  const listed = summary.pending_inputs.find((q) => q.input_id === inputId);
  return listed === undefined
    ? { kind: "stale" }
    : { kind: "pending", question: listed.question, requested_schema: listed.requested_schema };
}

/** The answer through the run's RPC (the engine checks who may answer and the content against the schema). */
export async function answerFormQuestion(
  env: Env,
  runId: string,
  inputId: string,
  answer: FormAnswer,
  actor: Decider,
): Promise<ActionVerdict> {
  return runStubFor(env, runId).act({ kind: "answer_form", input_id: inputId, answer, actor });
}

/**
 * The engine's issues with accepted content as the modal's errors by field key:
 * an issue naming a field goes under it, the others under the first field.
 * Null when the verdict is no invalid_answer.
 */
export function formVerdictErrors(verdict: ActionVerdict, fields: readonly FormField[]): Record<string, string> | null {
  if (verdict.kind !== "invalid_answer" || fields.length === 0) return null;
  const errors: Record<string, string[]> = {};
  for (const issue of verdict.issues.length > 0 ? verdict.issues : ["The answer does not fit the question's form."]) {
    const named = fields.find((f) => issue.includes(`"${f.key}"`) || issue.startsWith(`${f.key}:`)) ?? fields[0];
    if (named) errors[named.key] = [...(errors[named.key] ?? []), issue];
  }
  return Object.fromEntries(Object.entries(errors).map(([key, issues]) => [key, issues.join(" ")]));
}

/** The ephemeral reply to an answer, or null when the message's own update (or the modal's errors) says it. */
export function formReplyText(verdict: ActionVerdict): SlackText | null {
  return verdict.kind === "invalid_answer" ? null : decisionReplyText(verdict);
}
