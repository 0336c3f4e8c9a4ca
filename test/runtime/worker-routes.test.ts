// The Worker's HTTP surface: auth, config guards, input validation and every
// error code of contract section 2, always JSON and never a 500 for bad input.
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { MAX_BODY_BYTES } from "../../src/http/request-body";
import { api, openEvents, TOKEN, trigger } from "./helpers";

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
    await expectError(await api("/api/runs/x", { headers: { authorization: TOKEN } }), 401, "unauthorized");
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
      new Request("https://engine.test/api/trigger", { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } }),
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
      user_id: "token:root",
      requested_by: "token:root",
      request: "m",
      status: "completed",
      last_sequence: 3,
      earliest_sequence: 1,
      subscribers: 0,
      // Contract section 27: the watchers by kind.
      watchers: { sse: 0, websocket: 0 },
      pending_approvals: [],
      pending_inputs: [],
      created_at: expect.any(String),
      ended_at: expect.any(String),
    });
  });
});

describe("HTTP details (contract section 2)", () => {
  it("takes the bearer scheme in any case, with one or more spaces", async () => {
    for (const authorization of [`bearer ${TOKEN}`, `BEARER ${TOKEN}`, `BeArEr   ${TOKEN}`]) {
      await expectError(await api("/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV", { headers: { authorization } }), 404, "not_found");
    }
    await expectError(await api("/api/runs/x", { headers: { authorization: `Bearer${TOKEN}` } }), 401, "unauthorized");
    await expectError(await api("/api/runs/x", { headers: { authorization: `Basic ${TOKEN}` } }), 401, "unauthorized");
  });

  it("gives bad_config details only to a caller with a valid token", async () => {
    const badEnv = { ...env, MCP_SERVERS: "{not json" } as never;
    for (const headers of [{}, { authorization: "Bearer wrong" }] as HeadersInit[]) {
      const res = await worker.fetch(new Request("https://engine.test/api/runs/x", { headers }), badEnv, createExecutionContext());
      const body = await expectError(res, 503, "bad_config");
      expect(body.details).toBeUndefined();
      expect(JSON.stringify(body)).not.toContain("MCP_SERVERS");
    }
    const res = await worker.fetch(
      new Request("https://engine.test/api/runs/x", { headers: { authorization: `bearer ${TOKEN}` } }),
      badEnv,
      createExecutionContext(),
    );
    expect((await expectError(res, 503, "bad_config")).details[0].path).toBe("MCP_SERVERS");
  });

  it("answers HEAD /healthz with 200", async () => {
    const res = await SELF.fetch("https://engine.test/healthz", { method: "HEAD" });
    expect(res.status).toBe(200);
  });

  it("answers a method a route does not serve with 405, JSON and Allow", async () => {
    const cases: Array<[string, string, string]> = [
      ["GET", "/api/trigger", "POST"],
      ["DELETE", "/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV", "GET"],
      ["PUT", "/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/approvals/a1", "POST"],
      ["GET", "/api/mutations/m1/reconcile", "POST"],
      ["PATCH", "/api/deliveries/d1", "GET"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await api(path, { method });
      await expectError(res, 405, "method_not_allowed");
      expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
    }
    const res = await SELF.fetch("https://engine.test/healthz", { method: "POST" });
    await expectError(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe("GET, HEAD");
  });
});

/** `{"a":[[[...]]]}`-style nesting: `levels` arrays around a value. */
function nested(levels: number): string {
  return `${"[".repeat(levels)}1${"]".repeat(levels)}`;
}

describe("bad input (contract section 17)", () => {
  const deepTrigger = (levels: number, extra = "") =>
    `{"message":"x"${extra},"script":[{"tool_calls":[{"tool_name":"mcp__demo__echo","arguments":{"a":${nested(levels)}}}]}]}`;

  it("refuses tool-call arguments nested ~4000 arrays deep (an 8 KB body) with 400, not 500", async () => {
    const body = deepTrigger(4000);
    expect(body.length).toBeLessThan(9000);
    const res = await api("/api/trigger", { method: "POST", body });
    const json = await expectError(res, 400, "invalid_request");
    expect(json.details[0]).toMatchObject({ code: "too_deep", max_depth: 64 });
  });

  it("counts nesting from the body's root: 64 levels pass the depth check, 65 do not", async () => {
    // body{ script[ turn{ tool_calls[ call{ arguments{ a: ... : six levels before the arrays.
    const unknownKey = ',"surprise":1'; // makes the body fail its schema after the depth check, so no run starts
    const ok = await expectError(await api("/api/trigger", { method: "POST", body: deepTrigger(58, unknownKey) }), 400, "invalid_request");
    expect(ok.details[0].code).not.toBe("too_deep");
    const deep = await expectError(
      await api("/api/trigger", { method: "POST", body: deepTrigger(59, unknownKey) }),
      400,
      "invalid_request",
    );
    expect(deep.details[0].code).toBe("too_deep");
    // Brackets inside strings are text, not nesting.
    const inString = JSON.stringify({ message: "[".repeat(500), surprise: 1 });
    expect((await expectError(await api("/api/trigger", { method: "POST", body: inString }), 400, "invalid_request")).details[0].path).toBe(
      "",
    );
  });

  it("checks nesting on every JSON route", async () => {
    for (const path of [
      "/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/approvals/a1",
      "/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/inputs/t1",
      "/api/mutations/m1/reconcile",
    ]) {
      const json = await expectError(await api(path, { method: "POST", body: `{"x":${nested(100)}}` }), 400, "invalid_request");
      expect(json.details[0].code, path).toBe("too_deep");
    }
  });

  it("refuses text D1 cannot store as given (a lone surrogate) with its path; NUL is stored as sent", async () => {
    const lone = await expectError(
      await api("/api/trigger", { method: "POST", body: '{"message":"hi","delivery_id":"ev-\\ud800"}' }),
      400,
      "invalid_request",
    );
    expect(lone.details[0]).toMatchObject({ path: "delivery_id", code: "unstorable_text" });
    const inKey = await expectError(
      await api("/api/trigger", {
        method: "POST",
        body: '{"message":"hi","script":[{"tool_calls":[{"tool_name":"human__ask","arguments":{"q\\udc00":1}}]}]}',
      }),
      400,
      "invalid_request",
    );
    expect(inKey.details[0].path).toBe("script.0.tool_calls.0.arguments.q\udc00");
    // A well-formed pair is fine; so is NUL, which D1 keeps byte for byte.
    const { status, json } = await trigger({ message: "pair \ud83d\ude00", delivery_id: "nul\u0000id", channel_id: "c\u0000" });
    expect(status).toBe(202);
    const receipt = await (await api(`/api/deliveries/${encodeURIComponent("nul\u0000id")}`)).json<any>();
    expect(receipt).toMatchObject({ delivery_id: "nul\u0000id", run_id: json.run_id, channel_id: "c\u0000" });
  });

  it("refuses a script turn that repeats a tool_call_id", async () => {
    const body = await expectError(
      await api("/api/trigger", {
        method: "POST",
        body: JSON.stringify({
          message: "x",
          script: [
            { tool_calls: [{ tool_name: "human__ask", tool_call_id: "t1", arguments: { question: "a" } }] },
            {
              tool_calls: [
                { tool_name: "human__ask", tool_call_id: "t1", arguments: { question: "b" } },
                { tool_name: "human__ask", tool_call_id: "t1", arguments: { question: "c" } },
              ],
            },
          ],
        }),
      }),
      400,
      "invalid_request",
    );
    expect(body.details[0]).toMatchObject({ path: "script.1.tool_calls.1.tool_call_id", code: "duplicate_tool_call_id" });
  });

  it("claims no delivery identity for a trigger that fails validation: a retry with the same id starts a run", async () => {
    const bad = await api("/api/trigger", { method: "POST", body: deepTrigger(4000, ',"delivery_id":"ev-deep"') });
    await expectError(bad, 400, "invalid_request");
    await expectError(await api("/api/deliveries/ev-deep"), 404, "not_found");
    const retry = await trigger({ message: "hi", delivery_id: "ev-deep" });
    expect(retry.status).toBe(202);
    const receipt = await (await api("/api/deliveries/ev-deep")).json<any>();
    expect(receipt.run_id).toBe(retry.json.run_id);
    expect((await api(`/api/runs/${receipt.run_id}`)).status).toBe(200);
  });

  it("releases the claim when the run fails to start, so the receipt never names a run that does not exist", async () => {
    let starts = 0;
    const failingObjects = {
      idFromName: (name: string) => env.RUN_OBJECT.idFromName(name),
      get: () => ({
        start: async () => {
          starts++;
          throw new Error("start failed (test double)");
        },
        summary: async () => null,
      }),
    };
    const request = () =>
      new Request("https://engine.test/api/trigger", {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ message: "hi", delivery_id: "ev-start-fails" }),
      });
    const failed = await worker.fetch(request(), { ...env, RUN_OBJECT: failingObjects } as never, createExecutionContext());
    await expectError(failed, 500, "internal_error");
    expect(starts).toBe(1);
    await expectError(await api("/api/deliveries/ev-start-fails"), 404, "not_found");
    const retry = await SELF.fetch(request());
    expect(retry.status).toBe(202);
    const { run_id } = await retry.json<any>();
    expect((await (await api("/api/deliveries/ev-start-fails")).json<any>()).run_id).toBe(run_id);
    expect((await api(`/api/runs/${run_id}`)).status).toBe(200);
  });

  it("starts the receipt's run from a duplicate when the first request died before starting it", async () => {
    // A receipt whose run never started (the first request died between the claim and the start).
    const runId = "run_01ARZ3NDEKTSV4RRFFQ69G5FAW";
    await env.DB.prepare("INSERT INTO deliveries (delivery_id, run_id, channel_id, accepted_at) VALUES (?, ?, ?, ?)")
      .bind("ev-orphan", runId, "C7", new Date().toISOString())
      .run();
    const again = await trigger({ message: "hi", delivery_id: "ev-orphan", channel_id: "C7" });
    expect(again).toMatchObject({ status: 200, json: { status: "duplicate", run_id: runId } });
    expect((await api(`/api/runs/${runId}`)).status).toBe(200);
  });
});
