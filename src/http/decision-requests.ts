// Inputs of the decision routes (contract section 6), validated with zod. The
// actor fields are optional: the engine records the principal (section 18).
import { z } from "zod";
import { MAX_DECISION_REASON_CHARS } from "../execution/tool-calls";
import { MAX_IDENTIFIER_CHARS } from "../ids";

export const approvalDecisionSchema = z
  .object({
    decision: z.enum(["approve", "deny"]),
    decided_by: z.string().min(1).max(MAX_IDENTIFIER_CHARS).optional(),
    reason: z.string().max(MAX_DECISION_REASON_CHARS).optional(),
    confirmation: z.string().max(MAX_IDENTIFIER_CHARS).optional(),
  })
  .strict();

export const inputAnswerSchema = z
  .object({
    answer: z.string().max(32_768),
    answered_by: z.string().min(1).max(MAX_IDENTIFIER_CHARS).optional(),
  })
  .strict();

/**
 * An answer to an MCP tool's question mid-call (contract section 21), at
 * /inputs/{input_id}: accept with the form's content (checked against the
 * question's requested_schema in the run), decline or cancel.
 */
const answeredBy = z.string().min(1).max(MAX_IDENTIFIER_CHARS).optional();
export const mcpInputAnswerSchema = z.discriminatedUnion("action", [
  z.object({ action: z.literal("accept"), content: z.record(z.string(), z.unknown()), answered_by: answeredBy }).strict(),
  z.object({ action: z.literal("decline"), answered_by: answeredBy }).strict(),
  z.object({ action: z.literal("cancel"), answered_by: answeredBy }).strict(),
]);
