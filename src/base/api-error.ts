// The API's error vocabulary (contract section 2): every `error` code any
// route answers (/api/*, /slack/*, /console*, /oauth/*) in one zod enum, and
// the one JSON shape `{"error": code, "message", "details"?}` with the helpers
// that build it. The ground floor, so every room (auth, operate, mcp-oauth,
// the surfaces) refuses in the same words without importing a surface. A new
// code goes in ERROR_CODES first; `apiError`/`errorJson` take no other.
// Built on itty-router's StatusError so a handler can `throw apiError(...)`
// anywhere and the router's single `catch` (src/http/api-error.ts) answers it.
import { StatusError } from "itty-router";
import { z } from "zod";

export const ERROR_CODES = [
  // Credentials and roles (sections 2, 16, 18).
  "unauthorized",
  "forbidden",
  "forbidden_origin",
  "actor_mismatch",
  "rate_limited",
  // The host configuration (section 13).
  "not_configured",
  "bad_config",
  // Bad input and unknown things (sections 2, 5, 17).
  "invalid_request",
  "invalid_json",
  "payload_too_large",
  "unsupported_media_type",
  "not_found",
  "method_not_allowed",
  "replay_gap",
  // Decisions and answers (sections 6, 19, 21).
  "not_an_approver",
  "self_approval_forbidden",
  "confirmation_mismatch",
  "invalid_answer",
  "already_resolved",
  "expired",
  // Durable outcomes and storage (sections 8, 9, 15, 22).
  "not_reconcilable",
  "storage_timeout",
  "storage_unavailable",
  // Named tokens (section 18).
  "name_taken",
  // MCP servers' OAuth (section 21).
  "not_oauth",
  "bad_state",
  "bad_iss",
  "authorization_failed",
  "oauth_discovery_failed",
  "oauth_no_client",
  "oauth_token_failed",
  // Slack installations (section 26).
  "team_not_allowed",
  "slack_unavailable",
  // The Slack app (section 14): a verified body that is not Slack's shape.
  "bad_request",
  // An audit you can prove (section 25): no signing key; an export from before what retention kept.
  "unsigned",
  "retained_from",
  // Brakes and limits (section 23): a halt covers it; a malformed halt scope; release votes.
  "halted",
  "invalid_scope",
  "self_release_forbidden",
  "second_person_required",
  // Policy as versioned data (section 24).
  "invalid_policy",
  "policy_conflict",
  "not_proposed",
  "shadow_exists",
  "not_deletable",
  "before_retention",
  // A bug, never bad input: logged, nothing internal said.
  "internal_error",
] as const;

export const errorCodeSchema = z.enum(ERROR_CODES);
type ErrorCode = z.infer<typeof errorCodeSchema>;

export interface ErrorBody {
  error: ErrorCode;
  message: string;
  details?: unknown;
  [extra: string]: unknown;
}

/** Every error answer as the OpenAPI document describes it (contract section 2). */
export const errorBodySchema = z
  .looseObject({ error: errorCodeSchema, message: z.string(), details: z.unknown().optional() })
  .meta({ id: "Error", description: 'Every error: {"error": code, "message", "details"?} (contract section 2).' });

/** An error to throw; the router's `catch` answers it as JSON. */
export function apiError(status: number, body: ErrorBody): StatusError {
  return new StatusError(status, body);
}

export function jsonResponse(status: number, body: unknown, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json; charset=utf-8");
  return new Response(JSON.stringify(body), { status, headers: h });
}

/** An error answered at once (where nothing is thrown): the same JSON shape, the same codes. */
export function errorJson(status: number, body: ErrorBody, headers?: HeadersInit): Response {
  return jsonResponse(status, body, headers);
}
