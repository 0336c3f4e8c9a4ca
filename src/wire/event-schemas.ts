// The machine-readable event contract (contract sections 4 and 12): a strict
// zod schema of every event type (the envelope plus exactly its own fields),
// their union, and the fixture projection of each lifecycle event (section
// 12) derived from them. schemas/*.json is generated from these (npm run
// schemas), and the OpenAPI document describes the event stream with them.
import { z } from "zod";
import type { EventType } from "./events";
import { PROTOCOL_VERSION } from "./events";

const isoTime = z.iso.datetime();

/** Fields every event carries, in the order they are written (section 4). */
const envelope = <T extends EventType>(type: T) => ({
  protocol_version: z.literal(PROTOCOL_VERSION),
  sequence: z.number().int().min(1),
  run_id: z.string(),
  channel_id: z.string(),
  type: z.literal(type),
  at: isoTime,
});

const notExecutedReasonSchema = z.enum([
  "denied",
  "expired",
  "cancelled",
  "call_ceiling",
  "not_in_budget",
  "budget_exhausted",
  "storage_unavailable",
  "replay_blocked",
  "prior_outcome_unknown",
  "transport_unavailable",
  // Contract section 21: an OAuth server's token is missing, lapsed or refused.
  "authorization_required",
  // Contract section 23: the tool is gone, or listed with another tool_digest, after it was approved.
  "tool_changed",
  // Contract section 23: a halt covers the call; a mutation limit is full.
  "halted",
  "rate_limited",
]);
const executedErrorCodeSchema = z.enum([
  "transport_timeout",
  "transport_error",
  "tool_error",
  "response_too_large",
  "settlement_timeout",
  // Contract section 21: a server asked for more rounds than MCP_MAX_INPUT_ROUNDS, or for input the engine did not declare.
  "input_unsupported",
]);

/** Facts about a tool's answer, never credentials; the summary is at most 2 KiB. */
export const resultFactsSchema = z
  .object({ is_error: z.boolean(), content_bytes: z.number().int().min(0), summary: z.string().max(2_048).optional() })
  .strict();

/** One value withheld from an approval's arguments (contract section 19). */
export const hiddenValueSchema = z
  .object({
    path: z.string().meta({ description: 'An RFC 6901 JSON Pointer into `arguments` (`""` is the whole arguments).' }),
    reason: z.literal("secret"),
    chars: z.number().int().min(0).meta({ description: "The length of the withheld value's JSON text, in characters." }),
  })
  .strict();

const toolIds = { tool_name: z.string(), tool_call_id: z.string() };

/** A tool's identity (contract section 23): `sha256:` and the hex SHA-256 of its RFC 8785 form as listed. */
const toolDigestSchema = z.string().regex(/^sha256:[0-9a-f]{64}$/);

/** An MCP tool's annotations as its server gave them (contract section 21): claims, shown to the person deciding. */
const toolAnnotationsSchema = z
  .object({
    title: z.string().optional(),
    readOnlyHint: z.boolean().optional(),
    destructiveHint: z.boolean().optional(),
    idempotentHint: z.boolean().optional(),
    openWorldHint: z.boolean().optional(),
  })
  .strict()
  .meta({ description: "The tool's MCP annotations as its server gave them (claims of the server, not facts); absent when it gave none." });

/** One counted approve (contract section 19): who, and when. */
const approvalVoteSchema = z.object({ by: z.string(), at: isoTime }).strict();
const approvalsField = z
  .array(approvalVoteSchema)
  .meta({ description: "Every counted approve, in order (contract section 19); [] when none was counted." });
/** Contract section 24: the policy version that decided, and its hash, on the approval events and tool_execution. */
const policyFields = {
  policy_version: z
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: "The policy version active at this check (contract section 24); 0 is the settings." }),
  policy_hash: z
    .string()
    .regex(/^sha256:[0-9a-f]{64}$/)
    .optional()
    .meta({ description: "`sha256:` of the RFC 8785 form of that version's document (contract section 24)." }),
};
const requiredField = z.number().int().min(1).max(5).meta({ description: "How many distinct persons must approve (contract section 19)." });

/** The own fields of every event type (section 4's table), keyed by type. */
const ownFields = {
  run_started: {
    user_id: z.string(),
    // Contract section 18: the trigger's principal, and the person an adapter triggered it for (absent before principals).
    requested_by: z.string().optional(),
    on_behalf_of: z.string().optional(),
  },
  assistant_message: { text: z.string() },
  tool_started: { ...toolIds, approval_required: z.boolean() },
  approval_requested: {
    ...toolIds,
    approval_id: z.string(),
    level: z.enum(["approve", "confirm"]),
    description: z.string(),
    arguments: z
      .unknown()
      .meta({ description: "The call's arguments, cut nowhere but where a secret was redacted (contract section 19)." }),
    hidden: z.array(hiddenValueSchema).meta({
      description: "Every value withheld from `arguments`: an RFC 6901 JSON Pointer into it and the length of the value's JSON text.",
    }),
    expires_at: isoTime,
    required: requiredField,
    approvers: z
      .array(z.string())
      .nullable()
      .meta({ description: "The approvers patterns in force (contract section 19), or null for the default rule." }),
    annotations: toolAnnotationsSchema.optional(),
    ...policyFields,
    tool_digest: toolDigestSchema.optional().meta({
      description:
        "The tool's identity as listed when the call was proposed (contract section 23): `sha256:` and the hex SHA-256 of the RFC 8785 form of its server_url, name, title, description, inputSchema, outputSchema and annotations; absent when its server did not list it.",
    }),
  },
  approval_vote: {
    ...toolIds,
    approval_id: z.string(),
    decided_by: z.string(),
    votes: z.number().int().min(1),
    required: requiredField,
    ...policyFields,
  },
  approval_resolved: {
    ...toolIds,
    approval_id: z.string(),
    decision: z.enum(["approved", "denied", "expired", "cancelled"]),
    decided_by: z.string().optional(),
    reason: z
      .string()
      .max(1_000)
      .optional()
      .meta({ description: "The decider's reason, redacted, at most 1,000 characters (contract section 6)." }),
    // Optional: events written before contract section 19 lack it.
    approvals: approvalsField.optional(),
    ...policyFields,
  },
  // Contract section 24: a pending approval reminded before it expires, or escalated; `input_id` instead of `approval_id` for an MCP question.
  approval_reminded: {
    ...toolIds,
    approval_id: z.string().optional().meta({ description: "The approval reminded (absent for an MCP question: see input_id)." }),
    input_id: z
      .string()
      .optional()
      .meta({ description: "The call's MCP question reminded (contract section 21), instead of approval_id." }),
    expires_at: isoTime,
    ...policyFields,
  },
  approval_escalated: {
    ...toolIds,
    approval_id: z.string().optional().meta({ description: "The approval escalated (absent for an MCP question: see input_id)." }),
    input_id: z
      .string()
      .optional()
      .meta({ description: "The call's MCP question escalated (contract section 21), instead of approval_id." }),
    approvers: z
      .array(z.string())
      .nullable()
      .meta({ description: "The approvers patterns in force (contract section 19), or null for the default rule." }),
    escalated_to: z
      .array(z.string())
      .meta({ description: "The escalate_to patterns now eligible beside the rule in force (contract section 24)." }),
    ...policyFields,
  },
  tool_execution_started: { ...toolIds, approval_id: z.string() },
  human_input_requested: {
    tool_call_id: z.string(),
    question: z.string(),
    expires_at: isoTime,
    // Contract section 21: an MCP tool's question mid-call (absent for human__ask).
    input_id: z.string().optional().meta({
      description: "An MCP question's id, `<tool_call_id>:<round>:<key>`; answer it at /inputs/{input_id} (contract section 21).",
    }),
    requested_schema: z.record(z.string(), z.unknown()).optional().meta({
      description:
        "The form elicitation's requestedSchema as the server gave it (a flat JSON Schema object); the answer's content is validated against it.",
    }),
  },
  human_input_received: {
    tool_call_id: z.string(),
    answered_by: z.string(),
    input_id: z.string().optional().meta({ description: "The MCP question answered (contract section 21); absent for human__ask." }),
    action: z
      .enum(["accept", "decline", "cancel"])
      .optional()
      .meta({ description: "How an MCP question was answered (contract section 21); its content goes to the server only." }),
  },
  tool_execution: {
    ...toolIds,
    approval_id: z.string().optional(),
    execution_status: z.enum(["executed", "not_executed"]),
    reason: notExecutedReasonSchema.optional(),
    result: resultFactsSchema.optional(),
    error: z.object({ code: executedErrorCodeSchema, message: z.string() }).strict().optional(),
    mutation_id: z.string().optional(),
    tool_digest: toolDigestSchema.nullable().optional().meta({
      description: "With not_executed(tool_changed) (contract section 23): the tool's digest now listed, null when it is gone.",
    }),
    retry_after_s: z
      .number()
      .int()
      .min(0)
      .optional()
      .meta({ description: "With rate_limited (contract section 23): seconds until the limit has room again; a hint, not a reservation." }),
    halt_id: z.string().optional().meta({ description: "With halted (contract section 23): the oldest active halt covering the call." }),
    ...policyFields,
  },
  tool_completed: { ...toolIds, approval_id: z.string().optional(), approved: z.boolean(), duration_ms: z.number().int().min(0) },
  heartbeat: {},
  run_completed: { text: z.string().optional(), tool_calls: z.number().int().min(0) },
  run_failed: { error: z.object({ code: z.string(), message: z.string() }).strict() },
} satisfies Record<EventType, z.ZodRawShape>;

export const EVENT_TYPES = Object.keys(ownFields) as EventType[];

function eventSchema<T extends EventType>(type: T) {
  return z
    .object({ ...envelope(type), ...ownFields[type] })
    .strict()
    .meta({ id: eventSchemaId(type), title: type });
}

function eventSchemaId(type: EventType): string {
  return `Event_${type}`;
}

/** One strict schema per event type. */
export const eventSchemas = {
  run_started: eventSchema("run_started"),
  assistant_message: eventSchema("assistant_message"),
  tool_started: eventSchema("tool_started"),
  approval_requested: eventSchema("approval_requested"),
  approval_vote: eventSchema("approval_vote"),
  approval_resolved: eventSchema("approval_resolved"),
  approval_reminded: eventSchema("approval_reminded"),
  approval_escalated: eventSchema("approval_escalated"),
  tool_execution_started: eventSchema("tool_execution_started"),
  human_input_requested: eventSchema("human_input_requested"),
  human_input_received: eventSchema("human_input_received"),
  tool_execution: eventSchema("tool_execution"),
  tool_completed: eventSchema("tool_completed"),
  heartbeat: eventSchema("heartbeat"),
  run_completed: eventSchema("run_completed"),
  run_failed: eventSchema("run_failed"),
} satisfies { [T in EventType]: z.ZodType };

/** The envelope's keys: the event log writes them, never an emitter. */
type EnvelopeKey = keyof ReturnType<typeof envelope>;

/**
 * The own fields of an event of type `T` as an emitter passes them: every
 * emitter is typed by the same schema that validates the stream, so a missing,
 * misspelt or mistyped field is a compile error, not a drift found later.
 */
export type EventFields<T extends EventType> = Omit<z.input<(typeof eventSchemas)[T]>, EnvelopeKey>;

/** Any event of a run's stream (the `data:` of one SSE frame). */
export const runEventSchema = z
  .discriminatedUnion("type", [
    eventSchemas.run_started,
    eventSchemas.assistant_message,
    eventSchemas.tool_started,
    eventSchemas.approval_requested,
    eventSchemas.approval_vote,
    eventSchemas.approval_resolved,
    eventSchemas.approval_reminded,
    eventSchemas.approval_escalated,
    eventSchemas.tool_execution_started,
    eventSchemas.human_input_requested,
    eventSchemas.human_input_received,
    eventSchemas.tool_execution,
    eventSchemas.tool_completed,
    eventSchemas.heartbeat,
    eventSchemas.run_completed,
    eventSchemas.run_failed,
  ])
  .meta({ id: "RunEvent", title: "approval-v2 run event", description: "One event of a run's stream (contract section 4)." });

/**
 * Any event of a run's stream, typed: what the append path hands every observer (the run index,
 * the Slack posts, audit, spans, metrics, the run log), each narrowing it by `type`.
 */
export type RunEvent = z.output<typeof runEventSchema>;

// ---- the fixture projection (section 12) -----------------------------------------

/**
 * The lifecycle events a fixture keeps, and the fields it keeps of them
 * (test/support/approval-execution-fixtures.ts selects with these same lists). Times, texts, questions and arguments are left out.
 */
export const PROJECTION_EVENT_TYPES = [
  "tool_started",
  "approval_requested",
  "approval_resolved",
  "tool_execution_started",
  "human_input_requested",
  "human_input_received",
  "tool_execution",
  "tool_completed",
  "run_completed",
  "run_failed",
] as const satisfies readonly EventType[];

export const PROJECTION_FIELDS = [
  "protocol_version",
  "sequence",
  "run_id",
  "channel_id",
  "type",
  "tool_name",
  "tool_call_id",
  "approval_id",
  "approval_required",
  "level",
  "decision",
  "execution_status",
  "reason",
  "result",
  "error",
  "mutation_id",
  "approved",
  "tool_calls",
] as const;

type ProjectionType = (typeof PROJECTION_EVENT_TYPES)[number];

function projectionSchema<T extends ProjectionType>(type: T) {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, field] of Object.entries({ ...envelope(type), ...ownFields[type] } as Record<string, z.ZodType>)) {
    if ((PROJECTION_FIELDS as readonly string[]).includes(key)) shape[key] = field;
  }
  // Result and error facts only: the summary and message carry the tool's own text.
  if ("result" in shape) shape.result = z.object({ is_error: z.boolean() }).strict().optional();
  if ("error" in shape) shape.error = z.object({ code: z.string() }).strict();
  if (type === "tool_execution") shape.error = z.object({ code: executedErrorCodeSchema }).strict().optional();
  return z
    .object(shape)
    .strict()
    .meta({ id: `ProjectedEvent_${type}`, title: `${type} (fixture projection)` });
}

const projectedEventSchemas = {
  tool_started: projectionSchema("tool_started"),
  approval_requested: projectionSchema("approval_requested"),
  approval_resolved: projectionSchema("approval_resolved"),
  tool_execution_started: projectionSchema("tool_execution_started"),
  human_input_requested: projectionSchema("human_input_requested"),
  human_input_received: projectionSchema("human_input_received"),
  tool_execution: projectionSchema("tool_execution"),
  tool_completed: projectionSchema("tool_completed"),
  run_completed: projectionSchema("run_completed"),
  run_failed: projectionSchema("run_failed"),
} satisfies { [T in ProjectionType]: z.ZodType };

export const projectedEventSchema = z
  .discriminatedUnion("type", [
    projectedEventSchemas.tool_started,
    projectedEventSchemas.approval_requested,
    projectedEventSchemas.approval_resolved,
    projectedEventSchemas.tool_execution_started,
    projectedEventSchemas.human_input_requested,
    projectedEventSchemas.human_input_received,
    projectedEventSchemas.tool_execution,
    projectedEventSchemas.tool_completed,
    projectedEventSchemas.run_completed,
    projectedEventSchemas.run_failed,
  ])
  .meta({ id: "ProjectedEvent", title: "fixture projection of a lifecycle event (contract section 12)" });
