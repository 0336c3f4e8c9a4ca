// Phase 17, webhook delivery (contract section 26): a Worker with WEBHOOKS
// pointing at a receiver in this process (answering 204); each run asks for
// one approval, and the time from its approval_requested event (the
// notification's `timestamp`, the event's own `at`, on the same machine's
// clock) to the signed POST's arrival at the receiver is one sample; the run
// is then cancelled. One run at a time, WEBHOOK_WARMUP runs discarded first;
// p50/p99. Each POST is verified with the `standardwebhooks` package.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { Webhook } from "standardwebhooks";
import { log, percentile, range, sortedCopy, Waiter } from "../http-client";
import { withServer } from "../servers";
import { CREATE_DASHBOARD, WEBHOOK_SAMPLES, WEBHOOK_WARMUP } from "../settings";
import { approvalVars } from "../watched-run";

export interface WebhookDelivery {
  /** approval_requested's `at` → the POST at the receiver, ms, sorted. */
  delivery: number[];
}

export async function webhooksPhase(mcpUrl: string): Promise<WebhookDelivery> {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const verifier = new Webhook(secret);
  const arrived = new Map<string, number>();
  const waiter = new Waiter();
  const receiver: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const at = Date.now();
      const parsed = verifier.verify(body, req.headers as Record<string, string>) as { timestamp: string; data: { run_id: string } };
      arrived.set(parsed.data.run_id, at - Date.parse(parsed.timestamp));
      res.writeHead(204).end();
      waiter.notify();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const address = receiver.address();
  if (address === null || typeof address === "string") throw new Error("no receiver port");
  const webhooks = JSON.stringify([{ url: `http://127.0.0.1:${address.port}/hooks`, events: ["approval.requested"], secret }]);
  log(`17. webhooks: ${WEBHOOK_WARMUP} warm-up + ${WEBHOOK_SAMPLES} runs, approval_requested → the POST at a local receiver`);
  try {
    return await withServer(
      async (_server, client) => {
        const samples: number[] = [];
        for (const i of range(WEBHOOK_WARMUP + WEBHOOK_SAMPLES)) {
          const { run_id: runId } = await client.expect<{ run_id: string }>(202, "POST", "/api/trigger", {
            message: `webhook bench ${i}`,
            channel_id: "C-bench-webhooks",
            script: [{ tool_calls: [{ tool_name: CREATE_DASHBOARD, tool_call_id: "call-1", arguments: { title: `w${i}` } }] }],
          });
          await waiter.until(() => arrived.has(runId), `the webhook of run ${runId}`);
          if (i >= WEBHOOK_WARMUP) samples.push(arrived.get(runId) as number);
          // 200 cancelled, or 202 cancelling (the run ends a moment later): either way it asks nothing more.
          const cancelled = await client.api("POST", `/api/runs/${runId}/cancel`);
          if (cancelled.status !== 200 && cancelled.status !== 202) throw new Error(`cancel of ${runId}: ${cancelled.status}`);
        }
        return { delivery: sortedCopy(samples) };
      },
      { ...approvalVars(mcpUrl), WEBHOOKS: webhooks },
    );
  } finally {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}

export function webhooksReport(w: WebhookDelivery): string {
  return [
    "Webhook delivery: approval_requested → the signed POST at a local receiver (contract section 26)",
    `  p50 ${percentile(w.delivery, 50).toFixed(1)} ms, p99 ${percentile(w.delivery, 99).toFixed(1)} ms (${w.delivery.length} notifications)`,
    "",
  ].join("\n");
}
