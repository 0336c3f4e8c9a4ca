// The JSON log lines of contract section 22 (src/operate/logger.ts): one JSON
// object per line with level and msg first, run_id / tool_call_id as fields,
// and everything redacted: a credential in the message, a field named like a
// credential, a token inside an error, at any depth.
import { afterEach, describe, expect, it, vi } from "vitest";
import { logger, logLine } from "../../src/operate/logger";

describe("logLine", () => {
  it("is one JSON object: level and msg first, then the fields", () => {
    const line = logLine("info", "run started", { run_id: "run_01", tool_call_id: "t1", attempts: 2 });
    expect(line).not.toContain("\n");
    expect(Object.keys(JSON.parse(line))).toEqual(["level", "msg", "run_id", "tool_call_id", "attempts"]);
    expect(JSON.parse(line)).toEqual({ level: "info", msg: "run started", run_id: "run_01", tool_call_id: "t1", attempts: 2 });
  });

  it("redacts the message, credential-named fields and credentials inside values, at any depth", () => {
    const line = logLine("error", "call failed with Authorization: Bearer sk-live-0123456789abcdef", {
      run_id: "run_01",
      api_token: "s3cret-value",
      nested: { headers: { authorization: "Bearer abcdefghijklmnop" } },
      error: new Error("upstream said password=hunter2hunter2"),
    });
    for (const secret of ["sk-live-0123456789abcdef", "s3cret-value", "abcdefghijklmnop", "hunter2hunter2"])
      expect(line).not.toContain(secret);
    const parsed = JSON.parse(line);
    expect(parsed.run_id).toBe("run_01");
    expect(parsed.api_token).toBe("[redacted]");
    expect(parsed.error.name).toBe("Error");
  });

  it("a field cannot overwrite level or msg", () => {
    expect(JSON.parse(logLine("warn", "real", { level: "debug", msg: "forged" }))).toMatchObject({ level: "warn", msg: "real" });
  });
});

describe("logger", () => {
  afterEach(() => vi.restoreAllMocks());

  it("writes each level through the matching console method (what Workers Logs collects)", () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    logger.error("boom", { run_id: "run_02" });
    logger.warn("careful");
    expect(JSON.parse(error.mock.calls[0]?.[0] as string)).toEqual({ level: "error", msg: "boom", run_id: "run_02" });
    expect(JSON.parse(warn.mock.calls[0]?.[0] as string)).toEqual({ level: "warn", msg: "careful" });
  });
});
