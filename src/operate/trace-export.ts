// The trace outbox's sender (contract section 22): ended spans of a run,
// encoded as OTLP/HTTP JSON and POSTed to `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`
// with OTEL_EXPORTER_OTLP_HEADERS, from the run object's alarm (never on the
// append path). A span leaves the outbox when the collector accepted it (2xx);
// one that could not be delivered within TRACE_RETRY_WINDOW_MS of its end is
// dropped and counted (aee_trace_spans_dropped_total). Never throws.
// The OTLP JSON encoding is written by hand (about thirty lines): the
// OpenTelemetry OTLP exporter packages serialise the SDK's in-memory
// ReadableSpans and send them themselves, while these spans are durable rows
// sent by the object's alarm with its own retry and drop rules.
import type { SpanRow, TraceSpans } from "./trace-spans";
import { backoffMs } from "../schedule/deadline";

/** Contract section 22: spans are retried for up to 10 minutes, then dropped and counted. */
const TRACE_RETRY_WINDOW_MS = 600_000;
/** Spans per export request. */
const TRACE_EXPORT_BATCH_SPANS = 100;
/** One export request's bound: a collector that hangs never holds the alarm's background work for long. */
const TRACE_EXPORT_TIMEOUT_MS = 10_000;
/** After a failed export, the next try this much later, doubling per failure up to the cap. */
const TRACE_RETRY_BASE_MS = 1_000;
const TRACE_RETRY_MAX_MS = 30_000;

const SERVICE_NAME = "approved-execution-engine";
/** OTLP SpanKind: INTERNAL for the engine's own work, CLIENT for calls out. */
const KIND_INTERNAL = 1;
const KIND_CLIENT = 3;

export interface TraceExportTarget {
  /** OTEL_EXPORTER_OTLP_ENDPOINT, e.g. https://otel.example.com:4318 */
  endpoint: string;
  headers: Record<string, string>;
}

export type TraceExportResult =
  | { status: "idle" }
  | { status: "ok"; exported: number; dropped: number; remaining: number }
  | { status: "failed"; error: string; dropped: number; remaining: number };

const nanos = (ms: number) => (BigInt(Math.round(ms)) * 1_000_000n).toString();

/** ExportTraceServiceRequest in OTLP's JSON mapping (ids as hex, times as decimal strings). */
export function otlpJson(traceId: string, spanIdOf: (key: string) => string, spans: readonly SpanRow[]): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: SERVICE_NAME } }] },
        scopeSpans: [
          {
            scope: { name: SERVICE_NAME },
            spans: spans.map((s) => ({
              traceId,
              spanId: spanIdOf(s.key),
              ...(s.parent !== null ? { parentSpanId: spanIdOf(s.parent) } : {}),
              name: s.name,
              kind: s.name === "mcp.send" || s.name === "slack.post" ? KIND_CLIENT : KIND_INTERNAL,
              startTimeUnixNano: nanos(s.start_ms),
              endTimeUnixNano: nanos(s.end_ms),
              attributes: Object.entries(s.attrs).map(([key, value]) => ({ key, value: { stringValue: value } })),
              status: { code: s.error ? 2 : 1 },
            })),
          },
        ],
      },
    ],
  });
}

export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, "")}/v1/traces`;
}

/** Sends up to one batch of ended spans; drops those past the retry window first. */
export async function exportSpans(
  spans: TraceSpans,
  target: TraceExportTarget,
  now: number,
  fetcher: typeof fetch = fetch,
): Promise<TraceExportResult> {
  const dropped = spans.dropEndedBefore(now - TRACE_RETRY_WINDOW_MS);
  const batch = spans.ended(TRACE_EXPORT_BATCH_SPANS);
  if (batch.length === 0) return dropped > 0 ? { status: "ok", exported: 0, dropped, remaining: 0 } : { status: "idle" };
  let error: string;
  try {
    const response = await fetcher(tracesUrl(target.endpoint), {
      method: "POST",
      headers: { ...target.headers, "content-type": "application/json" },
      body: otlpJson(spans.traceId, (key) => spans.spanId(key), batch),
      signal: AbortSignal.timeout(TRACE_EXPORT_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.ok) {
      spans.forget(batch.map((s) => s.key));
      return { status: "ok", exported: batch.length, dropped, remaining: spans.waiting };
    }
    error = `the collector answered ${response.status}`;
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }
  return { status: "failed", error, dropped, remaining: spans.waiting };
}

/** When to try again after `result` (ms from now), or null when nothing waits. */
export function nextExportDelayMs(result: TraceExportResult, failuresInARow: number): number | null {
  if (result.status === "idle" || result.remaining === 0) return null;
  if (result.status === "ok") return 0;
  return backoffMs({ baseMs: TRACE_RETRY_BASE_MS, capMs: TRACE_RETRY_MAX_MS }, failuresInARow - 1);
}
