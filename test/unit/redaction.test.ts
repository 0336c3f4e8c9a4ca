import { describe, expect, it } from "vitest";
import { REDACTED, redactSecrets } from "../../src/execution/redaction";

describe("redactSecrets", () => {
  it("replaces secret-looking values at any depth and keeps everything else", () => {
    const input = {
      title: "Latency",
      api_key: "k-1",
      headers: { Authorization: "Bearer x", "X-Trace": "t" },
      nested: [{ password: { deep: 1 } }, { apiKey: "a", "api-key": "b", session_cookie: "c", refreshToken: "r", client_secret: "s" }],
      tokens_used: 5,
    };
    expect(redactSecrets(input)).toEqual({
      title: "Latency",
      api_key: REDACTED,
      headers: { Authorization: REDACTED, "X-Trace": "t" },
      nested: [
        { password: REDACTED },
        { apiKey: REDACTED, "api-key": REDACTED, session_cookie: REDACTED, refreshToken: REDACTED, client_secret: REDACTED },
      ],
      tokens_used: REDACTED,
    });
    expect(input.api_key).toBe("k-1"); // the original is untouched
  });
});
