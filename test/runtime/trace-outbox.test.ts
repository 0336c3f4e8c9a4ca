// The trace outbox in a real Durable Object's SQLite (contract section 22):
// spans recorded from events are exported once accepted, kept while the
// collector refuses, and past its 10-minute retry window (contract section 22) dropped and counted; the
// Slack client wrapper times posts as slack.post spans. The collector is a
// stand-in fetch here; test/e2e/traces.test.ts runs a real one over HTTP.
import { env, runInDurableObject } from "cloudflare:test";
import type { SlackAPIClient } from "slack-web-api-client";
import { describe, expect, it } from "vitest";
import { newRunId } from "../../src/ids";
import { observePosts } from "../../src/operate/run-hooks";
import { exportSpans } from "../../src/operate/trace-export";
import { RUN_SPAN_KEY, TraceSpans } from "../../src/operate/trace-spans";
import { runEventOf } from "./run-events";
import { runTablesOf } from "./helpers";

const target = { endpoint: "https://collector.test", headers: { authorization: "Bearer c" } };

function withSpans<T>(body: (spans: TraceSpans) => Promise<T>): Promise<T> {
  const runId = newRunId();
  const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(runId));
  return runInDurableObject(stub, (_o, state) =>
    body(new TraceSpans(runTablesOf(state), { run_id: runId, channel_id: "C", requested_by: "token:root" })),
  );
}

const answering =
  (status: number, seen: string[] = []): typeof fetch =>
  async (_url, init) => {
    seen.push(String(init?.body));
    return new Response(null, { status });
  };

describe("the trace outbox", () => {
  it("exports ended spans once accepted, keeps them while refused, and drops and counts them past the retry window", async () => {
    await withSpans(async (spans) => {
      const t0 = 1_000_000;
      spans.observeEvent(runEventOf("run_started", {}), t0);
      spans.observeEvent(runEventOf("tool_started", { tool_call_id: "w1" }), t0 + 1);
      expect(await exportSpans(spans, target, t0 + 2, answering(200))).toEqual({ status: "idle" });
      spans.observeEvent(runEventOf("tool_completed", { tool_call_id: "w1" }), t0 + 3);

      const refused = await exportSpans(spans, target, t0 + 4, answering(503));
      expect(refused).toMatchObject({ status: "failed", dropped: 0, remaining: 1 });
      const sent: string[] = [];
      expect(await exportSpans(spans, target, t0 + 5, answering(200, sent))).toEqual({
        status: "ok",
        exported: 1,
        dropped: 0,
        remaining: 0,
      });
      expect(JSON.parse(sent[0] ?? "{}").resourceSpans[0].scopeSpans[0].spans.map((s: { name: string }) => s.name)).toEqual(["tool.call"]);
      // Sent once: nothing left to send again.
      expect(await exportSpans(spans, target, t0 + 6, answering(200))).toEqual({ status: "idle" });

      spans.observeEvent(runEventOf("run_completed", {}), t0 + 10);
      expect(spans.waiting).toBe(1);
      // Contract section 22: retried for up to 10 minutes, then dropped and counted.
      const inWindow = await exportSpans(spans, target, t0 + 10 + 600_000, answering(503));
      expect(inWindow).toMatchObject({ status: "failed", dropped: 0, remaining: 1 });
      const late = await exportSpans(spans, target, t0 + 10 + 600_001, answering(503));
      expect(late).toEqual({ status: "ok", exported: 0, dropped: 1, remaining: 0 });
      expect(spans.waiting).toBe(0);
      // A dropped span never comes back, even if its end is observed again.
      spans.observeEvent(runEventOf("run_completed", {}), t0 + 20);
      expect(spans.waiting).toBe(0);
    });
  });

  it("ends the spans still open when the run ends, the run itself with its status", async () => {
    await withSpans(async (spans) => {
      spans.observeEvent(runEventOf("run_started", {}), 1);
      spans.observeEvent(runEventOf("tool_started", { tool_call_id: "w1" }), 2);
      spans.observeEvent(runEventOf("approval_requested", { tool_call_id: "w1", approval_id: "approval_1" }), 3);
      spans.observeEvent(runEventOf("run_failed", {}), 9);
      const ended = spans.ended(10);
      expect(ended.map((s) => s.name).sort()).toEqual(["approval.wait", "run", "tool.call"]);
      const run = ended.find((s) => s.key === RUN_SPAN_KEY);
      expect(run).toMatchObject({ error: true, end_ms: 9, attrs: { "aee.status": "failed", "aee.requested_by": "token:root" } });
    });
  });

  it("times Slack chat posts as slack.post spans through the client wrapper", async () => {
    const calls: string[] = [];
    const client = {
      chat: {
        postMessage: async () => {
          calls.push("post");
          return { ok: true };
        },
        update: async () => {
          throw new Error("slack said no");
        },
      },
      reactions: { add: async () => ({ ok: true }) },
    } as unknown as SlackAPIClient;
    const events: string[] = [];
    const wrapped = observePosts(client, {
      started: (method) => {
        events.push(`start ${method}`);
        return method;
      },
      ended: (token, ok) => events.push(`end ${token} ${ok}`),
    });
    await wrapped.chat.postMessage({ channel: "C", text: "hi" });
    await expect(wrapped.chat.update({ channel: "C", ts: "1", text: "x" })).rejects.toThrow("slack said no");
    await wrapped.reactions.add({ channel: "C", timestamp: "1", name: "eyes" });
    expect(calls).toEqual(["post"]);
    expect(events).toEqual(["start chat.postMessage", "end chat.postMessage true", "start chat.update", "end chat.update false"]);
  });
});
