// The Slack app is built once per isolate and Slack's signature is checked
// once per request (issue 28 point 6): two signed requests with different
// settings go through the one shared app, each listener sees its own
// request's settings, and crypto.subtle.verify runs once per request (it ran
// twice while slack-edge checked the signature again after ours).
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { SlackApp } from "slack-edge";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/config/env";
import { handleSlackRequest } from "../../src/slack/slack-app";
import { isPostingStopped } from "../../src/slack/stop-posting";

const SECRET = "once-signing-secret";
const TEAM = "T0ONCE";

function slackEnv(botToken: string): Env {
  return {
    ...env,
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_BOT_TOKEN: botToken,
    SLACK_API_BASE_URL: `${env.SLACK_STAND_IN_URL}/api/`,
    SLACK_TEAM_ID: TEAM,
  } as unknown as Env;
}

async function signed(body: string): Promise<Request> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(SECRET), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`v0:${timestamp}:${body}`));
  const signature = `v0=${Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("")}`;
  return new Request("https://engine.test/slack/events", {
    method: "POST",
    headers: { "content-type": "application/json", "x-slack-request-timestamp": timestamp, "x-slack-signature": signature },
    body,
  });
}

/** Slack's tokens_revoked event for the installation's team: the app stops posting with the request's bot token. */
function tokensRevoked(eventId: string): string {
  return JSON.stringify({
    type: "event_callback",
    team_id: TEAM,
    event_id: eventId,
    event: { type: "tokens_revoked", tokens: { bot: ["UBOT"] } },
  });
}

async function send(request: Request, botToken: string): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await handleSlackRequest(request, slackEnv(botToken), ctx, "events");
  await waitOnExecutionContext(ctx);
  return res;
}

afterEach(() => vi.restoreAllMocks());

describe("the Slack app, once per isolate", () => {
  it("checks a request's signature once", async () => {
    const verify = vi.spyOn(crypto.subtle, "verify");
    const request = await signed(JSON.stringify({ type: "url_verification", challenge: "c-1" }));
    const res = await send(request, "xoxb-once-a");
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("c-1");
    expect(verify).toHaveBeenCalledTimes(1);
  });

  it("serves requests with different settings from one app, each listener seeing its own request's", async () => {
    const event = vi.spyOn(SlackApp.prototype, "event");
    expect((await send(await signed(tokensRevoked("Ev0ONCE1")), "xoxb-once-first")).status).toBe(200);
    const afterFirst = event.mock.calls.length;
    expect((await send(await signed(tokensRevoked("Ev0ONCE2")), "xoxb-once-second")).status).toBe(200);
    // No listener registered again: the second request reused the app the first one found (or built).
    expect(event.mock.calls.length).toBe(afterFirst);
    // Each request's lazy listener recorded the stop for its own bot token, not the first request's.
    expect(await isPostingStopped(env.DB, "xoxb-once-first")).toBe(true);
    expect(await isPostingStopped(env.DB, "xoxb-once-second")).toBe(true);
    expect(await isPostingStopped(env.DB, "xoxb-once-never-sent")).toBe(false);
  });
});
