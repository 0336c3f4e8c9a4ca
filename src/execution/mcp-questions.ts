// Questions an MCP tool asks mid-call (contract section 21), as pure
// functions: which of a server's `inputRequests` the engine can ask a person
// (form-mode elicitation only; anything else is `input_unsupported`), the
// `input_id` of each question, whether an answer's content fits the form's
// `requested_schema`, and the `inputResponses` a finished round sends back
// (an unanswered or expired question goes back as `cancel`). The call state
// machine (mcp-rounds.ts) keeps the questions on the dispatched call.
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/client/validators/cf-worker";
import { z } from "zod";
import { redactText } from "./redaction";
import type { QuestionAnswer } from "../wire/run-protocol";

/** One form elicitation of an input_required answer, as a question to a person. */
export interface AskedQuestion {
  /** The server's key in `inputRequests`; the answer goes back under it in `inputResponses`. */
  key: string;
  /** The elicitation's `message`, redacted (it leaves the engine on the stream, in Slack and the console). */
  question: string;
  /** The elicitation's `requestedSchema` as the server gave it. */
  requested_schema: Record<string, unknown>;
}

export type ParsedInputRequests = { kind: "questions"; questions: AskedQuestion[] } | { kind: "unsupported"; message: string };

/** A person's answer to one question: the elicitation result sent back (contract section 21); declared on the ground floor. */
export type { QuestionAnswer };

/** Keys longer than this are not a sane form key; the input_id must stay usable in a URL path. */
const MAX_KEY_CHARS = 200;

/**
 * A form elicitation as the 2026-07-28 revision embeds it: `elicitation/create` with mode
 * `form` (or no mode), a message and a flat object schema. URL mode, sampling and roots are
 * requests this engine never declared (its capabilities are form elicitation only).
 */
const formElicitationSchema = z.object({
  method: z.literal("elicitation/create"),
  params: z
    .object({
      mode: z.literal("form").optional(),
      message: z.string(),
      requestedSchema: z.looseObject({ type: z.literal("object"), properties: z.record(z.string(), z.unknown()) }),
    })
    .loose(),
});

/** The questions of one input_required answer, or why the engine cannot ask them. */
export function parseInputRequests(inputRequests: Record<string, unknown>): ParsedInputRequests {
  const questions: AskedQuestion[] = [];
  for (const [key, request] of Object.entries(inputRequests)) {
    if (key.length === 0 || key.length > MAX_KEY_CHARS) return { kind: "unsupported", message: "an input request has an unusable key" };
    const form = formElicitationSchema.safeParse(request);
    if (!form.success) {
      const method = (request as { method?: unknown } | null)?.method;
      const what = typeof method === "string" ? redactText(method).slice(0, 64) : "a malformed request";
      return {
        kind: "unsupported",
        message: `the server asked for input this engine does not declare (${what}, key ${JSON.stringify(key.slice(0, 64))})`,
      };
    }
    questions.push({
      key,
      question: redactText(form.data.params.message),
      requested_schema: form.data.params.requestedSchema as Record<string, unknown>,
    });
  }
  return { kind: "questions", questions };
}

/** Contract section 21: `<tool_call_id>:<round>:<key>`. */
export function inputIdOf(toolCallId: string, round: number, key: string): string {
  return `${toolCallId}:${round}:${key}`;
}

/** An elicitation result's content values (the revision's ElicitResult: string, number, boolean or a list of strings). */
const contentValueSchema = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]);

/**
 * Whether `content` answers the form: the revision's value types (a multi-select's list without
 * repeats), then the server's
 * `requested_schema` (the SDK's own Workers-safe JSON Schema validator; the default one
 * compiles with `new Function`, which workerd forbids). Null when it fits, else the issues.
 */
export function answerIssues(schema: Record<string, unknown>, content: Record<string, unknown>): string[] | null {
  const issues: string[] = [];
  for (const [name, value] of Object.entries(content)) {
    if (!contentValueSchema.safeParse(value).success) issues.push(`${name}: must be a string, number, boolean or list of strings`);
    // A list answers a multi-select enum (the revision's only array property): each option is chosen once or not at all.
    else if (Array.isArray(value) && new Set(value).size !== value.length) issues.push(`${name}: must choose each option at most once`);
  }
  if (issues.length > 0) return issues;
  let verdict: { valid: boolean; errorMessage?: string };
  try {
    verdict = new CfWorkerJsonSchemaValidator().getValidator(schema as never)(content);
  } catch (err) {
    return [`the question's requested_schema cannot be checked: ${(err as Error).message}`];
  }
  return verdict.valid ? null : [verdict.errorMessage ?? "content does not match requested_schema"];
}

/** The follow-up's `inputResponses`: each question's answer under its key, `cancel` for one left unanswered. */
export function inputResponsesOf(questions: readonly { key: string; answer?: QuestionAnswer }[]): Record<string, QuestionAnswer> {
  const responses: Record<string, QuestionAnswer> = {};
  for (const q of questions) responses[q.key] = q.answer ?? { action: "cancel" };
  return responses;
}
