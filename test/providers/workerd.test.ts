// The providers inside workerd: a tiny Worker (./workerd/provider-worker.ts)
// served by `wrangler dev` with the project's compatibility date and flags,
// calling the Node-side stand-ins over loopback. This is what shows the SDK
// clients (and our retry and repair code) run in the Workers runtime.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNANSWERED_TOOL_CALL_RESULT } from "../../src/providers/model-provider";
import {
  anthropicMessage,
  openAiCompletion,
  startAnthropicStandIn,
  startOpenAiStandIn,
  type ModelStandIn,
} from "../support/model-stand-ins";
import { freePort, PROJECT_ROOT, WRANGLER_CLI } from "../support/worker-server";
import { DUMMY_KEY, FAST_RETRY, firstRequest, withDanglingCall } from "./fixtures";

const STARTUP_TIMEOUT_MS = 60_000;

let dir: string;
let child: ChildProcess | undefined;
let workerUrl: string;
let output = "";
let anthropic: ModelStandIn;
let openai: ModelStandIn;

beforeAll(async () => {
  anthropic = await startAnthropicStandIn({ apiKey: DUMMY_KEY });
  openai = await startOpenAiStandIn({ apiKey: DUMMY_KEY });

  // The project's own runtime settings, so this tracks wrangler.toml.
  const projectConfig = await readFile(join(PROJECT_ROOT, "wrangler.toml"), "utf8");
  const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(projectConfig)?.[1];
  const flags = /^compatibility_flags\s*=\s*(\[[^\]]*\])/m.exec(projectConfig)?.[1];
  expect(date, "wrangler.toml has a compatibility_date").toBeDefined();

  dir = await mkdtemp(join(tmpdir(), "aee-providers-"));
  const config = join(dir, "wrangler.toml");
  await writeFile(
    config,
    [
      `name = "provider-probe"`,
      `main = ${JSON.stringify(join(PROJECT_ROOT, "test/providers/workerd/provider-worker.ts"))}`,
      `compatibility_date = "${date}"`,
      `compatibility_flags = ${flags ?? "[]"}`,
      "",
    ].join("\n"),
  );
  const port = await freePort();
  child = spawn(
    process.execPath,
    [
      WRANGLER_CLI,
      "dev",
      "--config",
      config,
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(await freePort()),
      "--persist-to",
      join(dir, "state"),
      "--show-interactive-dev-session=false",
      "--log-level",
      "warn",
    ],
    {
      cwd: dir,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    },
  );
  child.stdout?.on("data", (d) => (output += String(d)));
  child.stderr?.on("data", (d) => (output += String(d)));
  workerUrl = `http://127.0.0.1:${port}`;
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output}`);
    try {
      if ((await fetch(workerUrl)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > STARTUP_TIMEOUT_MS) throw new Error(`wrangler dev did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});

afterAll(async () => {
  if (child?.pid !== undefined && child.exitCode === null) {
    const exited = new Promise<void>((r) => child!.once("exit", () => r()));
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      child.kill("SIGTERM");
    }
    await exited;
  }
  await anthropic?.close();
  await openai?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function nextInWorkerd(body: unknown): Promise<any> {
  const res = await fetch(`${workerUrl}/next`, { method: "POST", body: JSON.stringify(body) });
  expect(res.status, output).toBe(200);
  return res.json();
}

describe("in workerd", () => {
  it("anthropic: a tool-use round trip through the SDK", async () => {
    anthropic.enqueue({
      body: anthropicMessage({ text: "Looking", toolUses: [{ id: "toolu_w", name: "mcp__demo__list_dashboards", input: { limit: 2 } }] }),
    });
    const result = await nextInWorkerd({
      provider: "anthropic",
      settings: { baseUrl: anthropic.baseUrl, apiKey: DUMMY_KEY, model: "claude-test", retry: FAST_RETRY },
      request: firstRequest(),
    });
    expect(result).toEqual({
      turn: {
        text: "Looking",
        tool_calls: [{ tool_call_id: "toolu_w", tool_name: "mcp__demo__list_dashboards", arguments: { limit: 2 } }],
        stop: "tool_use",
      },
    });
    const req = anthropic.requests.at(-1)!;
    expect(req.path).toBe("/v1/messages");
    expect(req.headers["anthropic-version"]).toBeDefined();
    expect(req.body.tools).toHaveLength(2);
  });

  it("anthropic: retries a 500 and then gives up with a readable ModelError", async () => {
    const before = anthropic.requests.length;
    for (let i = 0; i < 3; i++)
      anthropic.enqueue({ status: 500, body: { type: "error", error: { type: "api_error", message: "Internal server error" } } });
    const result = await nextInWorkerd({
      provider: "anthropic",
      settings: { baseUrl: anthropic.baseUrl, apiKey: DUMMY_KEY, retry: FAST_RETRY },
      request: firstRequest(),
    });
    expect(result.error).toEqual({
      isModelError: true,
      message: "The model provider (anthropic) kept failing: HTTP 500 after 3 attempts: Internal server error",
      code: "unavailable",
      status: 500,
      attempts: 3,
    });
    expect(anthropic.requests.length - before).toBe(3);
  });

  it("openai: repairs a dangling tool call and parses the answer", async () => {
    openai.enqueue({
      body: openAiCompletion({ toolCalls: [{ id: "call_w", name: "mcp__demo__create_dashboard", arguments: { title: "R" } }] }),
    });
    const result = await nextInWorkerd({
      provider: "openai",
      settings: { baseUrl: openai.baseUrl, apiKey: DUMMY_KEY, model: "gpt-test", retry: FAST_RETRY },
      request: withDanglingCall(),
    });
    expect(result).toEqual({
      turn: {
        tool_calls: [{ tool_call_id: "call_w", tool_name: "mcp__demo__create_dashboard", arguments: { title: "R" } }],
        stop: "tool_use",
      },
    });
    const messages = openai.requests.at(-1)!.body.messages;
    expect(messages.at(-1)).toEqual({ role: "tool", tool_call_id: "call_cut", content: `[tool error] ${UNANSWERED_TOOL_CALL_RESULT}` });
  });

  it("openai: a 401 is not retried", async () => {
    const before = openai.requests.length;
    const result = await nextInWorkerd({
      provider: "openai",
      settings: { baseUrl: openai.baseUrl, apiKey: "wrong-dummy-key", retry: FAST_RETRY },
      request: firstRequest(),
    });
    expect(result.error).toMatchObject({ isModelError: true, code: "auth", status: 401 });
    expect(openai.requests.length - before).toBe(1);
  });
});
