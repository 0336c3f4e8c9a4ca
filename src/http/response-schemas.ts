// What the routes answer, as zod, for the OpenAPI document (contract
// section 15): the receipts, summaries and results the handlers build. The
// contract's own wire schemas (events, mutation_outcome/v1, listing pages)
// are imported from src/wire where the route table uses them.
import { z } from "zod";
import { roleSchema } from "../auth/roles";

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

const pendingApproval = z.object({ approval_id: z.string(), tool_call_id: z.string(), tool_name: z.string(), expires_at: z.string() });
const pendingInput = z.object({
  tool_call_id: z.string(),
  question: z.string(),
  expires_at: z.string(),
  // Contract section 21: an MCP tool's question mid-call.
  input_id: z.string().optional(),
  requested_schema: z.record(z.string(), z.unknown()).optional(),
});
export const runSummarySchema = z
  .looseObject({
    run_id: z.string(),
    channel_id: z.string(),
    status: z.enum(["running", "completed", "failed"]),
    last_sequence: z.number().int(),
    subscribers: z.number().int(),
    pending_approvals: z.array(pendingApproval),
    pending_inputs: z.array(pendingInput),
    created_at: z.string(),
    ended_at: z.string().optional(),
    user_id: z.string().optional(),
    request: z.string().optional().meta({ description: "The run's message, secret-looking values redacted, cut as in the runs listing." }),
    requested_by: z.string().optional().meta({ description: "The principal that triggered the run (contract section 18)" }),
    on_behalf_of: z.string().optional().meta({ description: "The person an adapter triggered the run for" }),
    slack_posts_pending: z.number().int().optional(),
    slack_posts_failed: z.number().int().optional(),
  })
  .meta({ id: "RunSummary" });

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
