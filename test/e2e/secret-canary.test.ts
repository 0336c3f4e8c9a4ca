// The secret canary (contract section 17, issue 9): unique secret values are
// planted in every input position of a run (tool arguments at depth under
// each key style, header pairs, values that are credentials on their own, a
// result that echoes them) and searched for in every output surface: the SSE
// stream, the summary, the receipt, the durable outcomes, the D1 database's
// files (every table, WAL included), the server's log output and the
// committed fixtures. Found: zero. The real arguments still reach the tool:
// the demo server's call log shows them byte for byte.
import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { REDACTED, redactSecrets } from "../../src/execution/redaction";
import { PROJECT_ROOT, startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demoBase = inject("demoMcpBaseUrl");
/** Polling interval while waiting for a run to reach a state (short: the run takes well under a second). */
const POLL_MS = 50;
const WAIT_MS = 20_000;

let server: WorkerServer;
const markers: string[] = [];
/** A unique canary: letters and digits only, so it fits inside every key format below. */
function canary(): string {
  const m = `CANARY${randomBytes(9).toString("hex")}`;
  markers.push(m);
  return m;
}

/** Credential keys in every case and separator style. */
const SECRET_KEYS = [
  "password",
  "PASSWORD",
  "Password",
  "db_password",
  "dbPassword",
  "DB-PASSWORD",
  "passwd",
  "pwd",
  "pass",
  "api key",
  "api_key",
  "apiKey",
  "x-api-key",
  "APIKEY",
  "access key",
  "accessKeyId",
  "private_key",
  "privateKey",
  "client secret",
  "clientSecret",
  "access_token",
  "AccessToken",
  "authorization",
  "Authorization",
  "bearer",
  "cookie",
  "Set-Cookie",
  "session",
  "sessionId",
  "signature",
  "sig",
  "credential",
  "auth",
];

function plantedArguments(): Record<string, unknown> {
  const byKey = Object.fromEntries(SECRET_KEYS.map((k) => [k, canary()]));
  const ownValues = () => ({
    note: `Authorization: Bearer ${canary()}`,
    basic: `Basic ${Buffer.from(`user:${canary()}`).toString("base64")}`,
    url: `postgres://admin:${canary()}@db.internal:5432/app`,
    openai: `sk-${canary()}`,
    github: `ghp_${canary()}`,
    slack: `xoxb-${canary()}`,
    jwt: `eyJhbGciOiJub25lIn0.eyJ${canary()}.`,
    pem: `-----BEGIN PRIVATE KEY-----\n${canary()}\n-----END PRIVATE KEY-----`,
  });
  let deep: unknown = { ...Object.fromEntries(SECRET_KEYS.map((k) => [k, canary()])), ...ownValues() };
  for (let i = 0; i < 40; i++) deep = i % 2 === 0 ? { level: deep } : [deep];
  return {
    title: "canary",
    ...byKey,
    ...ownValues(),
    headers: [
      ["Authorization", `Bearer ${canary()}`],
      ["X-Api-Key", canary()],
    ],
    header_list: [
      { name: "cookie", value: canary() },
      { name: "x-auth-token", value: canary() },
    ],
    deep,
  };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + WAIT_MS;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n${server.logs()}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Every file under `dir`, as one string per file (binary content read as latin1: byte for byte). */
async function filesUnder(dir: string): Promise<Array<{ path: string; text: string }>> {
  const out: Array<{ path: string; text: string }> = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.push({ path, text: (await readFile(path)).toString("latin1") });
  }
  return out;
}

function expectNoCanary(surface: string, text: string): void {
  const found = markers.filter((m) => text.includes(m));
  // Where each leak sits, so a failure says which field carried it.
  const context = found.map((m) => text.slice(Math.max(0, text.indexOf(m) - 120), text.indexOf(m) + m.length));
  // Soft: one run reports every leaking surface, not only the first.
  expect.soft(context, `${surface} leaks ${found.length} canaries`).toEqual([]);
}

beforeAll(async () => {
  server = await startWorkerServer(e2eVars(`${demoBase}/mcp`));
  expect((await fetch(`${demoBase}/control/reset`, { method: "POST" })).status).toBe(200);
});

afterAll(async () => {
  await server?.stop();
});

describe("secret canary", () => {
  it("plants secrets in every input position and finds none in any output surface", async () => {
    const echoArgs = plantedArguments();
    const writeArgs = { ...plantedArguments(), title: `Bearer ${canary()}` };
    const deliveryId = `canary-${randomBytes(4).toString("hex")}`;
    const res = await server.api("/api/trigger", {
      method: "POST",
      body: JSON.stringify({
        message: "canary run",
        delivery_id: deliveryId,
        script: [
          { tool_calls: [{ tool_name: "mcp__demo__echo", tool_call_id: "echo-1", arguments: echoArgs }] },
          { tool_calls: [{ tool_name: "mcp__demo__create_dashboard", tool_call_id: "write-1", arguments: writeArgs }] },
          { text: "done" },
        ],
      }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    const { run_id: runId } = (await res.json()) as { run_id: string };

    // The write waits for a person: approve it (the arguments shown are redacted).
    const approval = await waitFor("the approval", async () => {
      const summary = (await (await server.api(`/api/runs/${runId}`)).json()) as { pending_approvals: { approval_id: string }[] };
      return summary.pending_approvals[0];
    });
    const decided = await server.api(`/api/runs/${runId}/approvals/${approval.approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBeLessThan(300);
    const summaryText = await waitFor("the run's end", async () => {
      const text = await (await server.api(`/api/runs/${runId}`)).text();
      return JSON.parse(text).status === "running" ? undefined : text;
    });
    expect(JSON.parse(summaryText).status).toBe("completed");

    // Output surfaces.
    const stream = await (await server.api(`/api/runs/${runId}/events`, { headers: { accept: "text/event-stream" } })).text();
    expect(stream).toContain("event: run_completed");
    expect(stream).toContain(REDACTED); // the approval's arguments and the echoed summary were there, redacted
    expectNoCanary("the SSE stream", stream);
    expectNoCanary("the run summary", summaryText);
    expectNoCanary("the receipt", await (await server.api(`/api/deliveries/${deliveryId}`)).text());
    const mutations = await (await server.api(`/api/runs/${runId}/mutations`)).text();
    expect(mutations).toContain("completed");
    expectNoCanary("the durable outcomes", mutations);
    const d1Files = await filesUnder(join(server.stateDir, "v3", "d1"));
    expect(d1Files.length).toBeGreaterThan(0);
    for (const file of d1Files) expectNoCanary(`D1 file ${file.path}`, file.text);
    expectNoCanary("the server's log output", server.logs());

    // The real arguments reached the tools, exactly as sent.
    const calls = (await (await fetch(`${demoBase}/control/calls`)).json()) as { calls: { tool: string; arguments: unknown }[] };
    expect(calls.calls.find((c) => c.tool === "echo")?.arguments).toEqual(echoArgs);
    expect(calls.calls.find((c) => c.tool === "create_dashboard")?.arguments).toEqual(writeArgs);
  });

  it("keeps the committed fixtures free of anything redaction would change", async () => {
    const fixtures = JSON.parse(await readFile(join(PROJECT_ROOT, "test/fixtures/approved_execution_v2.json"), "utf8"));
    expect(redactSecrets(fixtures)).toEqual(fixtures);
  });

  it("keeps human__ask arguments and model text redacted too, and purges the run's storage after retention", async () => {
    const retentionSeconds = 2;
    const short = await startWorkerServer({ ...e2eVars(`${demoBase}/mcp`), RUN_RETENTION_SECONDS: String(retentionSeconds) });
    try {
      const askArgs = { password: canary(), prompt: { api_key: canary(), text: `Bearer ${canary()}` } };
      const res = await short.api("/api/trigger", {
        method: "POST",
        body: JSON.stringify({
          message: `deploy with Authorization: Bearer ${canary()}`,
          script: [
            { text: `thinking about sk-${canary()}` },
            { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: askArgs }] },
            { text: "done" },
          ],
        }),
      });
      expect(res.status, await res.clone().text()).toBe(202);
      const { run_id: runId } = (await res.json()) as { run_id: string };
      const pending = await waitFor("the question", async () => {
        const text = await (await short.api(`/api/runs/${runId}`)).text();
        return JSON.parse(text).pending_inputs.length > 0 ? text : undefined;
      });
      expectNoCanary("the summary's pending_inputs", pending);
      const answered = await short.api(`/api/runs/${runId}/inputs/ask-1`, {
        method: "POST",
        body: JSON.stringify({ answer: "ok" }),
      });
      expect(answered.status).toBeLessThan(300);
      await waitFor("the run's end", async () => {
        const text = await (await short.api(`/api/runs/${runId}`)).text();
        return JSON.parse(text).status === "running" ? undefined : text;
      });
      const stream = await (await short.api(`/api/runs/${runId}/events`, { headers: { accept: "text/event-stream" } })).text();
      expect(stream).toContain("event: human_input_requested");
      expectNoCanary("the SSE stream (human__ask, assistant text)", stream);

      // After retention the run is gone, and so is every copy of its input in the object's storage.
      const purgeBy = Date.now() + retentionSeconds * 1000 + 10_000;
      while (Date.now() < purgeBy && (await short.api(`/api/runs/${runId}`)).status !== 404) await new Promise((r) => setTimeout(r, 250));
      expect.soft((await short.api(`/api/runs/${runId}`)).status, "the run after its retention").toBe(404);
      for (const file of await filesUnder(join(short.stateDir, "v3", "do"))) expectNoCanary(`Durable Object file ${file.path}`, file.text);
      expectNoCanary("the server's log output", short.logs());
    } finally {
      await short.stop();
    }
  });
});
