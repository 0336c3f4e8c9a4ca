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
