// GET /api/openapi.json (contract section 15): the route table of section 2 as
// an OpenAPI 3.1 document, generated from the same zod schemas the routes
// validate their input with (trigger, decisions, reconcile, listing queries)
// and the contract's own schemas for what they answer (events,
// mutation_outcome/v1, listing envelopes). Built with
// @asteasolutions/zod-to-openapi 9 (zod 4 native: it reads `.meta()`, no
// prototype patching), so the document cannot drift from the validators.
import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import { mutationOutcomeSchema } from "../wire/mutation-outcome-schema";
import { runEventSchema } from "../wire/event-schemas";
import {
  approvalsPageSchema,
  approvalsQuerySchema,
  inputsPageSchema,
  inputsQuerySchema,
  mcpServersListingSchema,
  mutationsPageSchema,
  mutationsQuerySchema,
  runsPageSchema,
  runsQuerySchema,
} from "../wire/listing-schemas";
import { approvalDecisionSchema, inputAnswerSchema, mcpInputAnswerSchema } from "./decision-requests";
import { reconcileRequestSchema } from "./handlers/mutations";
import { healthSchema } from "../operate/health";
import { triggerBodySchema } from "./trigger-request";
import { tokenCreateSchema } from "./handlers/tokens";
import { roleSchema } from "../auth/roles";
import { auditPageSchema, auditQuerySchema } from "../audit/audit-reads";
import { engageHaltSchema, haltReleaseSchema, haltSchema, haltsPageSchema, haltsQuerySchema } from "./handlers/halts";

const OPENAPI_VERSION = "3.1.0";
const API_VERSION = "0.1.0";

// ---- what the routes answer ------------------------------------------------------

const errorSchema = z
  .looseObject({ error: z.string(), message: z.string(), details: z.unknown().optional() })
  .meta({ id: "Error", description: 'Every error: {"error": code, "message", "details"?} (contract section 2).' });

const receiptSchema = z
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
const runSummarySchema = z
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

const decisionAnswerSchema = z
  .looseObject({ status: z.string().optional(), decision: z.string().optional() })
  .meta({ id: "DecisionAnswer", description: "The decision as recorded (or, on 409/410, why it was not)." });

const inputAnswerResultSchema = z
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

const deliveryReceiptSchema = z
  .object({ delivery_id: z.string(), run_id: z.string(), channel_id: z.string(), accepted_at: z.string() })
  .strict()
  .meta({ id: "DeliveryReceipt" });

const storagePoolSchema = z
  .looseObject({ capacity: z.number().int(), in_use: z.number().int() })
  .meta({ id: "StoragePoolStats", description: "The storage pool's slots and counters (contract section 9)." });

const tokenFields = {
  name: z.string(),
  roles: z.array(roleSchema),
  owner: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
};
const tokenCreatedSchema = z
  .object({ ...tokenFields, token: z.string().meta({ description: "aee_…; shown only in this answer" }) })
  .strict()
  .meta({ id: "TokenCreated" });
const tokenListSchema = z
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

// ---- parameters --------------------------------------------------------------------

const runParams = z.object({ runId: z.string().meta({ description: "run_ + a ULID" }) });

// ---- the document --------------------------------------------------------------------

const json = (schema: z.ZodType) => ({ "application/json": { schema } });
const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { description: ERROR_MEANINGS[s] ?? "Error", content: json(errorSchema) }]));
const ERROR_MEANINGS: Record<number, string> = {
  400: "Bad input (details lists the validation issues)",
  401: "Missing or wrong credential (bearer token, console session)",
  403: "forbidden (the principal lacks the route's role), forbidden_origin or actor_mismatch (contract section 18)",
  404: "Unknown id",
  409: "Conflicts with what was already decided (or a token name already used)",
  410: "Expired, or no longer retained",
  413: "Body over 64 KiB",
  502: "The MCP server's authorization server could not be discovered or refused (contract section 21)",
  415: "Not a JSON body (JSON routes need Content-Type: application/json)",
  429: "rate_limited: too many failed authentications from this address, or triggers by this principal (Retry-After)",
  503: "Not configured, or storage busy or slow (Retry-After)",
};
const API_ERRORS = [401, 403, 429, 503];

function buildDocument() {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  // Contract section 18: the console's session cookie and a Cloudflare Access assertion are credentials too.
  registry.registerComponent("securitySchemes", "consoleSession", { type: "apiKey", in: "cookie", name: "console_session" });
  registry.registerComponent("securitySchemes", "cloudflareAccess", { type: "apiKey", in: "header", name: "Cf-Access-Jwt-Assertion" });
  const jsonBody = (schema: z.ZodType) => ({ body: { required: true, content: json(schema) } });

  registry.registerPath({
    method: "get",
    path: "/healthz",
    summary: "Liveness",
    security: [],
    responses: { 200: { description: "Alive", content: json(z.object({ status: z.literal("ok") })) } },
  });
  registry.registerPath({
    method: "head",
    path: "/healthz",
    summary: "Liveness, headers only",
    security: [],
    responses: { 200: { description: "Alive" } },
  });
  registry.registerPath({
    method: "post",
    path: "/api/trigger",
    summary: "Start a run (contract section 3)",
    request: {
      ...jsonBody(triggerBodySchema),
      headers: z.object({ "idempotency-key": z.string().min(1).max(200).optional() }),
    },
    responses: {
      200: {
        description: "A repeated delivery identity: the first run's receipt, or with Accept: text/event-stream its stream from sequence 1",
        content: { ...json(receiptSchema), "text/event-stream": { schema: runEventSchema } },
      },
      202: { description: "Accepted", content: json(receiptSchema) },
      ...errors(400, 413, 415, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/api/runs",
    summary: "Runs, newest first (contract section 15)",
    request: { query: runsQuerySchema },
    responses: { 200: { description: "One page", content: json(runsPageSchema) }, ...errors(400, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/runs/{runId}",
    summary: "Run summary (contract section 3)",
    request: { params: runParams },
    responses: { 200: { description: "The run", content: json(runSummarySchema) }, ...errors(404, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/runs/{runId}/events",
    summary: "Replay, then live tail, as SSE (contract section 5)",
    description: "Each frame is `id: <sequence>`, `event: <type>`, `data: <RunEvent JSON>`.",
    request: {
      params: runParams,
      query: z.object({
        after: z
          .string()
          .regex(/^(0|[1-9][0-9]{0,15})$/)
          .optional()
          .meta({ description: "Resume after this sequence" }),
        client_key: z.string().min(1).max(200).optional(),
      }),
      headers: z.object({ "last-event-id": z.string().optional() }),
    },
    responses: {
      200: { description: "The event stream", content: { "text/event-stream": { schema: runEventSchema } } },
      204: { description: "The run has ended and nothing follows `after`" },
      ...errors(400, 404, 410, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "post",
    path: "/api/runs/{runId}/cancel",
    summary: "Cancel the run (contract section 6)",
    request: { params: runParams },
    responses: {
      200: { description: "Already ended", content: json(z.object({ status: z.string() })) },
      202: { description: "Cancelling", content: json(z.object({ status: z.string() })) },
      ...errors(404, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "post",
    path: "/api/runs/{runId}/approvals/{approvalId}",
    summary: "A person's decision (contract section 6)",
    request: { params: runParams.extend({ approvalId: z.string() }), ...jsonBody(approvalDecisionSchema) },
    responses: {
      200: { description: "Recorded", content: json(decisionAnswerSchema) },
      ...errors(400, 404, 409, 410, 413, 415, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "post",
    path: "/api/runs/{runId}/inputs/{toolCallId}",
    summary: "A person's answer to human__ask (contract section 6), or to an MCP tool's question mid-call (section 21)",
    description:
      "`{answer}` at a human__ask's tool_call_id; `{action: accept, content}`, `{action: decline}` or `{action: cancel}` at an MCP question's input_id (`<tool_call_id>:<round>:<key>`), by a principal eligible to approve the call (403 not_an_approver otherwise). Accept content that does not fit the question's requested_schema is 400 invalid_answer with the issues in details.",
    request: {
      params: runParams.extend({
        toolCallId: z.string().meta({ description: "human__ask: the tool_call_id; an MCP question: its input_id." }),
      }),
      ...jsonBody(z.union([inputAnswerSchema, mcpInputAnswerSchema])),
    },
    responses: {
      200: { description: "Recorded", content: json(inputAnswerResultSchema) },
      ...errors(400, 403, 404, 409, 410, 413, 415, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/api/runs/{runId}/mutations",
    summary: "Durable outcomes of this run (contract section 8)",
    request: { params: runParams },
    responses: {
      200: {
        description: "The run's rows in creation order",
        content: json(z.object({ run_id: z.string(), mutations: z.array(mutationOutcomeSchema) }).strict()),
      },
      ...errors(404, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/api/approvals",
    summary: "Approvals across runs, newest first (contract section 15)",
    request: { query: approvalsQuerySchema },
    responses: { 200: { description: "One page", content: json(approvalsPageSchema) }, ...errors(400, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/inputs",
    summary: "human__ask questions across runs, newest first (contract section 15)",
    request: { query: inputsQuerySchema },
    responses: { 200: { description: "One page", content: json(inputsPageSchema) }, ...errors(400, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/mutations",
    summary: "Durable outcomes across runs, newest first (contract section 15)",
    request: { query: mutationsQuerySchema },
    responses: { 200: { description: "One page", content: json(mutationsPageSchema) }, ...errors(400, ...API_ERRORS) },
  });
  const mutationParams = z.object({ mutationId: z.string().meta({ description: "mut_ + a ULID" }) });
  registry.registerPath({
    method: "get",
    path: "/api/mutations/{mutationId}",
    summary: "One durable outcome (contract section 8)",
    request: { params: mutationParams },
    responses: { 200: { description: "The row", content: json(mutationOutcomeSchema) }, ...errors(404, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "post",
    path: "/api/mutations/{mutationId}/reconcile",
    summary: "Settle an outcome_unknown row (contract section 8)",
    request: { params: mutationParams, ...jsonBody(reconcileRequestSchema) },
    responses: {
      200: { description: "The updated row", content: json(mutationOutcomeSchema) },
      ...errors(400, 404, 409, 413, 415, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/api/storage-pool",
    summary: "The storage pool's slots and counters (contract section 9)",
    responses: { 200: { description: "The pool", content: json(storagePoolSchema) }, ...errors(...API_ERRORS) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/deliveries/{deliveryId}",
    summary: "The receipt of a delivery identity in the caller's own namespace, or Slack's for an adapter (contract section 3)",
    request: { params: z.object({ deliveryId: z.string() }), query: z.object({ source: z.enum(["slack"]).optional() }) },
    responses: { 200: { description: "The receipt", content: json(deliveryReceiptSchema) }, ...errors(400, 404, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/health",
    summary: "Each dependency's state (contract section 22); answers even with a bad configuration",
    responses: {
      200: { description: "Every component ok (or off)", content: json(healthSchema) },
      503: {
        description: "Degraded: a component is degraded, an MCP server is not ok, or the configuration is bad",
        content: json(healthSchema),
      },
      ...errors(401),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/api/metrics",
    summary: "Prometheus metrics, text format 0.0.4 (contract section 22)",
    responses: {
      200: {
        description: "The series of section 22, from pre-aggregated D1 counters and the storage pool",
        content: { "text/plain; version=0.0.4": { schema: z.string() } },
      },
      ...errors(...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/api/openapi.json",
    summary: "This document",
    responses: { 200: { description: "OpenAPI 3.1", content: json(z.looseObject({ openapi: z.string() })) }, ...errors(...API_ERRORS) },
  });

  registry.registerPath({
    method: "get",
    path: "/api/mcp/servers",
    summary:
      "Each configured MCP server as last seen: protocol version, tools, last contact; never header values (contract section 21, viewer)",
    responses: { 200: { description: "Every server of MCP_SERVERS", content: json(mcpServersListingSchema) }, ...errors(...API_ERRORS) },
  });
  registry.registerPath({
    method: "post",
    path: "/api/mcp/servers/{server}/connect",
    summary: "Start connecting an OAuth MCP server: the URL for the admin to open (contract section 21, admin)",
    request: { params: z.object({ server: z.string().meta({ description: "A server of MCP_SERVERS with oauth" }) }) },
    responses: {
      200: {
        description: "Open it in a browser signed in as the same principal",
        content: json(z.object({ authorization_url: z.string() }).strict()),
      },
      ...errors(404, 409, 502, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/oauth/callback",
    summary: "The authorization server's redirect: single-use state, same principal as the connect (contract section 21)",
    security: [{ consoleSession: [] }, { cloudflareAccess: [] }],
    request: {
      query: z.object({ state: z.string(), code: z.string().optional(), iss: z.string().optional(), error: z.string().optional() }),
    },
    responses: {
      200: { description: "A short page: the server is connected", content: { "text/html": { schema: z.string() } } },
      ...errors(400, 403, 404, 502, 503),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/oauth/client.json",
    summary: "The engine's OAuth client ID metadata document (contract section 21)",
    security: [],
    responses: { 200: { description: "Client metadata", content: json(z.looseObject({ client_id: z.string() })) }, ...errors(404) },
  });
  registry.registerPath({
    method: "post",
    path: "/api/tokens",
    summary: "Make a named API token; its value is shown once (contract section 18, admin)",
    request: jsonBody(tokenCreateSchema),
    responses: {
      201: { description: "Made", content: json(tokenCreatedSchema) },
      ...errors(400, 409, 413, 415, ...API_ERRORS),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/api/tokens",
    summary: "Named tokens, never their values (contract section 18, admin)",
    responses: { 200: { description: "Every token", content: json(tokenListSchema) }, ...errors(...API_ERRORS) },
  });
  registry.registerPath({
    method: "delete",
    path: "/api/tokens/{name}",
    summary: "Revoke a named token and end its console sessions (contract section 18, admin)",
    request: { params: z.object({ name: z.string() }) },
    responses: {
      200: { description: "Revoked", content: json(z.object({ name: z.string(), revoked_at: z.string() }).strict()) },
      ...errors(404, ...API_ERRORS),
    },
  });

  registry.registerPath({
    method: "get",
    path: "/api/audit",
    summary: "The audit log, newest first (contract section 18, admin)",
    request: { query: auditQuerySchema },
    responses: { 200: { description: "One page", content: json(auditPageSchema) }, ...errors(400, ...API_ERRORS) },
  });

  // Halts (contract section 23).
  registry.registerPath({
    method: "post",
    path: "/api/halts",
    summary: "Engage a halt: mutating calls in its scope stop at once (contract section 23, approver or admin)",
    request: jsonBody(engageHaltSchema),
    responses: { 201: { description: "Engaged", content: json(haltSchema) }, ...errors(400, 413, 415, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/halts",
    summary: "Halts, newest first (contract section 23, viewer)",
    request: { query: haltsQuerySchema },
    responses: { 200: { description: "One page", content: json(haltsPageSchema) }, ...errors(400, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/halts/{haltId}",
    summary: "One halt (contract section 23, viewer)",
    request: { params: z.object({ haltId: z.string() }) },
    responses: { 200: { description: "The halt", content: json(haltSchema) }, ...errors(404, ...API_ERRORS) },
  });
  registry.registerPath({
    method: "delete",
    path: "/api/halts/{haltId}",
    summary: "A release vote; the HALT_RELEASE_APPROVALS-th distinct person releases it (contract section 23, admin)",
    request: { params: z.object({ haltId: z.string() }) },
    responses: {
      200: { description: "Released (by this vote or before it)", content: json(haltReleaseSchema) },
      202: { description: "Vote counted; more persons needed", content: json(haltReleaseSchema) },
      ...errors(404, ...API_ERRORS),
    },
  });

  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: OPENAPI_VERSION,
    info: {
      title: "approved-execution-engine",
      version: API_VERSION,
      description: "Approved execution for AI agents on Cloudflare Workers: runs, approvals, a sequenced SSE event log, durable outcomes.",
    },
    security: [{ bearer: [] }, { consoleSession: [] }, { cloudflareAccess: [] }],
  });
}

let cached: ReturnType<typeof buildDocument> | undefined;

/** The document, built once per isolate (it only depends on the code). */
export function openApiDocument(): ReturnType<typeof buildDocument> {
  cached ??= buildDocument();
  return cached;
}
