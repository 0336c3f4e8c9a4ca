// The rounds of questions of one dispatched MCP call (contract section 21),
// as pure transitions over the run's call records, like tool-calls.ts: a
// round is asked (one human_input_requested per question), each question is
// answered once (accept with content that fits its schema, decline, cancel:
// human_input_received), and the round closes when every question is
// answered or one expires; the caller then sends the follow-up with
// `roundResponses`. The call stays `dispatched` throughout (its row keeps
// dispatched: true); its `conversation` (the round, the requestState, the
// sends) is kept with it in the run's storage, so while a person decides
// nothing is in flight and a restart changes nothing.
import { answerIssues, inputIdOf, inputResponsesOf, type AskedQuestion, type QuestionAnswer } from "./mcp-questions";
import {
  isOpen,
  type DecisionResult,
  type Dispatched,
  type Effect,
  type McpConversation,
  type McpQuestion,
  type ToolCall,
} from "./tool-calls";
import type { EventFields } from "../wire/event-schemas";

const emitRequested = (fields: EventFields<"human_input_requested">): Effect => ({ kind: "emit", type: "human_input_requested", fields });
const emitReceived = (fields: EventFields<"human_input_received">): Effect => ({ kind: "emit", type: "human_input_received", fields });

/**
 * Round `conversation.round` of `call`'s questions: each one asked, expiring `timeoutMs` from now
 * (APPROVAL_TIMEOUT_MS), and the conversation kept with the call (phase "waiting").
 */
export function askRound(
  calls: ToolCall[],
  call: Dispatched,
  conversation: McpConversation,
  asked: readonly AskedQuestion[],
  now: number,
  timeoutMs: number,
): Effect[] {
  const { round } = conversation;
  const expiresAt = now + timeoutMs;
  const fresh: McpQuestion[] = asked.map((q) => ({
    input_id: inputIdOf(call.tool_call_id, round, q.key),
    round,
    key: q.key,
    question: q.question,
    requested_schema: q.requested_schema,
    expires_at: expiresAt,
  }));
  replace(calls, call, { ...call, questions: [...(call.questions ?? []), ...fresh], conversation });
  return fresh.map((q) =>
    emitRequested({
      tool_call_id: call.tool_call_id,
      question: q.question,
      expires_at: new Date(q.expires_at).toISOString(),
      input_id: q.input_id,
      requested_schema: q.requested_schema,
    }),
  );
}

/** The call (dispatched or done) that asked question `inputId`, and the question; undefined when none did. */
export function findQuestion(calls: readonly ToolCall[], inputId: string): { call: ToolCall; question: McpQuestion } | undefined {
  for (const call of calls) {
    if (call.state !== "dispatched" && call.state !== "done") continue;
    const question = call.questions?.find((q) => q.input_id === inputId);
    if (question) return { call, question };
  }
  return undefined;
}

/** What answering did: the verdict and events, and the call whose round it closed (its follow-up is due). */
export interface AnswerResult extends DecisionResult {
  closed?: Dispatched;
}

/**
 * A person's answer to one MCP question (eligibility is the caller's to check first). The same
 * answer again gets the same verdict and no event; a different one is already_resolved; past
 * `expires_at` it is expired (and the round closes by expiry, if the alarm has not closed it yet).
 * An open question is answered only while its call's conversation is "waiting" (contract
 * section 21); once a follow-up may be in flight (it was lost to a restart and settles
 * outcome_unknown, section 8) it is expired, with nothing recorded: no answer would ever be sent.
 */
export function answerQuestion(calls: ToolCall[], inputId: string, answer: QuestionAnswer, answeredBy: string, now: number): AnswerResult {
  const found = findQuestion(calls, inputId);
  if (!found) return { verdict: { kind: "not_found", what: "question", id: inputId }, effects: [] };
  const { call, question } = found;
  const answered = { kind: "input_answered" as const, input_id: inputId, tool_call_id: call.tool_call_id, action: answer.action };
  if (question.answer !== undefined) {
    const same = JSON.stringify(question.answer) === JSON.stringify(answer);
    return { verdict: same ? answered : { kind: "already_resolved", decision: question.answer.action, what: "question" }, effects: [] };
  }
  if (question.expired === true || call.state !== "dispatched" || call.conversation?.phase !== "waiting")
    return { verdict: { kind: "expired", what: "question" }, effects: [] };
  if (now >= question.expires_at) {
    const closed = closeByExpiry(calls, call, now);
    return { verdict: { kind: "expired", what: "question" }, effects: [], ...(closed ? { closed } : {}) };
  }
  if (answer.action === "accept") {
    const issues = answerIssues(question.requested_schema, answer.content);
    if (issues !== null) return { verdict: { kind: "invalid_answer", issues }, effects: [] };
  }
  const questions = (call.questions ?? []).map((q) => (q === question ? { ...q, answer, answered_by: answeredBy } : q));
  const next: Dispatched = { ...call, questions };
  replace(calls, call, next);
  const effects = [emitReceived({ tool_call_id: call.tool_call_id, answered_by: answeredBy, input_id: inputId, action: answer.action })];
  const roundOpen = questions.some((q) => q.round === question.round && isOpen(q));
  return { verdict: answered, effects, ...(roundOpen ? {} : { closed: next }) };
}

/** Every dispatched call of the turn whose open round has a question past its time: the round closes (as cancel). */
export function expireQuestions(calls: ToolCall[], turn: number, now: number): Dispatched[] {
  const closed: Dispatched[] = [];
  for (const call of calls) {
    if (call.turn !== turn || call.state !== "dispatched") continue;
    const due = call.questions?.some((q) => isOpen(q) && now >= q.expires_at);
    if (!due) continue;
    const next = closeByExpiry(calls, call, now);
    if (next) closed.push(next);
  }
  return closed;
}

/**
 * The run was cancelled: every open round of the turn closes at once, its unanswered questions
 * going back as cancel (a late answer then gets expired). The call is not abandoned: the
 * server's answer to the follow-up still settles it.
 */
export function cancelQuestions(calls: ToolCall[], turn: number): Dispatched[] {
  const closed: Dispatched[] = [];
  for (const call of calls) {
    if (call.turn !== turn || call.state !== "dispatched" || !call.questions?.some(isOpen)) continue;
    const next: Dispatched = { ...call, questions: call.questions.map((q) => (isOpen(q) ? { ...q, expired: true as const } : q)) };
    replace(calls, call, next);
    closed.push(next);
  }
  return closed;
}

/** The call's conversation as it now stands (a follow-up written ahead: phase "sending"). */
export function keepConversation(calls: ToolCall[], call: Dispatched, conversation: McpConversation): Dispatched {
  const next: Dispatched = { ...call, conversation };
  replace(calls, call, next);
  return next;
}

/** Whether the call's latest round still has a question open for a person. */
export function roundOpen(call: Dispatched): boolean {
  return (call.questions ?? []).some(isOpen);
}

/** The follow-up's `inputResponses` for the call's latest round. */
export function roundResponses(call: Dispatched): Record<string, QuestionAnswer> {
  const questions = call.questions ?? [];
  const latest = questions.reduce((max, q) => Math.max(max, q.round), 0);
  return inputResponsesOf(questions.filter((q) => q.round === latest));
}

/** The questions of the run still waiting for a person, for the run summary. */
export function openQuestions(calls: readonly ToolCall[]): { call: Dispatched; question: McpQuestion }[] {
  const open: { call: Dispatched; question: McpQuestion }[] = [];
  for (const call of calls) {
    if (call.state !== "dispatched") continue;
    for (const question of call.questions ?? []) if (isOpen(question)) open.push({ call, question });
  }
  return open;
}

/** A round ends by expiry: every question of it still open is marked expired (it goes back as cancel). */
function closeByExpiry(calls: ToolCall[], call: Dispatched, now: number): Dispatched | undefined {
  const questions = call.questions ?? [];
  const expiredRound = questions.find((q) => isOpen(q) && now >= q.expires_at)?.round;
  if (expiredRound === undefined) return undefined;
  const next: Dispatched = {
    ...call,
    questions: questions.map((q) => (q.round === expiredRound && isOpen(q) ? { ...q, expired: true as const } : q)),
  };
  replace(calls, call, next);
  return next;
}

function replace(calls: ToolCall[], call: ToolCall, next: ToolCall): void {
  const at = calls.indexOf(call);
  if (at === -1) throw new Error(`call ${call.tool_call_id} is not in this run's calls`);
  calls[at] = next;
}
