// Phase 12, tracing's cost (issue 22, contract section 22): the throughput
// trial of phase 1 (THROUGHPUT_EVENTS assistant_message events appended to
// one running run, one SSE subscriber) on a server with tracing off and on a
// server with OTEL_EXPORTER_OTLP_ENDPOINT pointed at a local collector in
// this process; the workerd runtime's CPU per 1,000 delivered events, median
// of THROUGHPUT_TRIALS per server, on over off (goal: at most 1.1x). Servers
// run off, on, on, off (each mode's figure the mean of its two), so a machine
// that gets busier during the phase weighs on both modes alike. The run's spans
// (run, model.turn) are recorded and exported during the trials; the
// synthetic events themselves start no span, so this is the per-event cost
// tracing adds to the append path.
import { createServer, type Server } from "node:http";
import { log, percentile } from "../http-client";
import { withServer } from "../servers";
import { THROUGHPUT_EVENTS, THROUGHPUT_TRIALS, WARMUP_EVENTS } from "../settings";
import { engine } from "../targets";
import { measureThroughput } from "./throughput";

export interface TracingCpu {
  offUsPer1000: number;
  onUsPer1000: number;
  ratio: number;
  spansReceived: number;
}

async function collector(): Promise<{ url: string; spans: () => number; close: () => Promise<void> }> {
  let spans = 0;
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      try {
        const parsed = JSON.parse(body) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };
        for (const rs of parsed.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans += ss.spans?.length ?? 0;
      } catch {
        // Not OTLP JSON: counted as nothing (the figure says how many spans arrived).
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no collector port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    spans: () => spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function cpuPer1000(vars: Record<string, string>): Promise<number> {
  return withServer(async (_server, client) => {
    await measureThroughput(client, engine, WARMUP_EVENTS);
    const trials: number[] = [];
    for (let i = 0; i < THROUGHPUT_TRIALS; i++)
      trials.push((await measureThroughput(client, engine, THROUGHPUT_EVENTS)).runtimeCpuUsPerEvent * 1_000);
    return percentile(
      trials.sort((a, b) => a - b),
      50,
    );
  }, vars);
}

export async function tracingCpuPhase(): Promise<TracingCpu> {
  const otlp = await collector();
  try {
    log(`12. tracing CPU: ${THROUGHPUT_TRIALS} x ${THROUGHPUT_EVENTS} events per server, tracing off, on, on, off`);
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url };
    const off1 = await cpuPer1000({});
    const on1 = await cpuPer1000(on);
    const on2 = await cpuPer1000(on);
    const off2 = await cpuPer1000({});
    const offUsPer1000 = (off1 + off2) / 2;
    const onUsPer1000 = (on1 + on2) / 2;
    return { offUsPer1000, onUsPer1000, ratio: onUsPer1000 / offUsPer1000, spansReceived: otlp.spans() };
  } finally {
    await otlp.close();
  }
}

export function tracingCpuReport(t: TracingCpu): string {
  return [
    "Runtime CPU per 1,000 delivered events, tracing on vs off (issue 22; goal: at most 1.1x)",
    `  off ${(t.offUsPer1000 / 1_000).toFixed(1)} ms, on ${(t.onUsPer1000 / 1_000).toFixed(1)} ms: ${t.ratio.toFixed(2)}x (${t.spansReceived} spans reached the collector)`,
    `  ${t.ratio <= 1.1 ? "met" : "NOT met"}`,
    "",
  ].join("\n");
}
