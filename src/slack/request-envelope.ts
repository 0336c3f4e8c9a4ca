// What a verified Slack request's body is (contract sections 14 and 20),
// decided before slack-edge sees it. Pure: given the route, the Content-Type
// and the raw body, answer
//  - "bad_request": not valid form or JSON, or no `payload` (interactivity) /
//    `event` (Events API) in it: `400 {"error":"bad_request"}`;
//  - "acknowledge": well formed, but nothing this app acts on or a shape it
//    does not read: `200`, and slack-edge never sees it;
//  - "handle": a payload of a type and shape a listener of this app takes.
// Only "handle" bodies reach slack-edge, so its context extraction and
// handlers never meet a shape they would throw on, and its
// `*** No listener found ***` dump of the raw body (it logs with console.log,
// no logger can be given to it) is never reached.
import { z } from "zod";
import { ACTION_APPROVE, ACTION_DENY, ACTION_INPUT_ANSWER, VIEW_CONFIRM_APPROVAL, VIEW_INPUT_ANSWER } from "./blocks";
import { ACTION_INPUT_DECLINE, VIEW_INPUT_FORM } from "./question-form";

export type SlackRoute = "events" | "interactivity";

export type SlackEnvelope =
  | { kind: "bad_request"; message: string }
  | { kind: "acknowledge"; reason: string }
  /** `body`: the Events API envelope, or the interactivity payload (what the team scope reads, src/slack/team-scope.ts). */
  | { kind: "handle"; type: string; body: Record<string, unknown> };

/** Event types this app acts on; every other verified event is acknowledged and ignored. */
const HANDLED_EVENTS: ReadonlySet<string> = new Set(["app_mention", "message", "app_home_opened", "app_uninstalled", "tokens_revoked"]);
const HANDLED_ACTIONS: ReadonlySet<string> = new Set([ACTION_APPROVE, ACTION_DENY, ACTION_INPUT_ANSWER, ACTION_INPUT_DECLINE]);
// VIEW_INPUT_FORM: an MCP server's question (contract section 21), its inputs built from requested_schema.
const HANDLED_VIEWS: ReadonlySet<string> = new Set([VIEW_CONFIRM_APPROVAL, VIEW_INPUT_ANSWER, VIEW_INPUT_FORM]);

const text = z.string().max(4_000);
const slackId = z.string().max(200);

/** The fields of `authorizations[]` slack-edge and this app read. */
const authorizationSchema = z
  .object({
    user_id: slackId.optional(),
    team_id: slackId.nullish(),
    enterprise_id: slackId.nullish(),
    is_enterprise_install: z.boolean().optional(),
  })
  .loose();

/** The envelope of an Events API request, as far as slack-edge's context extraction reads it. */
const eventCallbackSchema = z
  .object({
    type: z.literal("event_callback"),
    event_id: slackId.optional(),
    team_id: slackId.optional(),
    enterprise_id: slackId.nullish(),
    is_ext_shared_channel: z.boolean().optional(),
    authorizations: z.array(authorizationSchema).max(100).optional(),
    event: z
      .object({
        type: slackId,
        user: z.union([slackId, z.object({ id: slackId.optional() }).loose()]).optional(),
        channel: z.union([slackId, z.object({ id: slackId.optional() }).loose()]).optional(),
        user_team: slackId.optional(),
        team: slackId.optional(),
        bot_id: slackId.optional(),
        ts: slackId.optional(),
        thread_ts: slackId.optional(),
        text: z.string().optional(),
        item: z.object({ channel: slackId.optional() }).loose().optional(),
        message: z.object({ thread_ts: slackId.optional() }).loose().optional(),
        assistant_thread: z.object({}).loose().optional(),
      })
      .loose(),
  })
  .loose();

/** The user, team and place of an interactivity payload. */
const interactionBase = {
  user: z.object({ id: slackId, team_id: slackId.optional() }).loose(),
  team: z.object({ id: slackId.optional() }).loose().nullish(),
  enterprise: z.object({ id: slackId.optional() }).loose().nullish(),
  is_enterprise_install: z.boolean().optional(),
  response_url: z.string().max(2_000).optional(),
  trigger_id: slackId.optional(),
};

const blockActionsSchema = z
  .object({
    type: z.literal("block_actions"),
    ...interactionBase,
    trigger_id: slackId,
    channel: z.object({ id: slackId }).loose().optional(),
    container: z.object({}).loose().optional(),
    message: z.object({ ts: slackId.optional(), thread_ts: slackId.optional() }).loose().optional(),
    actions: z
      .array(z.object({ action_id: slackId, value: z.string().max(2_000).optional(), block_id: slackId.optional() }).loose())
      .min(1)
      .max(25),
  })
  .loose();

const viewSubmissionSchema = z
  .object({
    type: z.literal("view_submission"),
    ...interactionBase,
    view: z
      .object({
        callback_id: slackId,
        private_metadata: text,
        app_installed_team_id: slackId.optional(),
        team_id: slackId.optional(),
        state: z.object({ values: z.record(z.string(), z.record(z.string(), z.object({ value: text.nullish() }).loose())) }).loose(),
      })
      .loose(),
  })
  .loose();

const objectSchema = z.record(z.string(), z.unknown());

function parseJsonObject(raw: string): Record<string, unknown> | null {
  try {
    const parsed = objectSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * The body as slack-edge's own parser reads it (src of slack-edge's
 * parseRequestBody): JSON when the Content-Type says so or the body opens
 * with `{`, else a form whose `payload` field is JSON.
 */
function readBody(contentType: string, raw: string): { form: boolean; body: Record<string, unknown> | null } {
  if (contentType.toLowerCase().startsWith("application/json") || raw.startsWith("{")) return { form: false, body: parseJsonObject(raw) };
  const payload = new URLSearchParams(raw).get("payload");
  return { form: true, body: payload === null ? null : parseJsonObject(payload) };
}

export function classifySlackRequest(route: SlackRoute, contentType: string, raw: string): SlackEnvelope {
  return route === "events" ? classifyEvent(contentType, raw) : classifyInteraction(contentType, raw);
}

function classifyEvent(contentType: string, raw: string): SlackEnvelope {
  const { body } = readBody(contentType, raw);
  if (body === null) return badRequest("The Events API body must be a JSON object.");
  if (body.type === "url_verification") {
    return typeof body.challenge === "string"
      ? { kind: "handle", type: "url_verification", body }
      : badRequest("url_verification carries no challenge.");
  }
  if (body.type === "app_rate_limited") return { kind: "acknowledge", reason: "app_rate_limited" };
  if (body.event === null || typeof body.event !== "object" || Array.isArray(body.event)) {
    return badRequest("The Events API body carries no `event` object.");
  }
  const parsed = eventCallbackSchema.safeParse(body);
  if (!parsed.success) return { kind: "acknowledge", reason: "an event envelope of a shape this app does not read" };
  if (!HANDLED_EVENTS.has(parsed.data.event.type)) return { kind: "acknowledge", reason: `event ${parsed.data.event.type}` };
  return { kind: "handle", type: parsed.data.event.type, body };
}

function classifyInteraction(contentType: string, raw: string): SlackEnvelope {
  const { form, body } = readBody(contentType, raw);
  if (!form) return badRequest("Interactivity requests are a form (application/x-www-form-urlencoded) with a `payload` field.");
  if (body === null) return badRequest("The form carries no `payload` field holding a JSON object.");
  if (body.type === "block_actions") {
    const parsed = blockActionsSchema.safeParse(body);
    if (!parsed.success) return { kind: "acknowledge", reason: "a block_actions payload of a shape this app does not read" };
    const action = parsed.data.actions[0]!.action_id;
    return HANDLED_ACTIONS.has(action)
      ? { kind: "handle", type: "block_actions", body }
      : { kind: "acknowledge", reason: `action ${action}` };
  }
  if (body.type === "view_submission") {
    const parsed = viewSubmissionSchema.safeParse(body);
    if (!parsed.success) return { kind: "acknowledge", reason: "a view_submission payload of a shape this app does not read" };
    const view = parsed.data.view.callback_id;
    return HANDLED_VIEWS.has(view) ? { kind: "handle", type: "view_submission", body } : { kind: "acknowledge", reason: `view ${view}` };
  }
  return { kind: "acknowledge", reason: "an interaction type this app does not use" };
}

function badRequest(message: string): SlackEnvelope {
  return { kind: "bad_request", message };
}
