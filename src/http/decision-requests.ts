// Inputs of the decision routes (contract section 6), validated with zod.
import { z } from "zod";

export const approvalDecisionSchema = z
  .object({
    decision: z.enum(["approve", "deny"]),
    decided_by: z.string().min(1).max(200),
    reason: z.string().max(2_000).optional(),
    confirmation: z.string().max(200).optional(),
  })
  .strict();

export const inputAnswerSchema = z
  .object({
    answer: z.string().max(32_768),
    answered_by: z.string().min(1).max(200),
  })
  .strict();
