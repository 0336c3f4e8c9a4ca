// One run as GET /runs/{run_id} answers it (contract section 5): declared
// once, here, with zod. The run's object builds it (src/agent/run-engine.ts),
// the Worker and the Slack app read it over RPC, the OpenAPI document
// describes it, and the consumer client's plain type (src/client/types.ts,
// which cannot import zod) is held equal to it by test/unit/run-summary-type.test.ts.
import { z } from "zod";
import { runStatusSchema } from "./listing-schemas";

/** An approval that waits for a person. */
const pendingApprovalSchema = z.object({
  approval_id: z.string(),
  tool_call_id: z.string(),
  tool_name: z.string(),
  expires_at: z.string(),
});

/**
 * A form's requestedSchema: any JSON object (JSON Schema `{type: object}`). Its values are typed one
 * level deep, not `unknown` (that types the summary as never across the run object's RPC) nor as
 * recursive JSON (too deep for it): a type-only narrowing; the schema checks the same.
 */
const requestedSchemaSchema = z.record(z.string(), z.unknown()) as unknown as z.ZodType<
  Record<string, object | string | number | boolean | null>
>;

/** A question that waits for a person: human__ask's, or an MCP tool's mid-call (contract section 21: `input_id`, `requested_schema`). */
const pendingInputSchema = z.object({
  tool_call_id: z.string(),
  question: z.string(),
  expires_at: z.string(),
  input_id: z.string().optional(),
  requested_schema: requestedSchemaSchema.optional(),
});

export const runSummarySchema = z.object({
  run_id: z.string(),
  channel_id: z.string(),
  status: runStatusSchema,
  last_sequence: z.number().int(),
  /** Lowest sequence still retained; last_sequence + 1 once retention dropped every event. */
  earliest_sequence: z.number().int(),
  subscribers: z.number().int(),
  /** The watchers by kind (contract section 27); `subscribers` is their sum. */
  watchers: z.object({ sse: z.number().int(), websocket: z.number().int() }),
  pending_approvals: z.array(pendingApprovalSchema),
  pending_inputs: z.array(pendingInputSchema),
  created_at: z.string(),
  ended_at: z.string().optional(),
  /** The run's user: its requester, or the person an adapter triggered it for. */
  user_id: z.string().optional(),
  request: z.string().optional().meta({ description: "The run's message, secret-looking values redacted, cut as in the runs listing." }),
  requested_by: z.string().optional().meta({ description: "The principal that triggered the run (contract section 18)" }),
  on_behalf_of: z.string().optional().meta({ description: "The person an adapter triggered the run for" }),
  /** Runs started from Slack, while the Slack app is on: posts waiting in the outbox, and posts given up (contract section 14). */
  slack_posts_pending: z.number().int().optional(),
  slack_posts_failed: z.number().int().optional(),
});

export type RunSummary = z.output<typeof runSummarySchema>;
