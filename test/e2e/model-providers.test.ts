// Real model providers end to end: the Worker under wrangler dev pointed at a
// local stand-in that speaks the provider's wire format, the demo MCP server
// as the tool server. The model proposes a write, a person approves it, the
// tool result goes back to the model, the model finishes.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ApiError, EngineClient } from "../../src/client";
import {
  anthropicMessage,
  openAiCompletion,
  startAnthropicStandIn,
  startOpenAiStandIn,
  type ModelStandIn,
} from "../support/model-stand-ins";
import { RawSseClient } from "../support/sse-client";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const MODEL_KEY = "test-model-key-not-a-secret";

interface Deployment {
  standIn: ModelStandIn;
  server: WorkerServer;
}

let anthropic: Deployment;
let openai: Deployment;

beforeAll(async () => {
  const [a, o] = await Promise.all([startAnthropicStandIn({ apiKey: MODEL_KEY }), startOpenAiStandIn({ apiKey: MODEL_KEY })]);
  const vars = (provider: string, baseUrl: string) => ({
    ...e2eVars(`${demo}/mcp`),
    MODEL_PROVIDER: provider,
    MODEL_BASE_URL: baseUrl,
    MODEL_API_KEY: MODEL_KEY,
    MODEL_NAME: "stand-in-model",
  });
  const [as, os] = await Promise.all([startWorkerServer(vars("anthropic", a.baseUrl)), startWorkerServer(vars("openai", o.baseUrl))]);
  anthropic = { standIn: a, server: as };
  openai = { standIn: o, server: os };
}, 120_000);

afterAll(async () => {
  await Promise.all([anthropic?.server.stop(), openai?.server.stop(), anthropic?.standIn.close(), openai?.standIn.close()]);
});

const engineOf = (d: Deployment) => new EngineClient({ baseUrl: d.server.url, token: d.server.token });

async function run(d: Deployment, message: string): Promise<{ runId: string; client: RawSseClient }> {
  const { status, run_id } = await engineOf(d).trigger({ message, channel_id: "C-models" });
  expect(status).toBe("accepted");
  return {
    runId: run_id,
    client: await RawSseClient.open(`${d.server.url}/api/runs/${run_id}/events`, { authorization: `Bearer ${d.server.token}` }),
  };
}

const parsed = (client: RawSseClient) => client.events.map((e) => JSON.parse(e.data) as Record<string, any>);
const shape = (client: RawSseClient) =>
  parsed(client)
    .filter((e) => e.type !== "heartbeat")
    .map((e) => e.type as string);

async function approveFirst(d: Deployment, runId: string, client: RawSseClient): Promise<void> {
  await expect.poll(() => parsed(client).some((e) => e.type === "approval_requested"), { timeout: 15_000 }).toBe(true);
  const requested = parsed(client).find((e) => e.type === "approval_requested")!;
  const answer = await engineOf(d).decideApproval(runId, requested.approval_id, { decision: "approve" });
  expect(answer).toMatchObject({ approval_id: requested.approval_id, decision: "approved" });
}

describe("a real provider", () => {
  it("refuses a trigger's script with 400 (only the scripted provider honours it) and starts no run", async () => {
    for (const d of [anthropic, openai]) {
      const before = d.standIn.requests.length;
      const deliveryId = `script-${Date.now()}`;
      const refused = await engineOf(d)
        .trigger({ message: "m", delivery_id: deliveryId, script: [{ text: "pretend" }] })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ApiError);
      expect(refused).toMatchObject({ status: 400, code: "invalid_request" });
      expect((refused as ApiError).message).toContain("MODEL_PROVIDER=scripted");
      expect(JSON.stringify((refused as ApiError).details)).toContain("script");
      expect(d.standIn.requests.length).toBe(before);
      await expect(engineOf(d).delivery(deliveryId)).rejects.toMatchObject({ status: 404, code: "not_found" });
    }
  });
});

describe("anthropic", () => {
  it("round-trips a tool use: approval, execution, the result back to the model, the final answer", async () => {
    await fetch(`${demo}/control/reset`, { method: "POST" });
    const { standIn } = anthropic;
    standIn.enqueue(
      {
        body: anthropicMessage({
          text: "I'll create it.",
          toolUses: [{ id: "toolu_1", name: "mcp__demo__create_dashboard", input: { title: "Errors" } }],
        }),
      },
      { body: anthropicMessage({ text: "Created the Errors dashboard." }) },
    );
    const before = standIn.requests.length;
    const { runId, client } = await run(anthropic, "Make an errors dashboard");
    await approveFirst(anthropic, runId, client);
    await client.toEnd(30_000);
    expect(shape(client)).toEqual([
      "run_started",
      "assistant_message",
      "tool_started",
      "approval_requested",
      "approval_resolved",
      "tool_execution_started",
      "tool_execution",
      "tool_completed",
      "assistant_message",
      "run_completed",
    ]);
    const events = parsed(client);
    expect(events.find((e) => e.type === "tool_started")).toMatchObject({
      tool_call_id: "toolu_1",
      tool_name: "mcp__demo__create_dashboard",
    });
    expect(events.at(-1)).toMatchObject({ type: "run_completed", text: "Created the Errors dashboard.", tool_calls: 1 });

    const [first, second] = standIn.requests.slice(before).map((r) => r.body);
    expect(first.system).toEqual(expect.stringContaining("operations assistant"));
    expect(first.messages).toHaveLength(1);
    expect(first.messages[0].role).toBe("user");
    expect(JSON.stringify(first.messages[0].content)).toContain("Make an errors dashboard");
    const toolNames = first.tools.map((t: { name: string }) => t.name);
    expect(toolNames).toEqual(expect.arrayContaining(["human__ask", "mcp__demo__create_dashboard", "mcp__demo__list_dashboards"]));
    const lastMessage = second.messages.at(-1);
    expect(lastMessage.role).toBe("user");
    expect(lastMessage.content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_1" });
    expect(JSON.stringify(lastMessage.content[0].content)).toContain("dash-1");
    // The API key reached the stand-in and nothing else: not the stream.
    expect(client.raw).not.toContain(MODEL_KEY);
  });

  it("survives a max_tokens stop that leaves a tool_use without its result", async () => {
    const { standIn } = anthropic;
    standIn.enqueue(
      {
        body: anthropicMessage({
          text: "Let me",
          toolUses: [{ id: "toolu_cut", name: "mcp__demo__create_dashboard", input: {} }],
          stopReason: "max_tokens",
        }),
      },
      { body: anthropicMessage({ text: "Sorry, I was cut off; nothing was changed." }) },
    );
    const before = standIn.requests.length;
    const { client } = await run(anthropic, "go");
    await client.toEnd(30_000);
    // The cut-off call is never announced or run.
    expect(shape(client)).toEqual(["run_started", "assistant_message", "assistant_message", "run_completed"]);
    const next = standIn.requests.slice(before)[1]!;
    expect(next.body.messages.at(-1).content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_cut", is_error: true });
  });

  it("retries a 429 and ends a run whose model keeps failing with run_failed(model_error)", async () => {
    const { standIn } = anthropic;
    standIn.enqueue(
      { status: 429, headers: { "retry-after": "0" }, body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } } },
      { body: anthropicMessage({ text: "Fine now." }) },
    );
    const ok = await run(anthropic, "hi");
    await ok.client.toEnd(30_000);
    expect(parsed(ok.client).at(-1)).toMatchObject({ type: "run_completed", text: "Fine now." });

    const failure = { status: 500, body: { type: "error", error: { type: "api_error", message: "overloaded" } } };
    standIn.enqueue(failure, failure, failure, failure);
    const bad = await run(anthropic, "hi");
    await bad.client.toEnd(30_000);
    const last = parsed(bad.client).at(-1)!;
    expect(last).toMatchObject({ type: "run_failed", error: { code: "model_error" } });
    expect(last.error.message).toMatch(/anthropic.*kept failing.*500/i);
  });
});

describe("openai", () => {
  it("round-trips a tool call through chat completions", async () => {
    await fetch(`${demo}/control/reset`, { method: "POST" });
    const { standIn } = openai;
    standIn.enqueue(
      {
        body: openAiCompletion({ toolCalls: [{ id: "call_1", name: "mcp__demo__create_dashboard", arguments: { title: "Saturation" } }] }),
      },
      { body: openAiCompletion({ text: "Done." }) },
    );
    const before = standIn.requests.length;
    const { runId, client } = await run(openai, "Make a saturation dashboard");
    await approveFirst(openai, runId, client);
    await client.toEnd(30_000);
    expect(shape(client)).toEqual([
      "run_started",
      "tool_started",
      "approval_requested",
      "approval_resolved",
      "tool_execution_started",
      "tool_execution",
      "tool_completed",
      "assistant_message",
      "run_completed",
    ]);
    const second = standIn.requests.slice(before)[1]!.body;
    const toolMessage = second.messages.find((m: { role: string }) => m.role === "tool");
    expect(toolMessage).toMatchObject({ tool_call_id: "call_1" });
    expect(toolMessage.content).toContain("Saturation");
    expect((await (await fetch(`${demo}/control/calls`)).json()) as any).toMatchObject({ by_tool: { create_dashboard: 1 } });
  });
});
