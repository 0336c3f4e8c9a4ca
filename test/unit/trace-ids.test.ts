// The run's trace ids (contract section 22, src/operate/trace-ids.ts) and the
// OTLP/HTTP JSON a batch of spans becomes (src/operate/trace-export.ts).
import { describe, expect, it } from "vitest";
import { newRunId } from "../../src/ids";
import { otlpJson, tracesUrl } from "../../src/operate/trace-export";
import { spanIdOf, traceIdOf, traceparentOf } from "../../src/operate/trace-ids";

describe("trace ids", () => {
  it("a run's trace id is its ULID's 128 bits; span ids are stable per key and differ between keys", () => {
    expect(traceIdOf("run_00000000000000000000000001")).toBe("00000000000000000000000000000001");
    const runId = newRunId();
    const traceId = traceIdOf(runId);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceIdOf(runId)).toBe(traceId);
    expect(traceIdOf(newRunId())).not.toBe(traceId);
    expect(spanIdOf(traceId, "run")).toMatch(/^[0-9a-f]{16}$/);
    expect(spanIdOf(traceId, "run")).toBe(spanIdOf(traceId, "run"));
    expect(spanIdOf(traceId, "tool:a")).not.toBe(spanIdOf(traceId, "tool:b"));
    expect(traceIdOf("not-a-ulid")).toMatch(/^[0-9a-f]{32}$/);
  });

  it("traceparent is version 00, the run's trace, the named span as parent, sampled", () => {
    const runId = newRunId();
    expect(traceparentOf(runId, "mcp:w1")).toBe(`00-${traceIdOf(runId)}-${spanIdOf(traceIdOf(runId), "mcp:w1")}-01`);
  });
});

describe("otlpJson", () => {
  it("encodes spans in OTLP's JSON mapping: hex ids, parent links, nanosecond strings, string attributes, status", () => {
    const traceId = traceIdOf(newRunId());
    const body = JSON.parse(
      otlpJson(traceId, (key) => spanIdOf(traceId, key), [
        { key: "run", name: "run", parent: null, start_ms: 1_000, end_ms: 2_500, attrs: { "aee.run_id": "r" }, error: false },
        { key: "mcp:w1", name: "mcp.send", parent: "tool:w1", start_ms: 1_100, end_ms: 1_200, attrs: {}, error: true },
      ]),
    );
    const [root, send] = body.resourceSpans[0].scopeSpans[0].spans;
    expect(body.resourceSpans[0].resource.attributes).toContainEqual({
      key: "service.name",
      value: { stringValue: "approved-execution-engine" },
    });
    expect(root).toEqual({
      traceId,
      spanId: spanIdOf(traceId, "run"),
      name: "run",
      kind: 1,
      startTimeUnixNano: "1000000000",
      endTimeUnixNano: "2500000000",
      attributes: [{ key: "aee.run_id", value: { stringValue: "r" } }],
      status: { code: 1 },
    });
    expect(send).toMatchObject({ parentSpanId: spanIdOf(traceId, "tool:w1"), kind: 3, status: { code: 2 } });
  });

  it("posts to <endpoint>/v1/traces", () => {
    expect(tracesUrl("https://otel.example.com:4318")).toBe("https://otel.example.com:4318/v1/traces");
    expect(tracesUrl("https://otel.example.com:4318/")).toBe("https://otel.example.com:4318/v1/traces");
  });
});
