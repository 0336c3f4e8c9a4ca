// The listings across runs (contract section 15): the zod schemas of every
// query they accept and of every envelope they answer. The routes validate
// with these, and the OpenAPI document is generated from these.
import { z } from "zod";
import { hiddenValueSchema } from "./event-schemas";
import { mutationOutcomeSchema, mutationStateSchema } from "./mutation-outcome-schema";

/** Contract section 15: `limit` is 1..200, default 50. */
const LISTING_LIMIT_MAX = 200;
const LISTING_LIMIT_DEFAULT = 50;
/** Longest cursor accepted; ours are a few dozen characters, so anything longer was not made here. */
const CURSOR_MAX_CHARS = 1_024;

const isoTime = z.iso.datetime();

/** A run's message is indexed cut to this many characters (and an ellipsis), after redaction. */
export const REQUEST_PREVIEW_CHARS = 200;

export const limitParam = z.coerce
  .number()
  .int()
  .min(1)
  .max(LISTING_LIMIT_MAX)
  .default(LISTING_LIMIT_DEFAULT)
  .meta({ description: `Page size, 1..${LISTING_LIMIT_MAX} (default ${LISTING_LIMIT_DEFAULT}).` });
export const cursorParam = z
  .string()
  .min(1)
  .max(CURSOR_MAX_CHARS)
  .optional()
  .meta({ description: "The next_cursor of the previous page; opaque." });
const channelParam = z.string().min(1).max(200).optional().meta({ description: "Only this channel." });
export const nextCursor = z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last page." });

// ---- runs --------------------------------------------------------------------

export const runStatusSchema = z.enum(["running", "completed", "failed"]);
const runSourceSchema = z.enum(["api", "slack"]);

export const runListItemSchema = z
  .object({
    run_id: z.string(),
    channel_id: z.string(),
    user_id: z.string(),
    /** The principal that triggered the run (contract section 18); absent on runs indexed before principals. */
    requested_by: z.string().optional(),
    /** The person an adapter triggered the run for. */
    on_behalf_of: z.string().optional(),
    delivery_id: z.string().nullable(),
    source: runSourceSchema,
    status: runStatusSchema,
    created_at: isoTime,
    ended_at: isoTime.optional(),
    request: z
      .string()
      .optional()
      .meta({ description: `The first ${REQUEST_PREVIEW_CHARS} characters of the run's message, secret-looking values redacted.` }),
    error_code: z.string().optional().meta({ description: "A failed run's run_failed error.code (`cancelled` for a cancelled run)." }),
  })
  .strict()
  .meta({ id: "RunListItem" });

export const runsQuerySchema = z
  .object({
    channel_id: channelParam,
    status: runStatusSchema.optional(),
    user_id: z.string().min(1).max(200).optional().meta({ description: "Only runs this requester started." }),
    limit: limitParam,
    cursor: cursorParam,
  })
  .strict();

export const runsPageSchema = z
  .object({ runs: z.array(runListItemSchema), next_cursor: nextCursor })
  .strict()
  .meta({ id: "RunsPage" });

// ---- approvals -----------------------------------------------------------------

/**
 * Who asked for an approval or a question, and what for (contract section 16:
 * a person deciding from the inbox sees them as on the run's page): the run's
 * fields from the runs index, absent while the run is not indexed yet.
 */
const askedByFields = {
  user_id: runListItemSchema.shape.user_id.optional(),
  requested_by: runListItemSchema.shape.requested_by,
  on_behalf_of: runListItemSchema.shape.on_behalf_of,
  request: runListItemSchema.shape.request,
};

export const approvalStatusSchema = z.enum(["pending", "approved", "denied", "expired", "cancelled"]);

export const approvalListItemSchema = z
  .object({
    approval_id: z.string(),
    run_id: z.string(),
    channel_id: z.string(),
    tool_call_id: z.string(),
    tool_name: z.string(),
    level: z.enum(["approve", "confirm"]),
    description: z.string(),
    arguments: z.unknown().meta({ description: "The call's arguments, secret-looking values redacted." }),
    // Contract section 19 (as on approval_requested); absent on approvals indexed before the listing kept it.
    hidden: z.array(hiddenValueSchema).optional().meta({
      description: "Every value withheld from `arguments`: an RFC 6901 JSON Pointer into it and the length of the value's JSON text.",
    }),
    requested_at: isoTime,
    expires_at: isoTime,
    status: approvalStatusSchema,
    decided_by: z.string().optional(),
    reason: z.string().optional().meta({ description: "The decider's reason, redacted, at most 1,000 characters." }),
    // Contract section 19; absent on approvals indexed before it.
    required: z.number().int().min(1).max(5).optional().meta({ description: "How many distinct persons must approve." }),
    approvers: z
      .array(z.string())
      .nullable()
      .optional()
      .meta({ description: "The approvers patterns in force, or null for the default rule." }),
    approvals: z
      .array(z.object({ by: z.string(), at: isoTime }).strict())
      .optional()
      .meta({ description: "Every counted approve so far, in order." }),
    destructive: z
      .boolean()
      .optional()
      .meta({ description: "The tool's server gave it destructiveHint: true (contract section 21); absent otherwise." }),
    ...askedByFields,
  })
  .strict()
  .meta({ id: "ApprovalListItem" });

export const approvalsQuerySchema = z
  .object({
    status: z.enum(["pending", "resolved"]).optional().meta({ description: "pending: waits for a person; resolved: any decision." }),
    limit: limitParam,
    cursor: cursorParam,
  })
  .strict();

export const approvalsPageSchema = z
  .object({ approvals: z.array(approvalListItemSchema), next_cursor: nextCursor })
  .strict()
  .meta({ id: "ApprovalsPage" });

// ---- inputs (human__ask questions, and MCP questions mid-call: contract section 21) ----

export const inputStatusSchema = z.enum(["pending", "answered", "expired", "cancelled"]);

export const inputListItemSchema = z
  .object({
    tool_call_id: z.string(),
    run_id: z.string(),
    channel_id: z.string(),
    question: z.string(),
    // Contract section 21: an MCP tool's question mid-call; both absent for human__ask.
    input_id: z.string().optional().meta({
      description: "An MCP question's id, `<tool_call_id>:<round>:<key>`; answer it at /inputs/{input_id} (absent for human__ask).",
    }),
    requested_schema: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({ description: "An MCP question's form: the elicitation's requestedSchema as the server gave it." }),
    tool_name: z
      .string()
      .optional()
      .meta({ description: "The tool that asks: human__ask, or the MCP tool asking mid-call (absent on questions indexed before it)." }),
    requested_at: isoTime,
    expires_at: isoTime,
    status: inputStatusSchema,
    ...askedByFields,
  })
  .strict()
  .meta({ id: "InputListItem" });

export const inputsQuerySchema = z
  .object({
    status: z.enum(["pending", "answered"]).optional().meta({ description: "pending: waits for an answer; answered: was answered." }),
    limit: limitParam,
    cursor: cursorParam,
  })
  .strict();

export const inputsPageSchema = z
  .object({ inputs: z.array(inputListItemSchema), next_cursor: nextCursor })
  .strict()
  .meta({ id: "InputsPage" });

// ---- mutations ---------------------------------------------------------------------

export const mutationsQuerySchema = z
  .object({ state: mutationStateSchema.optional(), channel_id: channelParam, limit: limitParam, cursor: cursorParam })
  .strict();

export const mutationsPageSchema = z
  .object({ mutations: z.array(mutationOutcomeSchema), next_cursor: nextCursor })
  .strict()
  .meta({ id: "MutationsPage" });

// ---- MCP servers (contract section 21) -------------------------------------------------

export const mcpServerListItemSchema = z
  .object({
    server: z.string().meta({ description: "The name in MCP_SERVERS (tools are mcp__<server>__<tool>)." }),
    url: z.string().meta({ description: "The server's origin and path; never its query, user info or header values." }),
    protocol_version: z
      .string()
      .nullable()
      .meta({ description: "The revision the last successful contact spoke (2026-07-28, or 2025-11-25 / 2025-06-18); null before one." }),
    auth: z.enum(["none", "headers", "oauth"]).meta({
      description: "headers: MCP_SERVERS sends configured headers (never shown); oauth: the engine's OAuth grant (contract section 21).",
    }),
    trust_annotations: z.boolean().meta({ description: "Whether the server's readOnlyHint counts (MCP_SERVERS, default false)." }),
    connected: z.boolean().nullable().meta({ description: "Whether the last contact succeeded; null before the first." }),
    tools: z.number().int().nonnegative().nullable().meta({ description: "Tools in the last listing; null before one." }),
    last_contact_at: z.string().nullable(),
    issuer: z.string().optional().meta({ description: "oauth: the authorization server that issued the grant." }),
    connected_by: z.string().optional().meta({ description: "oauth: the principal whose grant serves the deployment." }),
    connected_at: z.string().optional().meta({ description: "oauth: when that principal connected the server." }),
  })
  .strict()
  .meta({ id: "McpServerListItem" });

export const mcpServersListingSchema = z
  .object({ servers: z.array(mcpServerListItemSchema) })
  .strict()
  .meta({ id: "McpServersListing" });

export type RunListItem = z.output<typeof runListItemSchema>;
export type ApprovalListItem = z.output<typeof approvalListItemSchema>;
export type InputListItem = z.output<typeof inputListItemSchema>;
/** Who asked and what for, joined from the runs index into the approvals and inputs listings. */
export type AskedBy = Pick<ApprovalListItem, "user_id" | "requested_by" | "on_behalf_of" | "request">;
export type RunsQuery = z.output<typeof runsQuerySchema>;
export type ApprovalsQuery = z.output<typeof approvalsQuerySchema>;
export type InputsQuery = z.output<typeof inputsQuerySchema>;
export type MutationsQuery = z.output<typeof mutationsQuerySchema>;
