// The Worker's HTTP surface: auth, config guards, input validation and every
// error code of contract section 2, always JSON and never a 500 for bad input.
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { MAX_BODY_BYTES } from "../../src/http/request-body";
import { api, openEvents, trigger } from "./helpers";

async function expectError(res: Response, status: number, error: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = await res.json<any>();
  expect(body.error).toBe(error);
  expect(typeof body.message).toBe("string");
  return body;
}

describe("auth and configuration", () => {
  it("serves /healthz without a token", async () => {
    const res = await SELF.fetch("https://engine.test/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("answers 401 for a missing, malformed or wrong token", async () => {
    await expectError(await SELF.fetch("https://engine.test/api/trigger", { method: "POST" }), 401, "unauthorized");
    await expectError(await api("/api/runs/x", { headers: { authorization: "test-token" } }), 401, "unauthorized");
    await expectError(await api("/api/runs/x", { headers: { authorization: "Bearer test-tokeN" } }), 401, "unauthorized");
    await expectError(await api("/api/runs/x", { headers: { authorization: "Bearer " } }), 401, "unauthorized");
  });

  it("fails closed with 503 not_configured when no API_TOKEN is set", async () => {
    const res = await worker.fetch(
      new Request("https://engine.test/api/runs/x", { headers: { authorization: "Bearer anything" } }),
      { ...env, API_TOKEN: undefined } as never,
      createExecutionContext(),
    );
    await expectError(res, 503, "not_configured");
  });

  it("answers 503 bad_config with details instead of running half-configured", async () => {
    const res = await worker.fetch(
      new Request("https://engine.test/api/trigger", { method: "POST", headers: { authorization: "Bearer test-token" } }),
      { ...env, MCP_SERVERS: "{not json", MAX_TOOL_CALLS: "-1" } as never,
      createExecutionContext(),
    );
    const body = await expectError(res, 503, "bad_config");
    expect(body.details.map((d: { path: string }) => d.path).sort()).toEqual(["MAX_TOOL_CALLS", "MCP_SERVERS"]);
  });
});

describe("trigger input", () => {
  it("accepts a run with 202 and its events URL", async () => {
    const { status, json } = await trigger({ message: "hi", channel_id: "C9" });
    expect(status).toBe(202);
    expect(json).toEqual({
      status: "accepted",
      run_id: expect.stringMatching(/^run_/),
      channel_id: "C9",
      events_url: `/api/runs/${json.run_id}/events`,
    });
  });

  it("rejects invalid bodies with 400 and the validation issues", async () => {
    const body = await expectError(
      await api("/api/trigger", { method: "POST", body: JSON.stringify({ message: "" }) }),
      400,
      "invalid_request",
    );
    expect(body.details[0].path).toBe("message");
    await expectError(
      await api("/api/trigger", { method: "POST", body: JSON.stringify({ message: "x", surprise: 1 }) }),
      400,
      "invalid_request",
    );
    await expectError(
      await api("/api/trigger", { method: "POST", body: JSON.stringify({ message: "x", max_tool_calls: -1 }) }),
      400,
      "invalid_request",
    );
    await expectError(
      await api("/api/trigger", { method: "POST", body: JSON.stringify({ message: "x", script: [{ delay_ms: "soon" }] }) }),
      400,
      "invalid_request",
    );
    await expectError(await api("/api/trigger", { method: "POST", body: JSON.stringify([1]) }), 400, "invalid_request");
  });

  it("answers 400 invalid_json for a body that is not JSON", async () => {
    await expectError(await api("/api/trigger", { method: "POST", body: "{message:" }), 400, "invalid_json");
    await expectError(await api("/api/trigger", { method: "POST", body: "" }), 400, "invalid_json");
  });

  it("answers 415 for a non-JSON media type", async () => {
    const res = await api("/api/trigger", {
      method: "POST",
      body: "message=hi",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    await expectError(res, 415, "unsupported_media_type");
  });

  it("answers 413 for a body over 64 KiB, by its real size even without Content-Length", async () => {
    const big = JSON.stringify({ message: "x".repeat(MAX_BODY_BYTES) });
    await expectError(await api("/api/trigger", { method: "POST", body: big }), 413, "payload_too_large");
    const stream = new Blob([big]).stream();
    await expectError(await api("/api/trigger", { method: "POST", body: stream, duplex: "half" } as RequestInit), 413, "payload_too_large");
  });

  it("refuses scripted tool calls with names no tool can have", async () => {
    const body = await expectError(
      await api("/api/trigger", {
        method: "POST",
        body: JSON.stringify({ message: "x", script: [{ text: "a" }, { tool_calls: [{ tool_name: "rm -rf", arguments: {} }] }] }),
      }),
      400,
      "invalid_request",
    );
    expect(body.details[0].path).toBe("script.1.tool_calls.0.tool_name");
  });
});

describe("run routes", () => {
  it("answers 404 for unknown runs, malformed or well-formed", async () => {
    await expectError(await api("/api/runs/nope"), 404, "not_found");
    await expectError(await api("/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404, "not_found");
    await expectError(await api("/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/events"), 404, "not_found");
    await expectError(await api("/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel", { method: "POST" }), 404, "not_found");
    await expectError(await api("/api/deliveries/never-seen"), 404, "not_found");
    await expectError(await api("/api/deliveries/%E0%A4%A"), 404, "not_found");
    await expectError(await api("/api/no-such-route"), 404, "not_found");
  });

  it("answers 400 for an after or Last-Event-ID that is not a non-negative integer", async () => {
    const { json } = await trigger({ message: "m" });
    for (const q of ["?after=-1", "?after=abc", "?after=1.5", "?after="]) {
      await expectError(await openEvents(json.run_id, q), 400, "invalid_request");
    }
    await expectError(await openEvents(json.run_id, "", { "last-event-id": "x" }), 400, "invalid_request");
  });

  it("returns the run summary", async () => {
    const { json } = await trigger({ message: "m", channel_id: "C2" });
    const res = await api(`/api/runs/${json.run_id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      run_id: json.run_id,
      channel_id: "C2",
      status: "completed",
      last_sequence: 3,
      earliest_sequence: 1,
      subscribers: 0,
      pending_approvals: [],
      pending_inputs: [],
      created_at: expect.any(String),
      ended_at: expect.any(String),
    });
  });
});
