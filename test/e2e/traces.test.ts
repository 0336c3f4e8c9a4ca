// Traces end to end (contract section 22): a Worker of its own under wrangler
// dev with OTEL_EXPORTER_OTLP_ENDPOINT pointed at a local OTLP collector (a
// small HTTP server in this file, answering 200 or, when "down", 503), the
// real demo MCP server. Proves: the spans of one run arrive as one trace with
// the right parent links (run → model.turn, tool.call → approval.wait,
// mcp.send) and the right attributes, with the configured headers; the MCP
// server sees the mcp.send span as `traceparent` in the request's HTTP header
// and its params._meta; a collector that is down when the run ends receives
// the spans once it is back, and the run itself never waited for it; with
// tracing off (the shared Worker), neither traceparent is sent.
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { EngineClient, type EngineEvent } from "../../src/client";
import { spanIdOf, traceIdOf } from "../../src/operate/trace-ids";
import { demoReset, engine as untracedEngine } from "../support/e2e-client";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const CREATE = "mcp__demo__create_dashboard";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { stringValue: string } }[];
  startTimeUnixNano: string;
  endTimeUnixNano: string;
}

/** The local collector: every accepted span, every request's authorization header, and a switch. */
const collector = {
  server: undefined as Server | undefined,
  url: "",
  down: false,
  refused: 0,
  spans: [] as OtlpSpan[],
  authorizations: new Set<string>(),
  async start() {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        if (req.method !== "POST" || req.url !== "/v1/traces") {
          res.writeHead(404).end();
          return;
        }
        if (this.down) {
          this.refused += 1;
          res.writeHead(503).end();
          return;
        }
        this.authorizations.add(String(req.headers.authorization));
        const parsed = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const rs of parsed.resourceSpans) for (const ss of rs.scopeSpans) this.spans.push(...ss.spans);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    this.url = `http://127.0.0.1:${address.port}`;
  },
  ofRun(runId: string): OtlpSpan[] {
    return this.spans.filter((s) => attr(s, "aee.run_id") === runId);
  },
};

const attr = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

let server: WorkerServer;
let engine: EngineClient;

beforeAll(async () => {
  await collector.start();
  server = await startWorkerServer({
    ...e2eVars(`${demo}/mcp`),
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20collector-token",
  });
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await new Promise<void>((resolve) => (collector.server ? collector.server.close(() => resolve()) : resolve()));
});

beforeEach(async () => {
  collector.down = false;
  await demoReset();
});

/** Runs one approved create_dashboard to its end, approving when asked. */
async function approvedRun(client: EngineClient, title: string): Promise<{ runId: string; events: EngineEvent[] }> {
  const { run_id: runId } = await client.trigger({
    message: `create ${title}`,
    channel_id: `C-traces-${Date.now()}`,
    script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: { title } }] }, { text: "Created." }],
  });
  const events: EngineEvent[] = [];
  for await (const event of client.events(runId)) {
    events.push(event);
    if (event.type === "approval_requested") await client.decideApproval(runId, event.approval_id, { decision: "approve" });
  }
  return { runId, events };
}

async function demoCallsOf(title: string): Promise<{ arguments: { title?: string }; traceparent?: { header?: string; meta?: string } }[]> {
  const body = (await (await fetch(`${demo}/control/calls`)).json()) as {
    calls: { tool: string; arguments: { title?: string }; traceparent?: { header?: string; meta?: string } }[];
  };
  return body.calls.filter((c) => c.tool === "create_dashboard" && c.arguments.title === title);
}

/** The spans one approved call's run makes (two scripted model turns): arrived when each is there. */
const EXPECTED_SPANS = ["run", "model.turn", "tool.call", "approval.wait", "mcp.send"];
const complete = (spans: OtlpSpan[]): boolean =>
  EXPECTED_SPANS.every((name) => spans.some((s) => s.name === name)) && spans.filter((s) => s.name === "model.turn").length >= 2;

/** Waits (bounded) until the collector holds the run's whole trace (the last batch may trail the root), then answers it. */
async function spansOf(runId: string): Promise<OtlpSpan[]> {
  await expect.poll(() => complete(collector.ofRun(runId)), { timeout: 45_000, interval: 100 }).toBe(true);
  return collector.ofRun(runId);
}

describe("traces over OTLP/HTTP", () => {
  it("one trace per run with the right parent links, and the MCP server sees its traceparent", async () => {
    const title = `traced ${Date.now()}`;
    const { runId, events } = await approvedRun(engine, title);
    expect(events.at(-1)?.type).toBe("run_completed");
    const spans = await spansOf(runId);

    const traceId = traceIdOf(runId);
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([traceId]));
    const byName = (name: string) => spans.filter((s) => s.name === name);
    const [root] = byName("run");
    const [tool] = byName("tool.call");
    const [wait] = byName("approval.wait");
    const [send] = byName("mcp.send");
    expect(byName("run")).toHaveLength(1);
    expect(root?.parentSpanId).toBeUndefined();
    expect(byName("model.turn").length).toBeGreaterThanOrEqual(2);
    for (const turn of byName("model.turn")) expect(turn.parentSpanId).toBe(root?.spanId);
    expect(tool?.parentSpanId).toBe(root?.spanId);
    expect(wait?.parentSpanId).toBe(tool?.spanId);
    expect(send?.parentSpanId).toBe(tool?.spanId);
    // No span id twice: each span was exported once.
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);

    expect(attr(root!, "aee.status")).toBe("completed");
    expect(attr(root!, "aee.requested_by")).toBe("token:root");
    expect(attr(root!, "aee.channel_id")).toMatch(/^C-traces-/);
    expect(attr(tool!, "aee.tool_call_id")).toBe("w1");
    expect(attr(tool!, "aee.mutation_id")).toMatch(/^mut_/);
    expect(attr(tool!, "aee.outcome")).toBe("executed");
    expect(attr(wait!, "aee.approval_id")).toMatch(/^approval_/);
    expect(attr(wait!, "aee.outcome")).toBe("approved");
    // Never arguments or results.
    expect(JSON.stringify(spans)).not.toContain(title);
    // The configured headers went with every export.
    expect([...collector.authorizations]).toEqual(["Bearer collector-token"]);
    // The parent of the tool's own work is the mcp.send span, in both places the contract names.
    const [call] = await demoCallsOf(title);
    const expected = `00-${traceId}-${send?.spanId}-01`;
    expect(call?.traceparent).toEqual({ header: expected, meta: expected });
    expect(send?.spanId).toBe(spanIdOf(traceId, "mcp:w1"));
  });

  it("a collector that is down when the run ends gets the spans late; the run never waited for it", async () => {
    collector.down = true;
    const refusedBefore = collector.refused;
    const { runId, events } = await approvedRun(engine, `late ${Date.now()}`);
    expect(events.at(-1)?.type).toBe("run_completed");
    // The run ended while every export was refused: the engine tried, and nothing arrived.
    await expect.poll(() => collector.refused, { timeout: 20_000, interval: 100 }).toBeGreaterThan(refusedBefore);
    expect(collector.ofRun(runId)).toEqual([]);
    collector.down = false;
    const spans = await spansOf(runId);
    expect(new Set(spans.map((s) => s.name))).toEqual(new Set(EXPECTED_SPANS));
  });

  it("with tracing off, no traceparent is sent", async () => {
    const title = `untraced ${Date.now()}`;
    const { events } = await approvedRun(untracedEngine, title);
    expect(events.at(-1)?.type).toBe("run_completed");
    const [call] = await demoCallsOf(title);
    expect(call).toBeDefined();
    expect(call).not.toHaveProperty("traceparent");
  });
});
