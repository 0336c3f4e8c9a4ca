// What the routes answer, as zod, for the OpenAPI document (contract
// section 15): the receipts, summaries and results the handlers build. The
// contract's own wire schemas (events, mutation_outcome/v1, listing pages)
// are imported from src/wire where the route table uses them.
import { z } from "zod";
import { roleSchema } from "../auth/roles";
import { runSummarySchema as runSummaryWireSchema } from "../wire/run-summary";

export const receiptSchema = z
  .object({
    status: z.enum(["accepted", "duplicate"]),
    run_id: z.string(),
    channel_id: z.string(),
    events_url: z.string(),
    delivery_id: z.string().optional(),
  })
  .strict()
  .meta({ id: "TriggerReceipt" });

/** GET /runs/{run_id}: the wire's one declaration (src/wire/run-summary.ts), open to fields a newer server adds. */
export const runSummarySchema = runSummaryWireSchema.loose().meta({ id: "RunSummary" });

export const decisionAnswerSchema = z
  .looseObject({ status: z.string().optional(), decision: z.string().optional() })
  .meta({ id: "DecisionAnswer", description: "The decision as recorded (or, on 409/410, why it was not)." });

export const inputAnswerResultSchema = z
  .object({
    tool_call_id: z.string(),
    status: z.literal("answered"),
    input_id: z.string().optional(),
    action: z.enum(["accept", "decline", "cancel"]).optional(),
  })
  .strict()
  .meta({
    id: "InputAnswerResult",
    description: "The answer as recorded; `input_id` and `action` for an MCP question (contract section 21).",
  });

export const deliveryReceiptSchema = z
  .object({ delivery_id: z.string(), run_id: z.string(), channel_id: z.string(), accepted_at: z.string() })
  .strict()
  .meta({ id: "DeliveryReceipt" });

export const storagePoolSchema = z
  .looseObject({ capacity: z.number().int(), in_use: z.number().int() })
  .meta({ id: "StoragePoolStats", description: "The storage pool's slots and counters (contract section 9)." });

const tokenFields = {
  name: z.string(),
  roles: z.array(roleSchema),
  owner: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
};
export const tokenCreatedSchema = z
  .object({ ...tokenFields, token: z.string().meta({ description: "aee_…; shown only in this answer" }) })
  .strict()
  .meta({ id: "TokenCreated" });
export const tokenListSchema = z
  .object({
    tokens: z.array(
      z
        .object({
          ...tokenFields,
          owned_by_creator: z.boolean().meta({ description: "created by its access: owner for themselves (contract section 19)" }),
          last_used_at: z.string().nullable(),
          revoked_at: z.string().nullable(),
        })
        .strict()
        .meta({ id: "TokenListItem" }),
    ),
  })
  .strict()
  .meta({ id: "TokenList" });
