// The trigger's input (contract section 3), validated with zod. The body is
// the only thing a caller controls about a run; everything here is narrowed
// further by the host config, never widened.
import { z } from "zod";
import { MAX_IDENTIFIER_CHARS } from "../ids";
import { nonCanonicalReason } from "../policy/persons";
import { scriptTurnSchema } from "../wire/trigger-script";

export { type ScriptTurn, scriptTurnSchema } from "../wire/trigger-script";

export const triggerBodySchema = z
  .object({
    message: z.string().min(1).max(32_768),
    channel_id: z.string().min(1).max(MAX_IDENTIFIER_CHARS).default("api"),
    // Absent: the principal. Another user only from an adapter (contract section 18).
    // Contract section 19: an on_behalf_of not in canonical form (padded, invisible characters, mailto:, ...) is 400.
    user_id: z
      .string()
      .min(1)
      .max(MAX_IDENTIFIER_CHARS)
      .superRefine((id, ctx) => {
        const reason = nonCanonicalReason(id);
        if (reason !== null) ctx.addIssue({ code: "custom", message: `not in canonical form: ${reason}` });
      })
      .optional(),
    delivery_id: z.string().min(1).max(MAX_IDENTIFIER_CHARS).optional(),
    max_tool_calls: z.number().int().min(0).optional(),
    script: z.array(scriptTurnSchema).min(1).max(10_000).optional(),
  })
  .strict();
