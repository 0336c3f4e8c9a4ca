// Signs requests exactly as Slack does (v0): X-Slack-Signature = "v0=" + hex
// HMAC-SHA256(signing secret, "v0:<timestamp>:<raw body>"), with
// X-Slack-Request-Timestamp. This is the test client's side (node:crypto);
// the server verifies with slack-edge.
import { createHmac } from "node:crypto";

function slackSignature(secret: string, timestamp: number, rawBody: string): string {
  return `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:${rawBody}`).digest("hex")}`;
}

export interface SignOptions {
  /** Seconds since the epoch; default now. */
  timestamp?: number;
  /** Sign with this secret instead (a bad signature). */
  secretOverride?: string;
  retryNum?: number;
}

/** POSTs an Events API envelope (JSON) to `url`, signed. */
export function postSlackEvent(url: string, secret: string, envelope: unknown, options: SignOptions = {}): Promise<Response> {
  return signedPost(url, secret, JSON.stringify(envelope), "application/json", options);
}

/** POSTs an interactivity payload (form-encoded `payload=`) to `url`, signed. */
export function postSlackInteraction(url: string, secret: string, payload: unknown, options: SignOptions = {}): Promise<Response> {
  return signedPost(
    url,
    secret,
    new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
    "application/x-www-form-urlencoded",
    options,
  );
}

export function signedPost(
  url: string,
  secret: string,
  rawBody: string,
  contentType: string,
  options: SignOptions = {},
): Promise<Response> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    "content-type": contentType,
    "x-slack-request-timestamp": String(timestamp),
    "x-slack-signature": slackSignature(options.secretOverride ?? secret, timestamp, rawBody),
  };
  if (options.retryNum !== undefined) {
    headers["x-slack-retry-num"] = String(options.retryNum);
    headers["x-slack-retry-reason"] = "http_timeout";
  }
  return fetch(url, { method: "POST", headers, body: rawBody });
}

/** The team the helpers sign for by default: the Slack stand-in's auth.test names it too. */
export const TEST_TEAM_ID = "T0001";

/** An Events API envelope as Slack sends it (from `teamId`, default the test team). */
export function eventEnvelope(
  event: Record<string, unknown>,
  eventId: string,
  botUserId = "UBOT0001",
  teamId = TEST_TEAM_ID,
): Record<string, unknown> {
  return {
    token: "legacy-verification-token",
    team_id: teamId,
    api_app_id: "A0001",
    event,
    type: "event_callback",
    event_id: eventId,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ enterprise_id: null, team_id: teamId, user_id: botUserId, is_bot: true, is_enterprise_install: false }],
    is_ext_shared_channel: false,
  };
}

export interface ButtonClick {
  actionId: string;
  user: string;
  channel: string;
  /** The button's value as the app rendered it (a string, read back by the app). */
  value: string;
  triggerId: string;
  botUserId?: string;
  /** The workspace the click came from (default the test team). */
  teamId?: string;
  /** The clicking user's own team (default the workspace's: a member, not a guest from another organisation). */
  userTeamId?: string;
}

/** A block_actions interaction payload as Slack sends it for one button click on a message in a thread. */
export function blockActionsPayload(click: ButtonClick): Record<string, unknown> {
  const { actionId, user, channel, value, triggerId, botUserId = "UBOT0001", teamId = TEST_TEAM_ID } = click;
  return {
    type: "block_actions",
    // As Slack sends it: the user's id beside a display name that is not it (the app must decide by the id).
    user: { id: user, username: slackUserName(user), name: slackUserName(user), team_id: click.userTeamId ?? teamId },
    api_app_id: "A0001",
    token: "legacy",
    container: { type: "message", message_ts: "1.000001", channel_id: channel, is_ephemeral: false },
    trigger_id: triggerId,
    team: { id: teamId, domain: "test" },
    channel: { id: channel, name: "ops" },
    message: { type: "message", ts: "1.000001", thread_ts: "1.000000", text: "approval", user: botUserId, bot_id: "B0001" },
    actions: [{ type: "button", action_id: actionId, block_id: "b", value, text: { type: "plain_text", text: "x" }, action_ts: "1" }],
  };
}

/** A Slack user's name (handle), never equal to their id. */
export function slackUserName(user: string): string {
  return `${user.toLowerCase()}.name`;
}

/** A Slack message carrying a fenced JSON script, which the scripted provider plays (contract section 14). */
export function scriptMessage(script: unknown[]): string {
  return `please run this\n\`\`\`json\n${JSON.stringify({ script })}\n\`\`\``;
}
