// The JSON log lines of contract section 22 (src/operate/logger.ts): one JSON
// object per line with level and msg first, run_id / tool_call_id as fields,
// and everything redacted: a credential in the message, a field named like a
// credential, a token inside an error, at any depth.
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/config";
import { setLogLevel } from "../../src/config/log-level";
import { logger, logLine } from "../../src/operate/logger";
import { lifecycleLine as lineOf } from "../../src/operate/run-log";
import { runEventOf } from "../runtime/run-events";

/** The lifecycle line of an event written as (type, fields) of run `runId`. */
const lifecycleLine = (type: string, fields: object, runId: string) => lineOf(runEventOf(type, { run_id: runId, ...fields }));

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

  it("LOG_LEVEL (default info) decides the least level written: warn keeps only problems", () => {
    const info = vi.spyOn(console, "info").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      expect(parseConfig({ LOG_LEVEL: "warn" }).state).not.toBe("bad_config");
      logger.info("run started", { run_id: "run_03" });
      logger.warn("careful");
      expect(info).not.toHaveBeenCalled();
      expect(warn).toHaveBeenCalledTimes(1);
      parseConfig({});
      logger.info("run started", { run_id: "run_03" });
      expect(JSON.parse(info.mock.calls[0]?.[0] as string)).toEqual({ level: "info", msg: "run started", run_id: "run_03" });
      expect(parseConfig({ LOG_LEVEL: "chatty" }).state).toBe("bad_config");
    } finally {
      setLogLevel("info");
    }
  });
});

describe("a run's lifecycle lines (contract section 22)", () => {
  it("name the start, each approval asked and resolved, each execution with mutation_id and outcome, and the end", () => {
    expect(lifecycleLine("run_started", { requested_by: "token:root", user_id: "api", channel_id: "api" }, "run_1")).toEqual({
      msg: "run started",
      fields: { run_id: "run_1", channel_id: "api", requested_by: "token:root" },
    });
    expect(
      lifecycleLine("approval_requested", { tool_call_id: "w1", approval_id: "a1", tool_name: "t", arguments: { x: 1 } }, "run_1"),
    ).toEqual({
      msg: "approval asked",
      fields: { run_id: "run_1", tool_call_id: "w1", approval_id: "a1", tool_name: "t" },
    });
    expect(
      lifecycleLine("approval_resolved", { tool_call_id: "w1", approval_id: "a1", decision: "approved", decided_by: "token:root" }, "run_1")
        ?.fields,
    ).toEqual({
      run_id: "run_1",
      tool_call_id: "w1",
      approval_id: "a1",
      decision: "approved",
      decided_by: "token:root",
    });
    const executed = {
      tool_call_id: "w1",
      execution_status: "executed",
      mutation_id: "m1",
      result: { is_error: false, summary: "secret text" },
    };
    expect(lifecycleLine("tool_execution", executed, "run_1")).toEqual({
      msg: "tool call executed",
      fields: { run_id: "run_1", tool_call_id: "w1", execution_status: "executed", mutation_id: "m1", outcome: "ok" },
    });
    expect(
      lifecycleLine("tool_execution", { ...executed, result: undefined, error: { code: "transport_timeout" } }, "run_1")?.fields.outcome,
    ).toBe("transport_timeout");
    expect(
      lifecycleLine("tool_execution", { tool_call_id: "w1", execution_status: "not_executed", reason: "denied" }, "run_1")?.fields.outcome,
    ).toBe("denied");
    expect(lifecycleLine("run_completed", { tool_calls: 2, text: "done" }, "run_1")).toEqual({
      msg: "run ended",
      fields: { run_id: "run_1", tool_calls: 2, status: "completed" },
    });
    expect(lifecycleLine("run_failed", { error: { code: "cancelled", message: "x" } }, "run_1")?.fields).toEqual({
      run_id: "run_1",
      status: "failed",
      error_code: "cancelled",
    });
    expect(lifecycleLine("assistant_message", { text: "hi" }, "run_1")).toBeNull();
    expect(lifecycleLine("heartbeat", {}, "run_1")).toBeNull();
  });
});
