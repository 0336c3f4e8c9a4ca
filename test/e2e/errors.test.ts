// Every error code of the contract over real HTTP, including the ones that
// need their own deployment settings (no token, a bad config, a tiny
// retention), each served by its own wrangler dev.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RawSseClient, eventIds } from "../support/sse-client";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";

const url = inject("workerUrl");
const token = inject("workerToken");
const auth = { authorization: `Bearer ${token}` };

async function expectError(res: Response, status: number, error: string): Promise<any> {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await res.json()) as any;
  expect(body).toMatchObject({ error, message: expect.any(String) });
  return body;
}

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { method: "POST", headers: { ...auth, "content-type": "application/json", ...headers }, body });

describe("errors on the default deployment", () => {
  it("401 unauthorized", async () => {
    await expectError(await fetch(`${url}/api/runs/x`), 401, "unauthorized");
    await expectError(await fetch(`${url}/api/runs/x`, { headers: { authorization: "Bearer wrong" } }), 401, "unauthorized");
  });

  it("400 invalid_request with details, 400 invalid_json", async () => {
    const body = await expectError(await post("/api/trigger", JSON.stringify({ message: 42 })), 400, "invalid_request");
    expect(body.details).toEqual([expect.objectContaining({ path: "message" })]);
    await expectError(await post("/api/trigger", "{"), 400, "invalid_json");
    await expectError(
      await fetch(`${url}/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/events?after=x`, { headers: auth }),
      400,
      "invalid_request",
    );
  });

  it("413 payload_too_large", async () => {
    await expectError(await post("/api/trigger", JSON.stringify({ message: "x".repeat(70_000) })), 413, "payload_too_large");
  });

  it("415 unsupported_media_type", async () => {
    await expectError(await post("/api/trigger", "message=hi", { "content-type": "text/plain" }), 415, "unsupported_media_type");
  });

  it("404 not_found for unknown runs, deliveries and routes", async () => {
    await expectError(await fetch(`${url}/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV`, { headers: auth }), 404, "not_found");
    await expectError(await fetch(`${url}/api/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/events`, { headers: auth }), 404, "not_found");
    await expectError(await fetch(`${url}/api/deliveries/nope`, { headers: auth }), 404, "not_found");
    await expectError(await fetch(`${url}/api/nothing`, { headers: auth }), 404, "not_found");
  });
});

describe("deployments with other settings", () => {
  let unconfigured: WorkerServer;
  let badConfig: WorkerServer;
  let shortRetention: WorkerServer;

  beforeAll(async () => {
    [unconfigured, badConfig, shortRetention] = await Promise.all([
      startWorkerServer({ API_TOKEN: "" }),
      startWorkerServer({ MCP_SERVERS: "{not json", HEARTBEAT_INTERVAL_MS: "soon" }),
      startWorkerServer({ RUN_MAX_EVENTS: "5", RUN_RETENTION_SECONDS: "1" }),
    ]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([unconfigured?.stop(), badConfig?.stop(), shortRetention?.stop()]);
  });

  it("503 not_configured without an API token, whatever token is sent", async () => {
    await expectError(await fetch(`${unconfigured.url}/api/runs/x`, { headers: { authorization: "Bearer " } }), 503, "not_configured");
    await expectError(await unconfigured.api("/api/trigger", { method: "POST", body: "{}" }), 503, "not_configured");
    expect((await fetch(`${unconfigured.url}/healthz`)).status).toBe(200);
  });

  it("503 bad_config naming each bad value", async () => {
    const body = await expectError(await badConfig.api("/api/trigger", { method: "POST", body: "{}" }), 503, "bad_config");
    expect(body.details.map((d: { path: string }) => d.path).sort()).toEqual(["HEARTBEAT_INTERVAL_MS", "MCP_SERVERS"]);
  });

  it("410 replay_gap past the event cap and after retention deleted the run's events", async () => {
    const script = Array.from({ length: 6 }, (_, i) => ({ text: `t${i}` }));
    const res = await shortRetention.api("/api/trigger", { method: "POST", body: JSON.stringify({ message: "m", script }) });
    const { run_id } = (await res.json()) as any;
    // 8 events, at most 5 kept: 4..8 remain.
    const gap = await expectError(await shortRetention.api(`/api/runs/${run_id}/events?after=0`), 410, "replay_gap");
    expect(gap.earliest_sequence).toBe(4);
    const tail = await RawSseClient.open(`${shortRetention.url}/api/runs/${run_id}/events?after=3`, {
      authorization: `Bearer ${shortRetention.token}`,
    });
    expect(eventIds(await tail.toEnd())).toEqual([4, 5, 6, 7, 8]);
    // One second after the end, the retention alarm deletes everything.
    await expect
      .poll(async () => (await shortRetention.api(`/api/runs/${run_id}/events?after=3`)).status, { timeout: 10_000, interval: 250 })
      .toBe(410);
    const purged = (await (await shortRetention.api(`/api/runs/${run_id}/events?after=3`)).json()) as any;
    expect(purged).toMatchObject({ error: "replay_gap", earliest_sequence: 9 });
  });
});
