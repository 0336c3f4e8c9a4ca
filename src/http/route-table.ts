// The Worker's routes (contract section 2), written once. Each entry says its
// method and path, who may call it (src/http/route-spec.ts: a role behind the
// /api/* guard, Slack's signature, ...), what it takes and answers as zod
// schemas, and its handler. From this one table come the router
// (src/http/router.ts), the role check (src/http/route-roles.ts, contract
// section 18) and GET /api/openapi.json (src/http/openapi.ts, section 15).
// The console (/console*, section 16) is routed on its own
// (src/console/console-routes.ts): its gate and security headers cover every
// path below it, assets included.
//
// Adding a route: put its handler in its own module under src/http/handlers/
// (or its room), then one entry here, e.g.
//
//   {
//     method: "GET",
//     path: "/api/halts/:haltId",
//     auth: { kind: "role", rule: { role: "viewer" } },
//     summary: "One halt (contract section 23)",
//     request: { params: z.object({ haltId: z.string() }) },
//     responses: { 200: { description: "The halt", content: json(haltSchema) }, ...errors(404, ...API_ERRORS) },
//     handler: (request, env) => handleGetHalt(env, decodePathParam(request.params.haltId)),
//   },
//
// and write what each role may do with it in test/support/role-expectations.ts
// (from the contract's words): the role matrix and the OpenAPI contract test
// pick the route up from here. Every error code it answers must be in
// src/base/api-error.ts.
import { z } from "zod";
import { auditExportQuerySchema } from "../audit/audit-export";
import { auditPageSchema, auditQuerySchema, listAudit, sealedThrough } from "../audit/audit-reads";
import { errorBodySchema, jsonResponse } from "../base/api-error";
import { callbackQuerySchema, handleCallback, handleClientDocument, handleConnect } from "../mcp-oauth/oauth-routes";
import { healthSchema } from "../operate/health";
import { handleHealth } from "../operate/health-route";
import { handleMetrics } from "../operate/metrics-route";
import { handleSlackRequest } from "../slack/slack-app";
import { handleInstall, handleOAuthRedirect } from "../slack/install-routes";
import { isPostingStopped } from "../slack/stop-posting";
import { runEventSchema } from "../wire/event-schemas";
import {
  approvalListItemSchema,
  approvalsPageSchema,
  inputListItemSchema,
  approvalsQuerySchema,
  inputsPageSchema,
  inputsQuerySchema,
  mcpServersListingSchema,
  mutationsPageSchema,
  mutationsQuerySchema,
  runsPageSchema,
  runsQuerySchema,
} from "../wire/listing-schemas";
import { mutationOutcomeSchema } from "../wire/mutation-outcome-schema";
import { approvalDecisionSchema, inputAnswerSchema, mcpInputAnswerSchema } from "./decision-requests";
import { handleGetDelivery } from "./handlers/delivery-receipt";
import { handleEvents } from "./handlers/events";
import {
  handleGetApproval,
  handleGetInput,
  handleListApprovals,
  handleListInputs,
  handleListMutations,
  handleListRuns,
  listing,
} from "./handlers/listings";
import { handleListMcpServers } from "./handlers/mcp-servers";
import { handlePolicyReplay, replayRequestSchema, replayResponseSchema } from "./handlers/policy-replay";
import { handleDeleteInstallation, handleListInstallations, installationsListingSchema } from "./handlers/slack-installations";
import { handleListWebhooks } from "./handlers/webhooks";
import { webhookListingSchema } from "../webhooks/webhook-listing";
import { handleGetMutation, handleReconcile, handleRunMutations, handleStoragePool, reconcileRequestSchema } from "./handlers/mutations";
import { handleApprovalDecision, handleCancel, handleGetRun, handleInputAnswer } from "./handlers/runs";
import { tokenAudit } from "./handlers/token-audit";
import { handleCreateToken, handleListTokens, handleRevokeToken, tokenCreateSchema } from "./handlers/tokens";
import {
  checkpointsQuerySchema,
  handleAuditExport,
  handleCreateCheckpoint,
  handleListCheckpoints,
  handlePublicKeys,
  handleScrub,
} from "./handlers/audit-proof";
import {
  engageHaltSchema,
  haltReleaseSchema,
  haltSchema,
  haltsPageSchema,
  haltsQuerySchema,
  handleEngageHalt,
  handleGetHalt,
  handleListHalts,
  handleReleaseHalt,
} from "./handlers/halts";
import { handleTrigger } from "./handlers/trigger";
import {
  handleApprovePolicy,
  handleGetPolicy,
  handleGetPolicyVersion,
  handleListPolicyVersions,
  handlePutPolicy,
  handleWithdrawPolicy,
  policyChangeSchema,
  policyShadowPageSchema,
  policyShadowQuerySchema,
  handleListShadowDifferences,
  policyVersionSchema,
  policyVersionsPageSchema,
  policyVersionsQuerySchema,
  putPolicySchema,
} from "./handlers/policy";
import { openApiDocumentOf } from "./openapi-document";
import {
  decisionAnswerSchema,
  deliveryReceiptSchema,
  inputAnswerResultSchema,
  receiptSchema,
  runSummarySchema,
  storagePoolSchema,
  tokenCreatedSchema,
  tokenListSchema,
} from "./response-schemas";
import { decodePathParam, type RouteSpec, runStub } from "./route-spec";
import { triggerBodySchema } from "./trigger-request";

// ---- shorthands ------------------------------------------------------------------

const json = (schema: z.ZodType) => ({ "application/json": { schema } });
const jsonBody = (schema: z.ZodType) => ({ body: { required: true, content: json(schema) } });
const ERROR_MEANINGS: Record<number, string> = {
  400: "Bad input (details lists the validation issues)",
  401: "Missing or wrong credential (bearer token, console session)",
  403: "forbidden (the principal lacks the route's role), forbidden_origin or actor_mismatch (contract section 18)",
  404: "Unknown id",
  405: "The path serves other methods (Allow)",
  409: "Conflicts with what was already decided (or a token name already used)",
  410: "Expired, or no longer retained",
  413: "Body over 64 KiB",
  415: "Not a JSON body (JSON routes need Content-Type: application/json)",
  429: "rate_limited: too many failed authentications from this address, or triggers by this principal (Retry-After)",
  500: "A run could not be started (Slack retries the event)",
  502: "The MCP server's authorization server could not be discovered or refused (contract section 21), or Slack unreachable (section 26)",
  503: "Not configured, or storage busy or slow (Retry-After)",
};
const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { description: ERROR_MEANINGS[s] ?? "Error", content: json(errorBodySchema) }]));
/** What every /api route behind the guard may answer (contract sections 2, 13, 18). */
const API_ERRORS = [401, 403, 429, 503];

const viewer = { kind: "role", rule: { role: "viewer" } } as const;
/** GET /api/health's rule, which its handler checks itself (ahead of the guard). */
const healthRule = { role: "viewer" } as const;
const admin = { kind: "role", rule: { role: "admin" } } as const;
const runParams = z.object({ runId: z.string().meta({ description: "run_ + a ULID" }) });
const mutationParams = z.object({ mutationId: z.string().meta({ description: "mut_ + a ULID" }) });
/** A signed checkpoint of the audit chain (contract section 25). */
const auditCheckpointSchema = z
  .object({ seq: z.number().int(), hash: z.string(), at: z.string(), kid: z.string(), signature: z.string() })
  .strict()
  .meta({ id: "AuditCheckpoint" });
const listingResponses = (page: z.ZodType) => ({ 200: { description: "One page", content: json(page) }, ...errors(400, ...API_ERRORS) });

/** Slack's signed requests (contract section 14): Events API JSON, or interactivity's form with a `payload`. */
const slackBody = {
  body: {
    required: true,
    content: {
      "application/json": { schema: z.looseObject({ type: z.string() }) },
      "application/x-www-form-urlencoded": { schema: z.object({ payload: z.string().meta({ description: "JSON" }) }) },
    },
  },
  headers: z.object({ "x-slack-request-timestamp": z.string(), "x-slack-signature": z.string() }),
};
const slackResponses = {
  200: { description: "Acknowledged (the url_verification challenge, or a modal's response_action)" },
  ...errors(400, 401, 413, 500, 503),
};

// ---- the table -------------------------------------------------------------------

export const ROUTES: readonly RouteSpec[] = [
  // Liveness (contract section 2).
  {
    method: "GET",
    path: "/healthz",
    auth: { kind: "public" },
    summary: "Liveness",
    responses: { 200: { description: "Alive", content: json(z.object({ status: z.literal("ok") })) } },
    handler: () => jsonResponse(200, { status: "ok" }),
  },
  {
    method: "HEAD",
    path: "/healthz",
    auth: { kind: "public" },
    summary: "Liveness, headers only",
    responses: { 200: { description: "Alive" } },
    handler: () => new Response(null, { status: 200, headers: { "content-type": "application/json; charset=utf-8" } }),
  },

  // Operating it (contract section 22). /api/health answers even with a bad configuration: it checks its rule itself.
  {
    method: "GET",
    path: "/api/health",
    auth: { kind: "role_self", rule: healthRule },
    summary: "Each dependency's state (contract section 22); answers even with a bad configuration",
    responses: {
      200: { description: "Every component ok (or off)", content: json(healthSchema) },
      503: {
        description: "Degraded: a component is degraded, an MCP server is not ok, or the configuration is bad",
        content: json(healthSchema),
      },
      ...errors(401, 403, 429),
    },
    handler: (request, env, ctx) => handleHealth(request, env, ctx, undefined, { rule: healthRule, isPostingStopped }),
  },
  {
    method: "GET",
    path: "/api/metrics",
    auth: viewer,
    summary: "Prometheus metrics, text format 0.0.4 (contract section 22)",
    responses: {
      200: {
        description: "The series of section 22, from pre-aggregated D1 counters and the storage pool",
        content: { "text/plain; version=0.0.4": { schema: z.string() } },
      },
      ...errors(...API_ERRORS),
    },
    handler: (request, env) => handleMetrics(env, request.config),
  },

  // A run (contract sections 3, 5, 6).
  {
    method: "POST",
    path: "/api/trigger",
    auth: { kind: "role", rule: { role: "requester", also: ["adapter"] } },
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
    handler: (request, env) => handleTrigger(request, env, request.config, request.principal),
  },
  {
    method: "GET",
    path: "/api/runs/:runId",
    auth: viewer,
    summary: "Run summary (contract section 3)",
    request: { params: runParams },
    responses: { 200: { description: "The run", content: json(runSummarySchema) }, ...errors(404, ...API_ERRORS) },
    handler: handleGetRun,
  },
  {
    method: "GET",
    path: "/api/runs/:runId/events",
    auth: viewer,
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
    handler: (request, env) => handleEvents(request, runStub(env, request.params.runId)),
  },
  {
    method: "POST",
    path: "/api/runs/:runId/cancel",
    auth: { kind: "role", rule: { role: "approver", ownRun: "requester" } },
    summary: "Cancel the run (contract section 6)",
    request: { params: runParams },
    responses: {
      200: { description: "Already ended", content: json(z.object({ status: z.string() })) },
      202: { description: "Cancelling", content: json(z.object({ status: z.string() })) },
      ...errors(404, ...API_ERRORS),
    },
    handler: handleCancel,
  },
  {
    method: "POST",
    path: "/api/runs/:runId/approvals/:approvalId",
    auth: { kind: "role", rule: { role: "approver" } },
    summary: "A person's decision (contract section 6)",
    request: { params: runParams.extend({ approvalId: z.string() }), ...jsonBody(approvalDecisionSchema) },
    responses: {
      200: { description: "Recorded", content: json(decisionAnswerSchema) },
      ...errors(400, 404, 409, 410, 413, 415, ...API_ERRORS),
    },
    handler: handleApprovalDecision,
  },
  {
    method: "POST",
    path: "/api/runs/:runId/inputs/:toolCallId",
    auth: { kind: "role", rule: { role: "approver", ownRun: "requester" } },
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
    handler: handleInputAnswer,
  },
  {
    method: "GET",
    path: "/api/deliveries/:deliveryId",
    auth: viewer,
    summary: "The receipt of a delivery identity in the caller's own namespace, or Slack's for an adapter (contract section 3)",
    request: { params: z.object({ deliveryId: z.string() }), query: z.object({ source: z.enum(["slack"]).optional() }) },
    responses: { 200: { description: "The receipt", content: json(deliveryReceiptSchema) }, ...errors(400, 404, ...API_ERRORS) },
    handler: handleGetDelivery,
  },

  // Durable outcomes and the storage pool (contract sections 8, 9).
  {
    method: "GET",
    path: "/api/runs/:runId/mutations",
    auth: viewer,
    summary: "Durable outcomes of this run (contract section 8)",
    request: { params: runParams },
    responses: {
      200: {
        description: "The run's rows in creation order",
        content: json(z.object({ run_id: z.string(), mutations: z.array(mutationOutcomeSchema) }).strict()),
      },
      ...errors(404, ...API_ERRORS),
    },
    handler: (request, env, ctx) => {
      const stub = runStub(env, request.params.runId);
      return handleRunMutations(env, request.config, ctx, request.params.runId!, async () => (await stub.summary()) !== null);
    },
  },
  {
    method: "GET",
    path: "/api/mutations/:mutationId",
    auth: viewer,
    summary: "One durable outcome (contract section 8)",
    request: { params: mutationParams },
    responses: { 200: { description: "The row", content: json(mutationOutcomeSchema) }, ...errors(404, ...API_ERRORS) },
    handler: (request, env, ctx) => handleGetMutation(env, request.config, ctx, decodePathParam(request.params.mutationId)),
  },
  {
    method: "POST",
    path: "/api/mutations/:mutationId/reconcile",
    auth: { kind: "role", rule: { role: "reconciler" } },
    summary: "Settle an outcome_unknown row (contract section 8)",
    request: { params: mutationParams, ...jsonBody(reconcileRequestSchema) },
    responses: {
      200: { description: "The updated row", content: json(mutationOutcomeSchema) },
      ...errors(400, 404, 409, 413, 415, ...API_ERRORS),
    },
    handler: (request, env, ctx) =>
      handleReconcile(request, env, request.config, ctx, decodePathParam(request.params.mutationId), request.principal),
  },
  {
    method: "GET",
    path: "/api/storage-pool",
    auth: viewer,
    summary: "The storage pool's slots and counters (contract section 9)",
    responses: { 200: { description: "The pool", content: json(storagePoolSchema) }, ...errors(...API_ERRORS) },
    handler: (_request, env) => handleStoragePool(env),
  },

  // Listings across runs and this table as OpenAPI (contract section 15).
  {
    method: "GET",
    path: "/api/runs",
    auth: viewer,
    summary: "Runs, newest first (contract section 15)",
    request: { query: runsQuerySchema },
    responses: listingResponses(runsPageSchema),
    handler: (request, env) => handleListRuns(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS),
  },
  {
    method: "GET",
    path: "/api/approvals",
    auth: viewer,
    summary: "Approvals across runs, newest first (contract section 15)",
    request: { query: approvalsQuerySchema },
    responses: listingResponses(approvalsPageSchema),
    handler: (request, env) => handleListApprovals(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS),
  },
  {
    method: "GET",
    path: "/api/approvals/:approvalId",
    auth: viewer,
    summary: "One approval as its listing item, after the run's retention too (contract section 26)",
    request: { params: z.object({ approvalId: z.string() }) },
    responses: { 200: { description: "The approval", content: json(approvalListItemSchema) }, ...errors(404, ...API_ERRORS) },
    handler: (request, env) => handleGetApproval(env.DB, request.config.STORAGE_WAIT_MS, decodePathParam(request.params.approvalId)),
  },
  {
    method: "GET",
    path: "/api/runs/:runId/inputs/:toolCallId",
    auth: viewer,
    summary: "One question as its listing item: an MCP question by input_id, a human__ask by tool_call_id (contract section 26)",
    request: { params: z.object({ runId: z.string(), toolCallId: z.string() }) },
    responses: { 200: { description: "The question", content: json(inputListItemSchema) }, ...errors(404, ...API_ERRORS) },
    handler: (request, env) =>
      handleGetInput(
        env.DB,
        request.config.STORAGE_WAIT_MS,
        decodePathParam(request.params.runId),
        decodePathParam(request.params.toolCallId),
      ),
  },
  {
    method: "GET",
    path: "/api/inputs",
    auth: viewer,
    summary: "human__ask questions across runs, newest first (contract section 15)",
    request: { query: inputsQuerySchema },
    responses: listingResponses(inputsPageSchema),
    handler: (request, env) => handleListInputs(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS),
  },
  {
    method: "GET",
    path: "/api/mutations",
    auth: viewer,
    summary: "Durable outcomes across runs, newest first (contract section 15)",
    request: { query: mutationsQuerySchema },
    responses: listingResponses(mutationsPageSchema),
    handler: (request, env) => handleListMutations(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS),
  },
  {
    method: "GET",
    path: "/api/openapi.json",
    auth: viewer,
    summary: "This document",
    responses: { 200: { description: "OpenAPI 3.1", content: json(z.looseObject({ openapi: z.string() })) }, ...errors(...API_ERRORS) },
    handler: () => jsonResponse(200, openApiDocumentOf(ROUTES)),
  },

  // MCP servers and their OAuth (contract section 21).
  {
    method: "GET",
    path: "/api/mcp/servers",
    auth: viewer,
    summary:
      "Each configured MCP server as last seen: protocol version, tools, last contact; never header values (contract section 21, viewer)",
    responses: { 200: { description: "Every server of MCP_SERVERS", content: json(mcpServersListingSchema) }, ...errors(...API_ERRORS) },
    handler: (request, env) => handleListMcpServers(env.DB, request.config),
  },
  {
    method: "POST",
    path: "/api/mcp/servers/:server/connect",
    auth: admin,
    summary: "Start connecting an OAuth MCP server: the URL for the admin to open (contract section 21, admin)",
    request: { params: z.object({ server: z.string().meta({ description: "A server of MCP_SERVERS with oauth" }) }) },
    responses: {
      200: {
        description: "Open it in a browser signed in as the same principal",
        content: json(z.object({ authorization_url: z.string() }).strict()),
      },
      ...errors(404, 409, 502, ...API_ERRORS),
    },
    handler: (request, env) => handleConnect(env.DB, request.config, decodePathParam(request.params.server), request.principal.id),
  },
  {
    method: "GET",
    path: "/oauth/callback",
    auth: { kind: "oauth_state" },
    summary: "The authorization server's redirect: single-use state, same principal as the connect (contract section 21)",
    request: { query: callbackQuerySchema },
    responses: {
      200: { description: "A short page: the server is connected", content: { "text/html": { schema: z.string() } } },
      ...errors(400, 403, 404, 502, 503),
    },
    handler: (request, env, ctx) => handleCallback(request, env, ctx),
  },
  {
    method: "GET",
    path: "/oauth/client.json",
    auth: { kind: "public" },
    summary: "The engine's OAuth client ID metadata document (contract section 21)",
    responses: { 200: { description: "Client metadata", content: json(z.looseObject({ client_id: z.string() })) }, ...errors(404) },
    handler: (_request, env) => handleClientDocument(env),
  },

  // Named tokens and the audit log (contract section 18). An `access:` user without admin
  // creates, lists and revokes only tokens owned by themselves (accessSelf).
  {
    method: "POST",
    path: "/api/tokens",
    auth: { kind: "role", rule: { role: "admin", accessSelf: true } },
    summary: "Make a named API token; its value is shown once (contract section 18, admin)",
    request: jsonBody(tokenCreateSchema),
    responses: {
      201: { description: "Made", content: json(tokenCreatedSchema) },
      ...errors(400, 409, 413, 415, ...API_ERRORS),
    },
    handler: (request, env) => handleCreateToken(request, env.DB, request.principal, tokenAudit(env.DB, request.principal, request)),
  },
  {
    method: "GET",
    path: "/api/tokens",
    auth: { kind: "role", rule: { role: "admin", accessSelf: true } },
    summary: "Named tokens, never their values (contract section 18, admin)",
    responses: { 200: { description: "Every token", content: json(tokenListSchema) }, ...errors(...API_ERRORS) },
    handler: (request, env) => handleListTokens(env.DB, request.principal),
  },
  {
    method: "DELETE",
    path: "/api/tokens/:name",
    auth: { kind: "role", rule: { role: "admin", accessSelf: true } },
    summary: "Revoke a named token and end its console sessions (contract section 18, admin)",
    request: { params: z.object({ name: z.string() }) },
    responses: {
      200: { description: "Revoked", content: json(z.object({ name: z.string(), revoked_at: z.string() }).strict()) },
      ...errors(404, ...API_ERRORS),
    },
    handler: (request, env) =>
      handleRevokeToken(env.DB, decodePathParam(request.params.name), request.principal, tokenAudit(env.DB, request.principal, request)),
  },
  {
    method: "GET",
    path: "/api/audit",
    auth: admin,
    summary: "The audit log, newest first (contract section 18, admin)",
    request: { query: auditQuerySchema },
    responses: listingResponses(auditPageSchema),
    handler: (request, env) =>
      listing(new URL(request.url), env.DB, request.config.STORAGE_WAIT_MS, auditQuerySchema, "entries", listAudit, sealedThrough),
  },
  // Halts (contract section 23): an approver may engage one; only an admin releases.
  {
    method: "POST",
    path: "/api/halts",
    auth: { kind: "role", rule: { role: "approver" } },
    summary: "Engage a halt: mutating calls in its scope stop at once (contract section 23, approver or admin)",
    request: jsonBody(engageHaltSchema),
    responses: { 201: { description: "Engaged", content: json(haltSchema) }, ...errors(400, 413, 415, ...API_ERRORS) },
    handler: (request, env) => handleEngageHalt(request, env, request.config, request.principal),
  },
  {
    method: "GET",
    path: "/api/halts",
    auth: viewer,
    summary: "Halts, newest first (contract section 23, viewer)",
    request: { query: haltsQuerySchema },
    responses: { 200: { description: "One page", content: json(haltsPageSchema) }, ...errors(400, ...API_ERRORS) },
    handler: (request, env) => handleListHalts(new URL(request.url), env, request.config.STORAGE_WAIT_MS),
  },
  {
    method: "GET",
    path: "/api/halts/:haltId",
    auth: viewer,
    summary: "One halt (contract section 23, viewer)",
    request: { params: z.object({ haltId: z.string() }) },
    responses: { 200: { description: "The halt", content: json(haltSchema) }, ...errors(404, ...API_ERRORS) },
    handler: (request, env) => handleGetHalt(env, decodePathParam(request.params.haltId)),
  },
  {
    method: "DELETE",
    path: "/api/halts/:haltId",
    auth: admin,
    summary: "A release vote; the HALT_RELEASE_APPROVALS-th distinct person releases it (contract section 23, admin)",
    request: { params: z.object({ haltId: z.string() }) },
    responses: {
      200: { description: "Released (by this vote or before it)", content: json(haltReleaseSchema) },
      202: { description: "Vote counted; more persons needed", content: json(haltReleaseSchema) },
      ...errors(404, ...API_ERRORS),
    },
    handler: (request, env) => handleReleaseHalt(request, env, request.config, decodePathParam(request.params.haltId), request.principal),
  },
  // Policy as versioned data (contract section 24): an admin changes it, a viewer reads it.
  {
    method: "PUT",
    path: "/api/policy",
    auth: admin,
    summary: "Store a policy version: active at once when it only tightens, else proposed (or shadow) (contract section 24, admin)",
    request: jsonBody(putPolicySchema),
    responses: {
      200: { description: "Identical to the active version: that version", content: json(policyChangeSchema) },
      201: { description: "Stored", content: json(policyChangeSchema) },
      ...errors(400, 409, 413, 415, ...API_ERRORS),
    },
    handler: (request, env) => handlePutPolicy(request, env, request.config, request.principal),
  },
  {
    method: "GET",
    path: "/api/policy",
    auth: viewer,
    summary: "The active policy version whole (contract section 24, viewer)",
    responses: { 200: { description: "The active version", content: json(policyVersionSchema) }, ...errors(...API_ERRORS) },
    handler: (request, env) => handleGetPolicy(env, request.config),
  },
  {
    method: "GET",
    path: "/api/policy/versions",
    auth: viewer,
    summary: "Policy versions, newest first; version 0 (the settings) last (contract section 24, viewer)",
    request: { query: policyVersionsQuerySchema },
    responses: { 200: { description: "One page", content: json(policyVersionsPageSchema) }, ...errors(400, ...API_ERRORS) },
    handler: (request, env) => handleListPolicyVersions(new URL(request.url), env, request.config),
  },
  {
    method: "GET",
    path: "/api/policy/shadow",
    auth: viewer,
    summary: "Where the shadow version's verdict at a check differed from the active one's, newest first (contract section 24, viewer)",
    request: { query: policyShadowQuerySchema },
    responses: { 200: { description: "One page", content: json(policyShadowPageSchema) }, ...errors(400, ...API_ERRORS) },
    handler: (request, env) => handleListShadowDifferences(new URL(request.url), env, request.config),
  },
  {
    method: "GET",
    path: "/api/policy/versions/:v",
    auth: viewer,
    summary: "One policy version with what it loosens (contract section 24, viewer)",
    request: { params: z.object({ v: z.string() }) },
    responses: { 200: { description: "The version", content: json(policyVersionSchema) }, ...errors(400, 404, ...API_ERRORS) },
    handler: (request, env) => handleGetPolicyVersion(env, request.config, decodePathParam(request.params.v)),
  },
  {
    method: "POST",
    path: "/api/policy/versions/:v/approve",
    auth: admin,
    summary: "Activate a proposed or shadow version; one that loosens needs another person (contract section 24, admin)",
    request: { params: z.object({ v: z.string() }) },
    responses: {
      200: { description: "Active", content: json(policyChangeSchema) },
      ...errors(400, 404, 409, ...API_ERRORS),
    },
    handler: (request, env) => handleApprovePolicy(env, request.config, decodePathParam(request.params.v), request.principal),
  },
  {
    method: "DELETE",
    path: "/api/policy/versions/:v",
    auth: admin,
    summary: "Withdraw a proposed or shadow version (contract section 24, admin)",
    request: { params: z.object({ v: z.string() }) },
    responses: { 200: { description: "Withdrawn", content: json(policyChangeSchema) }, ...errors(400, 404, 409, ...API_ERRORS) },
    handler: (request, env) => handleWithdrawPolicy(env, request.config, decodePathParam(request.params.v), request.principal),
  },
  // Policy as versioned data (contract section 24).
  {
    method: "POST",
    path: "/api/policy/replay",
    auth: admin,
    summary:
      "Judge a window of recorded calls by a candidate policy: the checks it decides otherwise, one bounded page (contract section 24, admin)",
    request: jsonBody(replayRequestSchema),
    responses: { 200: { description: "One page", content: json(replayResponseSchema) }, ...errors(400, 413, 415, ...API_ERRORS) },
    handler: (request, env) => handlePolicyReplay(request, env.DB, request.config, request.principal),
  },
  // An audit you can prove (contract section 25).
  {
    method: "GET",
    path: "/api/audit/export",
    auth: admin,
    summary: "The sealed audit chain as JSON Lines or OCSF API Activity, streamed (contract section 25, admin)",
    request: { query: auditExportQuerySchema },
    responses: {
      200: { description: "JSON Lines: {entry}, {checkpoint} or {anchor}", content: { "application/x-ndjson": { schema: z.string() } } },
      ...errors(400, 410, ...API_ERRORS),
    },
    handler: (request, env) => handleAuditExport(new URL(request.url), env.DB),
  },
  {
    method: "GET",
    path: "/api/audit/checkpoints",
    auth: viewer,
    summary: "Signed checkpoints, newest first (contract section 25, viewer)",
    request: { query: checkpointsQuerySchema },
    responses: {
      200: {
        description: "One page",
        content: json(z.object({ checkpoints: z.array(auditCheckpointSchema), next_cursor: z.string().nullable() }).strict()),
      },
      ...errors(400, ...API_ERRORS),
    },
    handler: (request, env) => handleListCheckpoints(new URL(request.url), env.DB),
  },
  {
    method: "POST",
    path: "/api/audit/checkpoints",
    auth: admin,
    summary: "Seal and sign the audit chain's head now (contract section 25, admin; at most once a minute)",
    responses: {
      200: { description: "The head has not moved: the existing checkpoint", content: json(auditCheckpointSchema) },
      201: { description: "Signed", content: json(auditCheckpointSchema) },
      ...errors(409, ...API_ERRORS),
    },
    handler: (request, env) => handleCreateCheckpoint(env, request.principal.id),
  },
  {
    method: "GET",
    path: "/api/audit/public-key",
    auth: viewer,
    summary: "Every public key (JWK with kid) that signed a kept checkpoint (contract section 25, viewer)",
    responses: {
      200: { description: "The keys", content: json(z.object({ keys: z.array(z.record(z.string(), z.unknown())) }).strict()) },
      ...errors(...API_ERRORS),
    },
    handler: (_request, env) => handlePublicKeys(env.DB),
  },
  {
    method: "POST",
    path: "/api/audit/:auditId/scrub",
    auth: admin,
    summary: "Drop an audit entry's details, keeping its details_hash so the chain still verifies (contract section 25, admin)",
    request: { params: z.object({ auditId: z.string() }) },
    responses: {
      200: {
        description: "Scrubbed",
        content: json(z.object({ id: z.string(), scrubbed: z.literal(true), details_hash: z.string().optional() }).strict()),
      },
      ...errors(404, ...API_ERRORS),
    },
    handler: (request, env) => handleScrub(env.DB, decodePathParam(request.params.auditId), request.principal.id),
  },

  // Slack installations (contract section 26).
  {
    method: "GET",
    path: "/slack/install",
    auth: { kind: "browser_role", rule: { role: "admin" } },
    summary: "Start installing the Slack app into a workspace or organisation: 302 to Slack's authorize page (contract section 26, admin)",
    description:
      "By a console session or Cloudflare Access user only, never a bearer token. Sets the `slack_install` cookie (SameSite=Lax) that binds the single-use state to the browser.",
    responses: {
      302: { description: "To `<SLACK_OAUTH_BASE_URL>oauth/v2/authorize` with PKCE S256 and the state" },
      401: { description: "No console session or Access user", content: { "text/html": { schema: z.string() } } },
      403: { description: "Not an admin, or a bearer token", content: { "text/html": { schema: z.string() } } },
      503: { description: "Installations are off, or the configuration is bad", content: { "text/html": { schema: z.string() } } },
    },
    handler: (request, env, ctx) => handleInstall(request, env, ctx),
  },
  {
    method: "GET",
    path: "/slack/oauth_redirect",
    auth: { kind: "oauth_state" },
    summary: "Slack's redirect back: a live, unused state with its cookie, then oauth.v2.access (contract section 26)",
    request: {
      query: z.object({
        state: z.string().max(512).optional(),
        code: z.string().max(4_096).optional(),
        error: z.string().max(256).optional(),
      }),
    },
    responses: {
      200: { description: "A page: installed", content: { "text/html": { schema: z.string() } } },
      400: { description: "bad_state or authorization_failed (X-Error-Code)", content: { "text/html": { schema: z.string() } } },
      403: { description: "forbidden (another principal) or team_not_allowed", content: { "text/html": { schema: z.string() } } },
      502: { description: "slack_unavailable", content: { "text/html": { schema: z.string() } } },
      503: { description: "Installations are off, or the configuration is bad", content: { "text/html": { schema: z.string() } } },
    },
    handler: (request, env, ctx) => handleOAuthRedirect(request, env, ctx),
  },
  {
    method: "GET",
    path: "/api/slack/installations",
    auth: admin,
    summary: "The Slack installations, never their tokens (contract section 26, admin)",
    responses: { 200: { description: "Every installation", content: json(installationsListingSchema) }, ...errors(...API_ERRORS) },
    handler: (request, env) => handleListInstallations(env, request.config),
  },
  {
    method: "GET",
    path: "/api/webhooks",
    auth: admin,
    summary: "The webhook endpoints, their state and counts, never their secrets (contract section 26, admin)",
    responses: { 200: { description: "Every configured endpoint", content: json(webhookListingSchema) }, ...errors(...API_ERRORS) },
    handler: (request, env) => handleListWebhooks(env, request.config),
  },
  {
    method: "DELETE",
    path: "/api/slack/installations/:installationId",
    auth: admin,
    summary: "Uninstall: delete its tokens, call apps.uninstall, stop its posts (contract section 26, admin)",
    request: { params: z.object({ installationId: z.string() }) },
    responses: {
      200: { description: "Uninstalled", content: json(installationsListingSchema) },
      ...errors(404, ...API_ERRORS),
    },
    handler: (request, env) =>
      handleDeleteInstallation(env, request.config, decodePathParam(request.params.installationId), request.principal.id),
  },

  // The Slack app (contract section 14): Slack's signature instead of a credential.
  {
    method: "POST",
    path: "/slack/events",
    auth: { kind: "slack_signature" },
    summary: "The Slack app's Events API request URL (contract section 14)",
    request: slackBody,
    responses: slackResponses,
    handler: (request, env, ctx) => handleSlackRequest(request, env, ctx, "events"),
  },
  {
    method: "POST",
    path: "/slack/interactivity",
    auth: { kind: "slack_signature" },
    summary: "The Slack app's interactivity request URL: clicks and modal submissions (contract section 14)",
    request: slackBody,
    responses: slackResponses,
    handler: (request, env, ctx) => handleSlackRequest(request, env, ctx, "interactivity"),
  },
];
