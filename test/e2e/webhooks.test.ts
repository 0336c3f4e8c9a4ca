// Webhooks end to end (contract section 26): a Worker of its own under
// wrangler dev with WEBHOOKS pointing at a local receiver (a node HTTP server
// on loopback in this file), the real demo MCP server. Every notification
// that can be produced today (approval.requested, approval.resolved,
// input.requested, mutation.outcome_unknown, run.failed, halt.engaged,
// halt.released, policy.proposed; approval.expiring, sent with a reminder, is
// covered by test/unit/webhook-attempt.test.ts) arrives, verifies with the
// `standardwebhooks` package, carries ids only (a planted secret never
// appears), arrives again with the same webhook-id after a 500, in order per
// run; a receiver down for a while loses nothing; a 410 disables its
// endpoint (audited); a receiver that hangs never delays the stream.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { EngineClient, type EngineEvent } from "../../src/client";
import { armFault, demoReset } from "../support/e2e-client";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const CREATE = "mcp__demo__create_dashboard";

const secret = () => `whsec_${randomBytes(32).toString("base64")}`;
/** Endpoint A takes every type and answers each notification's first attempt 500, then 200. */
const SECRET_A = secret();
/** Endpoint B (with a query, two secrets: rotation) is switched down, hanging or up by the tests. */
const SECRET_B_NEW = secret();
const SECRET_B_OLD = secret();
/** Endpoint C takes run.failed and answers 410. */
const SECRET_C = secret();
/** Written into the arguments, the texts, the question, the answer and the halt's reason: never in a webhook. */
const PLANTED = `PLANTED_${randomBytes(8).toString("hex")}`;

interface Received {
  path: string;
  query: string;
  headers: Record<string, string>;
  body: string;
  status: number;
  /** Whether this request was still unanswered when it was recorded as hanging. */
  hung?: boolean;
}

type Mode = "ok" | "down" | "hang";

const receiver = {
  server: undefined as Server | undefined,
  base: "",
  received: [] as Received[],
  modeB: "ok" as Mode,
  hanging: [] as ServerResponse[],
  /** webhook-ids endpoint A answered 500 already. */
  failedOnce: new Set<string>(),
  async start() {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        const url = new URL(req.url ?? "/", "http://x");
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        const record = (status: number) => this.received.push({ path: url.pathname, query: url.search, headers, body, status });
        const id = headers["webhook-id"] ?? "";
        if (url.pathname === "/a") {
          const status = this.failedOnce.has(id) ? 200 : 500;
          this.failedOnce.add(id);
          record(status);
          res.writeHead(status).end(status === 200 ? "ok" : "try again");
        } else if (url.pathname === "/b") {
          if (this.modeB === "down") {
            record(0);
            req.socket.destroy();
          } else if (this.modeB === "hang") {
            this.received.push({ path: url.pathname, query: url.search, headers, body, status: 0, hung: true });
            this.hanging.push(res);
          } else {
            record(204);
            res.writeHead(204).end();
          }
        } else if (url.pathname === "/c") {
          record(410);
          res.writeHead(410).end();
        } else res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    this.base = `http://127.0.0.1:${address.port}`;
  },
  releaseHanging() {
    for (const res of this.hanging.splice(0)) res.writeHead(200).end();
  },
  at(path: string, status?: number): Received[] {
    return this.received.filter((r) => r.path === path && (status === undefined || r.status === status));
  },
};

interface Body {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}
const bodyOf = (r: Received) => JSON.parse(r.body) as Body;

/** The delivered notifications at `path`, verified with the standardwebhooks package (throws on a bad signature). */
function delivered(path: string, okStatus: number, secrets: string[]): { id: string; body: Body }[] {
  return receiver.at(path, okStatus).map((r) => {
    for (const s of secrets) new Webhook(s).verify(r.body, r.headers);
    return { id: r.headers["webhook-id"] as string, body: bodyOf(r) };
  });
}

let server: WorkerServer;
let engine: EngineClient;
const admin = () => ({ authorization: `Bearer ${server.token}` });

beforeAll(async () => {
  await receiver.start();
  server = await startWorkerServer({
    ...e2eVars(`${demo}/mcp`),
    WEBHOOKS: JSON.stringify([
      {
        url: `${receiver.base}/a`,
        events: [
          "approval.requested",
          "approval.expiring",
          "approval.resolved",
          "input.requested",
          "mutation.outcome_unknown",
          "run.failed",
          "halt.engaged",
          "halt.released",
          "policy.proposed",
        ],
        secret: SECRET_A,
      },
      {
        url: `${receiver.base}/b?token=${PLANTED}`,
        events: ["approval.requested", "approval.resolved"],
        secrets: [SECRET_B_NEW, SECRET_B_OLD],
      },
      { url: `${receiver.base}/c`, events: ["run.failed"], secret: SECRET_C },
    ]),
    WEBHOOK_RETRY_BASE_MS: "100",
    WEBHOOK_RETRY_MAX_INTERVAL_MS: "400",
  });
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
}, 120_000);

beforeEach(async () => {
  await demoReset();
});

afterAll(async () => {
  receiver.releaseHanging();
  await server?.stop();
  await new Promise<void>((resolve) => (receiver.server ? receiver.server.close(() => resolve()) : resolve()));
});

/** Runs a script, approving each approval and answering each question as it comes; answers the events. */
async function drive(
  script: unknown[],
  onEvent?: (event: EngineEvent) => Promise<void>,
): Promise<{ runId: string; events: EngineEvent[] }> {
  const { run_id: runId } = await engine.trigger({
    message: `webhooks ${PLANTED}`,
    channel_id: `C-webhooks-${Date.now()}`,
    script,
  } as never);
  const events: EngineEvent[] = [];
  for await (const event of engine.events(runId)) {
    events.push(event);
    if (onEvent) await onEvent(event);
    else if (event.type === "approval_requested") await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
    else if (event.type === "human_input_requested") await engine.answerInput(runId, event.tool_call_id, { answer: `yes ${PLANTED}` });
  }
  return { runId, events };
}

const DATA_KEYS: Record<string, string[]> = {
  "approval.requested": ["approval_id", "channel_id", "run_id", "tool_call_id"],
  "approval.resolved": ["approval_id", "channel_id", "run_id", "tool_call_id"],
  "input.requested": ["channel_id", "run_id", "tool_call_id"],
  "mutation.outcome_unknown": ["mutation_id", "run_id"],
  "run.failed": ["channel_id", "run_id"],
  "halt.engaged": ["halt_id"],
  "halt.released": ["halt_id"],
};

describe("webhooks", () => {
  it("every type produced today arrives, verifies, carries ids only, comes again with its webhook-id after a 500, in order per run", async () => {
    await armFault("create_dashboard", "delay", 2_500); // longer than MCP_CALL_TIMEOUT_MS: the first create's outcome is unknown
    const main = await drive([
      {
        text: `Creating ${PLANTED}`,
        tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: { title: PLANTED } }],
      },
      { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: `Which team? ${PLANTED}` } }] },
      { text: `Done ${PLANTED}` },
    ]);
    expect(main.events.at(-1)?.type).toBe("run_completed");
    expect(main.events.find((e) => e.type === "tool_execution")).toMatchObject({ error: { code: "transport_timeout" } });
    // A run cancelled while it waits: approval.resolved (cancelled) and run.failed.
    const cancelled = await drive(
      [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "w2", arguments: { title: PLANTED } }] }],
      async (e) => {
        if (e.type === "approval_requested") await engine.cancel(e.run_id);
      },
    );
    expect(cancelled.events.at(-1)).toMatchObject({ type: "run_failed", error: { code: "cancelled" } });
    // A halt engaged and released (the deployment's outbox).
    const halt = (await engine.engageHalt({ scope: "all", reason: `drill ${PLANTED}` })).halt_id;
    expect((await engine.releaseHalt(halt)).status).toBe("released");

    const expectedMain = ["approval.requested", "approval.resolved", "mutation.outcome_unknown", "input.requested"];
    const expectedCancelled = ["approval.requested", "approval.resolved", "run.failed"];
    const ofRun = (runId: string) => delivered("/a", 200, [SECRET_A]).filter((d) => d.body.data.run_id === runId);
    await expect
      .poll(
        () => [
          ofRun(main.runId).length,
          ofRun(cancelled.runId).length,
          delivered("/a", 200, [SECRET_A]).filter((d) => d.body.data.halt_id === halt).length,
        ],
        {
          timeout: 30_000,
          interval: 100,
        },
      )
      .toEqual([expectedMain.length, expectedCancelled.length, 2]);

    // In order per run (each notification's first delivery; a notification waits for the one before it).
    expect(ofRun(main.runId).map((d) => d.body.type)).toEqual(expectedMain);
    expect(ofRun(cancelled.runId).map((d) => d.body.type)).toEqual(expectedCancelled);
    const halts = delivered("/a", 200, [SECRET_A]).filter((d) => d.body.data.halt_id === halt);
    expect(halts.map((d) => d.body.type)).toEqual(["halt.engaged", "halt.released"]);

    const all = [...ofRun(main.runId), ...ofRun(cancelled.runId), ...halts];
    for (const { id, body } of all) {
      // Ids only: exactly the keys of the type, each a string.
      expect(Object.keys(body.data).sort()).toEqual(DATA_KEYS[body.type]);
      expect(Object.values(body.data).every((v) => typeof v === "string")).toBe(true);
      expect(Object.keys(body).sort()).toEqual(["data", "timestamp", "type"]);
      expect(body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(id).toMatch(/^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
      // The 500'd first attempt carried the same webhook-id and the same body, and verified on its own.
      const attempts = receiver.at("/a").filter((r) => r.headers["webhook-id"] === id);
      expect(attempts.map((r) => r.status)).toEqual([500, 200]);
      expect(new Set(attempts.map((r) => r.body)).size).toBe(1);
      for (const attempt of attempts) {
        new Webhook(SECRET_A).verify(attempt.body, attempt.headers);
        expect(attempt.headers["content-type"]).toBe("application/json");
        expect(attempt.headers["webhook-timestamp"]).toMatch(/^\d+$/);
      }
    }
    const data = (type: string, runId: string) => ofRun(runId).find((d) => d.body.type === type)?.body.data;
    const mutation = main.events.find((e) => e.type === "tool_execution") as { mutation_id?: string };
    expect(data("mutation.outcome_unknown", main.runId)).toEqual({ run_id: main.runId, mutation_id: mutation.mutation_id });
    const asked = main.events.find((e) => e.type === "approval_requested") as { approval_id: string };
    expect(data("approval.requested", main.runId)).toMatchObject({
      run_id: main.runId,
      tool_call_id: "w1",
      approval_id: asked.approval_id,
    });
    expect(data("input.requested", main.runId)).toEqual({
      run_id: main.runId,
      channel_id: main.events[0]?.channel_id,
      tool_call_id: "ask-1",
    });

    // The receiver reads the rest with its own token: the approval and the question by the ids it was sent.
    const read = async (path: string) => {
      const res = await fetch(`${server.url}${path}`, { headers: admin() });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    await expect
      .poll(() => read(`/api/approvals/${asked.approval_id}`), { timeout: 10_000, interval: 100 })
      .toMatchObject({ status: 200, body: { approval_id: asked.approval_id, run_id: main.runId, tool_call_id: "w1", status: "approved" } });
    await expect
      .poll(() => read(`/api/runs/${main.runId}/inputs/ask-1`), { timeout: 10_000, interval: 100 })
      .toMatchObject({ status: 200, body: { run_id: main.runId, tool_call_id: "ask-1", status: "answered" } });
    expect((await read("/api/approvals/approval_nope")).status).toBe(404);
    expect((await read(`/api/runs/${main.runId}/inputs/nope`)).status).toBe(404);

    // The planted secret (in arguments, texts, the question, the answer, the halt's reason, B's query) is in no webhook.
    for (const r of receiver.received) {
      expect(r.body).not.toContain(PLANTED);
      expect(JSON.stringify(r.headers)).not.toContain(PLANTED);
    }
    // A wrong secret does not verify.
    const [first] = receiver.at("/a", 200);
    expect(() => new Webhook(secret()).verify(first?.body ?? "", first?.headers ?? {})).toThrow();
  }, 90_000);

  it("a policy version that loosens, proposed, arrives as policy.proposed with its version only (contract sections 24, 26)", async () => {
    const active = (await (await fetch(`${server.url}/api/policy`, { headers: admin() })).json()) as {
      version: number;
      policy: { tools: unknown; groups: unknown; budget: Record<string, number> };
    };
    // A budget for a tool that had none loosens (section 24): the version waits for a second person.
    const policy = { ...active.policy, budget: { ...active.policy.budget, mcp__demo__webhook_probe: 5 } };
    const put = await fetch(`${server.url}/api/policy`, {
      method: "PUT",
      headers: { ...admin(), "content-type": "application/json" },
      body: JSON.stringify({ policy, base_version: active.version, comment: "probe" }),
    });
    expect(put.status).toBe(201);
    const stored = (await put.json()) as { version: number; status: string };
    expect(stored.status).toBe("proposed");
    await expect
      .poll(() => delivered("/a", 200, [SECRET_A]).filter((d) => d.body.type === "policy.proposed"), { timeout: 20_000, interval: 100 })
      .toEqual([
        {
          id: expect.stringMatching(/^msg_/),
          body: { type: "policy.proposed", timestamp: expect.any(String), data: { version: stored.version } },
        },
      ]);
    // Withdrawn, so later cases meet the settings' policy as before.
    expect((await fetch(`${server.url}/api/policy/versions/${stored.version}`, { method: "DELETE", headers: admin() })).status).toBe(200);
  }, 60_000);

  it("a 410 disables its endpoint, audited; it gets nothing more", async () => {
    await expect.poll(() => receiver.at("/c").length, { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(1);
    await expect
      .poll(
        async () => {
          const listing = (await (await fetch(`${server.url}/api/webhooks`, { headers: admin() })).json()) as {
            webhooks: { url: string; status: string; disabled_at?: string; last_status?: number }[];
          };
          return listing.webhooks.find((w) => w.url === `${receiver.base}/c`);
        },
        { timeout: 10_000, interval: 100 },
      )
      .toMatchObject({ status: "disabled", last_status: 410, disabled_at: expect.any(String) });
    const audit = (await (await fetch(`${server.url}/api/audit?action=webhook.disabled`, { headers: admin() })).json()) as {
      entries: { action: string; target: string }[];
    };
    expect(audit.entries.map((e) => e.target)).toContain(`webhook ${receiver.base}/c`);
    const before = receiver.at("/c").length;
    // Another run.failed: A gets it, C (disabled) does not.
    const again = await drive([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "w3", arguments: { title: "x" } }] }], async (e) => {
      if (e.type === "approval_requested") await engine.cancel(e.run_id);
    });
    await expect
      .poll(() => delivered("/a", 200, [SECRET_A]).some((d) => d.body.type === "run.failed" && d.body.data.run_id === again.runId), {
        timeout: 20_000,
        interval: 100,
      })
      .toBe(true);
    expect(receiver.at("/c").length).toBe(before);
  }, 60_000);

  it("a receiver down for a while loses nothing: every notification arrives once it is back, in order, shown pending meanwhile", async () => {
    receiver.modeB = "down";
    const script = [
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "u1", arguments: { title: "a" } }] },
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "u2", arguments: { title: "b" } }] },
      { text: "done" },
    ];
    const { runId, events } = await drive(script);
    expect(events.at(-1)?.type).toBe("run_completed");
    // Refused several times while down; the listing and the metrics show them waiting.
    await expect
      .poll(() => receiver.at("/b").filter((r) => r.status === 0).length, { timeout: 20_000, interval: 100 })
      .toBeGreaterThanOrEqual(3);
    const listing = (await (await fetch(`${server.url}/api/webhooks`, { headers: admin() })).json()) as {
      webhooks: { url: string; status: string; pending: number; failed_total: number; events: string[] }[];
    };
    const b = listing.webhooks.find((w) => w.url === `${receiver.base}/b`);
    expect(b).toMatchObject({ status: "active", events: ["approval.requested", "approval.resolved"] });
    expect(b?.pending).toBeGreaterThanOrEqual(1);
    expect(b?.failed_total).toBeGreaterThanOrEqual(3);
    expect(JSON.stringify(listing)).not.toContain(PLANTED); // the url's query is left out
    const metrics = await engine.metrics();
    expect(Number(/^aee_webhooks_pending (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    expect(Number(/^aee_webhook_failures_total (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(3);

    receiver.modeB = "ok";
    const ofRun = () => delivered("/b", 204, [SECRET_B_NEW]).filter((d) => d.body.data.run_id === runId);
    await expect.poll(() => ofRun().length, { timeout: 30_000, interval: 100 }).toBe(4);
    expect(ofRun().map((d) => `${d.body.type} ${d.body.data.tool_call_id}`)).toEqual([
      "approval.requested u1",
      "approval.resolved u1",
      "approval.requested u2",
      "approval.resolved u2",
    ]);
    // Signed once per secret: the old secret verifies too (rotation).
    delivered("/b", 204, [SECRET_B_OLD]);
    await expect
      .poll(
        async () => {
          const after = (await (await fetch(`${server.url}/api/webhooks`, { headers: admin() })).json()) as {
            webhooks: { url: string; pending: number }[];
          };
          return after.webhooks.find((w) => w.url === `${receiver.base}/b`)?.pending;
        },
        { timeout: 10_000, interval: 100 },
      )
      .toBe(0);
  }, 90_000);

  it("a receiver that hangs never delays an event on the stream", async () => {
    receiver.modeB = "hang";
    const hungBefore = receiver.received.filter((r) => r.hung).length;
    const { events } = await drive([
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "h1", arguments: { title: "h" } }] },
      { text: "done" },
    ]);
    // The run went on to its end while its first notification's request was held unanswered by the receiver.
    expect(events.at(-1)?.type).toBe("run_completed");
    expect(receiver.received.filter((r) => r.hung).length).toBeGreaterThan(hungBefore);
    expect(receiver.hanging.length).toBeGreaterThanOrEqual(1);
    receiver.modeB = "ok";
    receiver.releaseHanging();
  }, 60_000);
});
