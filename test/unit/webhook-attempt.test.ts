// One webhook attempt (contract section 26), in workerd with a stand-in
// fetch: the Standard Webhooks headers verify with the `standardwebhooks`
// package (once per secret, each attempt signed with its own timestamp), a
// redirect is not followed and fails, a 410 is `gone`, a 429's or 503's
// Retry-After is honoured, and retries stop at WEBHOOK_DELIVERY_MAX_MS.
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { attemptDelivery, nextAttemptAt, retryAfterMs } from "../../src/webhooks/webhook-attempt";
import { notificationOf } from "../../src/webhooks/notifications";

const key = (seed: number) => `whsec_${btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => (i * seed + 7) % 256)))}`;
const NEW = key(13);
const OLD = key(29);
const BODY = JSON.stringify({ type: "run.failed", timestamp: "2026-12-02T12:00:00.000Z", data: { run_id: "r", channel_id: "C" } });

function standIn(answer: () => Response) {
  const seen: { url: string; init: RequestInit; headers: Record<string, string> }[] = [];
  const fetcher = (async (url: string, init: RequestInit) => {
    seen.push({ url, init, headers: Object.fromEntries(new Headers(init.headers).entries()) });
    return answer();
  }) as unknown as typeof fetch;
  return { seen, fetcher };
}

describe("attemptDelivery", () => {
  it("signs once per secret with the attempt's own timestamp; both verify with standardwebhooks", async () => {
    const { seen, fetcher } = standIn(() => new Response("ok"));
    const t1 = Date.parse("2026-12-02T12:00:00Z");
    expect(await attemptDelivery({ url: "https://r.example/in", secrets: [NEW, OLD] }, "msg_1", BODY, t1, fetcher)).toEqual({
      kind: "delivered",
      status: 200,
    });
    await attemptDelivery({ url: "https://r.example/in", secrets: [NEW, OLD] }, "msg_1", BODY, t1 + 7_000, fetcher);
    const [first, second] = seen;
    expect(first?.init).toMatchObject({ method: "POST", redirect: "manual", body: BODY });
    expect(first?.headers).toMatchObject({
      "content-type": "application/json",
      "webhook-id": "msg_1",
      "webhook-timestamp": String(t1 / 1000),
    });
    expect(second?.headers["webhook-timestamp"]).toBe(String(t1 / 1000 + 7));
    expect(second?.headers["webhook-signature"]).not.toBe(first?.headers["webhook-signature"]);
    for (const attempt of [first, second]) {
      const signatures = attempt?.headers["webhook-signature"]?.split(" ") ?? [];
      expect(signatures).toHaveLength(2);
      expect(signatures.every((s) => s.startsWith("v1,"))).toBe(true);
      const headers = attempt?.headers ?? {};
      // standardwebhooks checks the timestamp against now: verify as at the attempt's time.
      const at = Number(headers["webhook-timestamp"]) * 1000;
      const realNow = Date.now;
      Date.now = () => at;
      try {
        for (const secret of [NEW, OLD]) expect(new Webhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
        expect(() => new Webhook(key(3)).verify(BODY, headers)).toThrow();
      } finally {
        Date.now = realNow;
      }
    }
  });

  it("fails a redirect, marks a 410 gone, reads a 429's Retry-After, fails a network error", async () => {
    const target = { url: "https://r.example/in", secrets: [NEW] };
    const now = Date.now();
    const redirect = standIn(() => new Response(null, { status: 302, headers: { location: "https://elsewhere.example/" } }));
    expect(await attemptDelivery(target, "m", BODY, now, redirect.fetcher)).toMatchObject({ kind: "failed", status: 302 });
    expect(redirect.seen).toHaveLength(1);
    expect(await attemptDelivery(target, "m", BODY, now, standIn(() => new Response(null, { status: 410 })).fetcher)).toEqual({
      kind: "gone",
      status: 410,
    });
    const limited = standIn(() => new Response("slow down", { status: 429, headers: { "retry-after": "120" } }));
    expect(await attemptDelivery(target, "m", BODY, now, limited.fetcher)).toMatchObject({
      kind: "failed",
      status: 429,
      retryAfterMs: 120_000,
    });
    const broken = (async () => {
      throw new TypeError("connection refused");
    }) as unknown as typeof fetch;
    expect(await attemptDelivery(target, "m", BODY, now, broken)).toMatchObject({ kind: "failed", status: null });
    // A large answer is read no further than 64 KiB.
    let pulled = 0;
    const huge = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 16_384;
        controller.enqueue(new Uint8Array(16_384));
        if (pulled > 10_000_000) controller.close();
      },
    });
    expect(await attemptDelivery(target, "m", BODY, now, standIn(() => new Response(huge)).fetcher)).toMatchObject({ kind: "delivered" });
    expect(pulled).toBeLessThanOrEqual(64 * 1024 + 3 * 16_384);
  });
});

describe("nextAttemptAt", () => {
  const settings = { WEBHOOK_DELIVERY_MAX_MS: 86_400_000, WEBHOOK_RETRY_BASE_MS: 1_000, WEBHOOK_RETRY_MAX_INTERVAL_MS: 60_000 };
  it("backs off exponentially to its cap, never sooner than Retry-After, and gives up at WEBHOOK_DELIVERY_MAX_MS", () => {
    const t0 = 1_000_000;
    expect(nextAttemptAt(settings, t0, 1, t0, undefined)).toBe(t0 + 1_000);
    expect(nextAttemptAt(settings, t0, 3, t0, undefined)).toBe(t0 + 4_000);
    expect(nextAttemptAt(settings, t0, 30, t0, undefined)).toBe(t0 + 60_000);
    expect(nextAttemptAt(settings, t0, 1, t0, 30_000)).toBe(t0 + 30_000);
    expect(nextAttemptAt(settings, t0, 1, t0 + 86_400_000, undefined)).toBeNull();
    expect(nextAttemptAt(settings, t0, 1, t0 + 86_399_000, 5_000)).toBeNull();
    expect(nextAttemptAt(settings, t0, 30, t0 + 86_399_000, undefined)).toBe(t0 + 86_400_000);
  });

  it("reads Retry-After as seconds or an HTTP date", () => {
    expect(retryAfterMs("3", 0)).toBe(3_000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMs("soon", 0)).toBeUndefined();
    expect(retryAfterMs(null, 0)).toBeUndefined();
  });
});

describe("notificationOf", () => {
  const envelope = { protocol_version: "v2", sequence: 3, run_id: "r1", channel_id: "C1", at: "2026-12-02T12:00:00.000Z" } as const;
  it("carries ids only, and an executed mutation's lost answer as mutation.outcome_unknown (not a tool error)", () => {
    const executed = (code: string) =>
      notificationOf({
        ...envelope,
        type: "tool_execution",
        tool_name: "t",
        tool_call_id: "c1",
        approval_id: "a1",
        execution_status: "executed",
        error: { code, message: "m" },
        mutation_id: "mut-1",
      } as never);
    expect(executed("transport_timeout")).toEqual({ type: "mutation.outcome_unknown", data: { run_id: "r1", mutation_id: "mut-1" } });
    expect(executed("tool_error")).toBeNull();
    expect(executed("settlement_timeout")).toBeNull();
    expect(
      notificationOf({
        ...envelope,
        type: "human_input_requested",
        tool_call_id: "ask",
        question: "secret?",
        expires_at: envelope.at,
      } as never),
    ).toEqual({
      type: "input.requested",
      data: { run_id: "r1", channel_id: "C1", tool_call_id: "ask" },
    });
    expect(notificationOf({ ...envelope, type: "assistant_message", text: "hi" } as never)).toBeNull();
  });

  it("an approval's reminder is approval.expiring with its ids; an MCP question's reminder sends nothing (contract sections 24, 26)", () => {
    const reminded = { ...envelope, type: "approval_reminded", tool_name: "t", tool_call_id: "c1", expires_at: envelope.at } as const;
    expect(notificationOf({ ...reminded, approval_id: "a1" } as never)).toEqual({
      type: "approval.expiring",
      data: { run_id: "r1", channel_id: "C1", tool_call_id: "c1", approval_id: "a1" },
    });
    expect(notificationOf({ ...reminded, input_id: "c1:1:k" } as never)).toBeNull();
  });
});
