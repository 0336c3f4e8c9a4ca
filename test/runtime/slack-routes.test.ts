// /slack/* inside workerd when the Slack app is off (this project's runtime
// bindings set no SLACK_SIGNING_SECRET / SLACK_BOT_TOKEN): JSON errors only.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("/slack/* routes", () => {
  it("answers 503 not_configured while the signing secret and bot token are not both set", async () => {
    for (const path of ["/slack/events", "/slack/interactivity"]) {
      const res = await SELF.fetch(`http://w${path}`, { method: "POST", body: "{}" });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ error: "not_configured" });
    }
  });

  it("answers JSON 405 with Allow for another method and 404 for another path", async () => {
    const get = await SELF.fetch("http://w/slack/events");
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect(await get.json()).toMatchObject({ error: "method_not_allowed" });
    const other = await SELF.fetch("http://w/slack/commands", { method: "POST" });
    expect(other.status).toBe(404);
    expect(await other.json()).toMatchObject({ error: "not_found" });
  });
});
