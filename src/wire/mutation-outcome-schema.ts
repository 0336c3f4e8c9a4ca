// The machine-readable `mutation_outcome/v1` projection (contract section 8):
// the zod schema every route that answers a projection is documented with,
// and the source of schemas/mutation_outcome.v1.json. Strict: a key the
// contract does not name is a failure, and optional keys are absent, never null.
import { z } from "zod";
import { resultFactsSchema } from "./event-schemas";

/** The row projection's `schema` (contract section 8). */
export const MUTATION_OUTCOME_SCHEMA = "mutation_outcome/v1";

const isoTime = z.iso.datetime();

export const mutationStateSchema = z.enum(["unresolved", "not_executed", "completed", "outcome_unknown"]);

const reconciliationSchema = z
  .object({
    outcome: z.enum(["completed", "not_executed"]),
    reconciled_by: z.string(),
    evidence: z.string(),
    at: isoTime,
  })
  .strict();

/** The projection's fields; `times` lets the fixture projection (section 12) swap its placeholders in. */
export function mutationOutcomeShape<C extends z.ZodType, S extends z.ZodType, A extends z.ZodType>(times: {
  created_at: C;
  settled_at: S;
  approved_at: A;
}) {
  return {
    schema: z.literal(MUTATION_OUTCOME_SCHEMA),
    mutation_id: z.string(),
    run_id: z.string(),
    channel_id: z.string(),
    delivery_id: z.string().nullable(),
    tool_call_id: z.string(),
    /** null for an automatic approval. */
    approval_id: z.string().nullable(),
    tool_name: z.string(),
    arguments_digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    /** The decision's decided_by, or "automatic"; null only on rows written before the engine recorded it. */
    approved_by: z.string().nullable(),
    /** When the call was approved; null like approved_by. */
    approved_at: times.approved_at.nullable(),
    /** Every counted approve, in order ([] for an automatic approval; contract section 19); absent on rows written before it. */
    approvals: z.array(z.object({ by: z.string(), at: times.approved_at }).strict()).optional(),
    state: mutationStateSchema,
    dispatched: z.boolean(),
    /** How many tools/call requests carried it (contract section 21); absent on rows settled without a send, and before it. */
    sends: z.number().int().min(0).optional(),
    reason: z.string().optional(),
    /** The tool's answer as facts (the same as tool_execution's `result`). */
    result: resultFactsSchema.optional(),
    /** Why an executed call failed (tool_execution's `error`), or the reconciled row's. */
    error: z.object({ code: z.string(), message: z.string() }).strict().optional(),
    created_at: times.created_at,
    settled_at: times.settled_at.optional(),
    reconciliation: reconciliationSchema.optional(),
    /** The tool's digest its approval was bound to (contract section 23); absent before it, and for a tool its server did not list. */
    tool_digest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .optional(),
    /** D1's clock when the checkpoint committed (contract section 23); absent before a checkpoint, and on rows written before it. */
    dispatched_at: times.settled_at.optional(),
    /** The tool's MCP server (section 23). */
    server: z.string().optional(),
    /** The run's requester (section 23). */
    requested_by: z.string().optional(),
    on_behalf_of: z.string().optional(),
    /** The person the row counts for: on_behalf_of's, else the requester's (section 23); absent when nobody. */
    requester_person: z.string().optional(),
    /** The policy version that decided the call, and its hash (contract section 24); absent on rows written before it. */
    policy_version: z.number().int().min(0).optional(),
    policy_hash: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .optional(),
  };
}

export const mutationOutcomeSchema = z
  .object(mutationOutcomeShape({ created_at: isoTime, settled_at: isoTime, approved_at: isoTime }))
  .strict()
  .meta({ id: "MutationOutcome", title: "mutation_outcome/v1", description: "A durable mutation outcome (contract section 8)." });
