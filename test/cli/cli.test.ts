// The `approved-exec` command driven as a person or a script would: the built
// bin (dist/cli/main.js, made by the node project's global setup) run as a
// real process against the Worker under wrangler dev and the demo MCP server,
// through pipes, and through a pseudo-terminal where it asks questions. Only
// the run's own summary and events are read (not the run/approval indexes),
// so these tests do not depend on the D1 indexes being filled. The file serves
// its own Worker (longer approval timeout) beside the shared demo MCP server.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { commandName } from "../../cli/environment";
import { EngineClient, type EngineEvent, type ScriptTurn } from "../../src/client";
import { e2eVars } from "../e2e/global-setup";
import { ALERT, armFault, CREATE, demo, demoCalls, demoReset, LIST } from "../support/e2e-client";
import { type DemoMcpProcess, startDemoMcpProcess } from "../support/demo-mcp-process";
import { spawnInPty } from "../support/pty";
import { PROJECT_ROOT, startWorkerServer, type WorkerServer } from "../support/worker-server";

const BIN = join(PROJECT_ROOT, "dist/cli/main.js");
/** Who the engine records for the CLI's decisions: the principal of the token it sends (API_TOKEN here). */
const ME = "token:root";
/** Bounds for one CLI process (a node start plus a few requests) and for a whole watched run. */
const COMMAND_TIMEOUT_MS = 15_000;
const RUN_TIMEOUT_MS = 30_000;
/**
 * The shared e2e settings, but approvals wait 30 s instead of 3 s: between an
 * approval_requested and the decision these tests start one or two CLI
 * processes, which on a loaded two-core machine can take longer than 3 s.
 */
const APPROVAL_TIMEOUT_MS = "30000";

let server: WorkerServer;
let engine: EngineClient;
let url: string;
let token: string;

function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  delete base.API_TOKEN;
  const env: NodeJS.ProcessEnv = { ...base, ENGINE_URL: url, ENGINE_TOKEN: token, NO_COLOR: "1", ...extra };
  for (const [k, v] of Object.entries(extra)) if (v === undefined) delete env[k];
  return env;
}

/**
 * The environment of a person's terminal: ora (through is-interactive) draws no spinner when `CI` is
 * set or `TERM` is `dumb`, as it should in a CI log, so the pty tests take both out of the picture.
 */
function terminalEnv(): NodeJS.ProcessEnv {
  return cliEnv({ CI: undefined, TERM: "xterm-256color" });
}

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with its stdin closed and its output on pipes (no terminal), to its exit. */
function cli(args: string[], env: NodeJS.ProcessEnv = cliEnv()): Promise<Finished> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: PROJECT_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += String(d)));
  child.stderr.on("data", (d) => (stderr += String(d)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`approved-exec ${args.join(" ")} did not exit within ${COMMAND_TIMEOUT_MS} ms:\n${stdout}\n${stderr}`));
    }, COMMAND_TIMEOUT_MS);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A CLI process whose stdout lines are read as they come (`watch --json`). */
class Streaming {
  readonly lines: string[] = [];
  readonly exited: Promise<Finished>;
  readonly #child: ChildProcess;
  #wakers: (() => void)[] = [];

  constructor(args: string[]) {
    this.#child = spawn(process.execPath, [BIN, ...args], { cwd: PROJECT_ROOT, env: cliEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    this.#child.stderr?.on("data", (d) => (stderr += String(d)));
    createInterface({ input: this.#child.stdout! }).on("line", (line) => {
      this.lines.push(line);
      for (const wake of this.#wakers.splice(0)) wake();
    });
    this.exited = new Promise((resolve) =>
      this.#child.once("exit", (code) => {
        for (const wake of this.#wakers.splice(0)) wake();
        resolve({ code, stdout: this.lines.join("\n"), stderr });
      }),
    );
  }

  /** The first line (parsed as JSON) that satisfies `match`. */
  async waitForJson(match: (event: Record<string, unknown>) => boolean, timeoutMs = RUN_TIMEOUT_MS): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find(match);
      if (found) return found;
      if (this.#child.exitCode !== null) throw new Error(`the CLI exited without the line; it printed:\n${this.lines.join("\n")}`);
      if (Date.now() > deadline) throw new Error(`no matching line within ${timeoutMs} ms; the CLI printed:\n${this.lines.join("\n")}`);
      await new Promise<void>((resolve) => {
        this.#wakers.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }

  kill(): void {
    if (this.#child.exitCode === null) this.#child.kill("SIGKILL");
  }
}

let scratch: string;
const streams: Streaming[] = [];
/** A demo server of the 2026-07-28 kind beside the shared one: its schedule_report asks a question mid-call (a form). */
let modern: DemoMcpProcess;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "aee-cli-"));
  modern = await startDemoMcpProcess({ DEMO_MCP_ERA: "2026-07-28" });
  const vars = e2eVars(`${demo}/mcp`);
  server = await startWorkerServer({
    ...vars,
    APPROVAL_TIMEOUT_MS,
    MCP_SERVERS: JSON.stringify({ ...JSON.parse(vars.MCP_SERVERS ?? "{}"), modern: { url: modern.url, trust_annotations: true } }),
    MUTATION_BUDGET: JSON.stringify({
      ...JSON.parse(vars.MUTATION_BUDGET ?? "{}"),
      mcp__modern__create_dashboard: 1,
      mcp__modern__schedule_report: 1,
    }),
  });
  ({ url, token } = server);
  engine = new EngineClient({ baseUrl: url, token });
});
afterAll(async () => {
  for (const s of streams) s.kill();
  await server?.stop();
  await modern?.stop();
  await rm(scratch, { recursive: true, force: true });
});
beforeEach(demoReset);

let scripts = 0;
async function scriptFile(turns: ScriptTurn[]): Promise<string> {
  const path = join(scratch, `script-${++scripts}.json`);
  await writeFile(path, JSON.stringify(turns));
  return path;
}

/** A channel of this test's own, so rows and blocks of other tests never meet it. */
const channel = (name: string) => `C-cli-${name}-${Date.now().toString(36)}`;

/** The run's events as the API has them, heartbeats left out. */
async function eventsOf(runId: string): Promise<EngineEvent[]> {
  const all: EngineEvent[] = [];
  for await (const event of engine.events(runId)) if (event.type !== "heartbeat") all.push(event);
  return all;
}

/** `trigger --json` (no watch): the receipt's run id. */
async function triggerRun(turns: ScriptTurn[], channelId: string): Promise<string> {
  const started = await cli(["trigger", "do it", "--json", "--channel", channelId, "--script", await scriptFile(turns)]);
  expect(started).toMatchObject({ code: 0, stderr: "" });
  const receipt = JSON.parse(started.stdout);
  expect(receipt).toMatchObject({ status: "accepted", channel_id: channelId, run_id: expect.stringMatching(/^run_/) });
  return receipt.run_id;
}

/** The approval_id of the run's first pending approval, read from its summary. */
async function waitForApproval(runId: string): Promise<string> {
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  for (;;) {
    const pending = (await engine.summary(runId)).pending_approvals[0];
    if (pending) return pending.approval_id;
    if (Date.now() > deadline) throw new Error(`no approval in ${runId} within ${RUN_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function watchJson(runId: string): Streaming {
  const watching = new Streaming(["watch", runId, "--json"]);
  streams.push(watching);
  return watching;
}

describe("approved-exec against the engine", () => {
  it("trigger --watch prints one line per event, in order, and exits 0 when the run completes", async () => {
    const script = await scriptFile([
      { text: "Looking.", tool_calls: [{ tool_name: LIST, tool_call_id: "read-1", arguments: {} }] },
      { text: "Found them." },
    ]);
    const result = await cli(["trigger", "list my dashboards", "--watch", "--channel", channel("watch"), "--script", script]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const [first, ...lines] = result.stdout.trimEnd().split("\n");
    const runId = /^started (run_\w+)$/.exec(first ?? "")?.[1];
    expect(runId).toBeDefined();

    // Exactly the run's events (heartbeats are shown only with --heartbeats), each on its own line, in order.
    const events = await eventsOf(runId!);
    expect(
      lines.map((l) =>
        l
          .split(/\s+/)
          .filter((_, i) => i !== 1)
          .slice(0, 2)
          .join(" "),
      ),
    ).toEqual(events.map((e) => `#${e.sequence} ${e.type}`));
    expect(events.map((e) => e.type)).toEqual([
      "run_started",
      "assistant_message",
      "tool_started",
      "tool_execution",
      "tool_completed",
      "assistant_message",
      "run_completed",
    ]);
    expect(lines[2]).toContain(`tool_started            ${LIST} call=read-1 approval_required=false`);
    expect(lines[3]).toMatch(new RegExp(`tool_execution +${LIST} call=read-1 executed result=ok,\\d+B$`));
    expect(lines.at(-1)).toMatch(/run_completed +tool_calls=1 "Found them\."$/);
  });

  it("asks approve? [y/N] at a terminal, takes the typed confirmation for a confirm tool, and records who decided", async () => {
    const script = await scriptFile([
      {
        text: "Creating it.",
        tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "Latency", api_key: "sk-live-0123456789abcdef" } }],
      },
      { tool_calls: [{ tool_name: ALERT, tool_call_id: "alert-1", arguments: { dashboard_id: "dash-1", chart: "p99", threshold: 250 } }] },
      { text: "Both done." },
    ]);
    const term = spawnInPty(process.execPath, [BIN, "trigger", "set it up", "--watch", "--script", script], terminalEnv(), PROJECT_ROOT);
    try {
      const firstPrompt = await term.waitFor("approve? [y/N]", RUN_TIMEOUT_MS);
      // The approval line above the prompt shows the arguments, redacted by the engine.
      expect(term.screen()).toContain('args={"title":"Latency","api_key":"[redacted]"}');
      expect(term.screen()).not.toContain("sk-live-0123456789abcdef");
      term.type("y\n");
      const secondPrompt = await term.waitFor("approve? [y/N]", RUN_TIMEOUT_MS, firstPrompt + 1);
      expect(term.screen().slice(firstPrompt, secondPrompt)).toMatch(
        new RegExp(`approval_requested +${ALERT} call=alert-1 .* level=confirm `),
      );
      term.type("yes\n");
      const ask = await term.waitFor(`type the tool name (${ALERT}) to confirm:`, RUN_TIMEOUT_MS, secondPrompt);
      term.type("create_alert\n");
      const refused = await term.waitFor("refused: confirmation_mismatch (400)", RUN_TIMEOUT_MS, ask);
      await term.waitFor(`type the tool name (${ALERT}) to confirm:`, RUN_TIMEOUT_MS, refused);
      term.type(`${ALERT}\n`);
      expect(await term.exited).toBe(0);
    } finally {
      term.child.kill("SIGKILL");
    }
    const screen = term.screen();
    const runId = /started (run_\w+)/.exec(screen)?.[1];
    expect(runId).toBeDefined();
    expect(screen).toMatch(/run_completed +tool_calls=2 "Both done\."/);
    // The spinner ran while the run waited (ora's frames), since stdout was a terminal.
    expect(screen).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for/);

    const events = await eventsOf(runId!);
    const resolved = events.filter((e) => e.type === "approval_resolved");
    expect(resolved.map((e) => [e.tool_call_id, e.decision, e.decided_by])).toEqual([
      ["write-1", "approved", ME],
      ["alert-1", "approved", ME],
    ]);
    expect((await demoCalls()).by_tool).toMatchObject({ create_dashboard: 1, create_alert_from_chart: 1 });
  });

  it("deny --json answers one JSON object, and watch --json prints every event as one JSON object per line", async () => {
    const runId = await triggerRun(
      [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "no" } }] }],
      channel("deny"),
    );
    const watching = watchJson(runId);
    const requested = await watching.waitForJson((e) => e.type === "approval_requested");

    // pending --run reads the run's own summary.
    const pending = await cli(["pending", "--run", runId, "--json"]);
    expect(pending.code).toBe(0);
    expect(JSON.parse(pending.stdout)).toMatchObject({
      run_id: runId,
      approvals: [{ approval_id: requested.approval_id, tool_call_id: "write-1", tool_name: CREATE }],
      inputs: [],
    });

    const denied = await cli(["deny", runId, String(requested.approval_id), "--reason", "not today", "--json"]);
    expect(denied).toEqual({
      code: 0,
      stdout: `${JSON.stringify({ approval_id: requested.approval_id, decision: "denied", status: "resolved" })}\n`,
      stderr: "",
    });
    const watched = await watching.exited;
    expect(watched.code).toBe(0);
    const lines = watching.lines.map((l) => JSON.parse(l) as EngineEvent);
    // Every event, heartbeats included, exactly as the API serves them.
    const all: EngineEvent[] = [];
    for await (const event of engine.events(runId)) all.push(event);
    expect(lines).toEqual(all);
    expect(lines.map((e) => e.sequence)).toEqual(lines.map((_, i) => i + 1));
    expect(lines.find((e) => e.type === "approval_resolved")).toMatchObject({ decision: "denied", decided_by: ME, reason: "not today" });
    expect(lines.find((e) => e.type === "tool_execution")).toMatchObject({ execution_status: "not_executed", reason: "denied" });
    expect((await demoCalls()).total).toBe(0);

    // The same decision again is the same answer; the other one is refused with its code.
    expect((await cli(["deny", runId, String(requested.approval_id), "--json"])).code).toBe(0);
    const late = await cli(["approve", runId, String(requested.approval_id), "--json"]);
    expect(late.code).toBe(1);
    expect(late.stdout).toBe("");
    expect(JSON.parse(late.stderr)).toMatchObject({ status: 409, error: "already_resolved", decision: "denied" });
  });

  it("trigger --watch on pipes says it cannot ask and how to decide elsewhere, in the command that works here (npm run cli --); a deny with a reason shows the reason; a later watch replays the decided approval without the hint", async () => {
    const script = await scriptFile([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "no" } }] }]);
    // Through `npm run cli`'s script, as in a checkout, where approved-exec is not on PATH.
    const child = spawn(
      process.execPath,
      [join(PROJECT_ROOT, "scripts/cli.mjs"), "trigger", "make one", "--watch", "--channel", channel("hint"), "--script", script],
      { cwd: PROJECT_ROOT, env: cliEnv(), stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += String(d)));
    child.stderr.on("data", (d) => (stderr += String(d)));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      await expect.poll(() => stderr, { timeout: RUN_TIMEOUT_MS }).toContain("cannot ask here");
      const [, runId, approvalId] = /\n {2}npm run cli -- approve (run_\w+) (approval_\w+)\n/.exec(stderr) ?? [];
      expect(stderr).toContain(`\n  npm run cli -- deny ${runId} ${approvalId} --reason`);
      expect(stderr).not.toMatch(/^ {2}approved-exec /m);
      const denied = await cli(["deny", runId!, approvalId!, "--reason", "wrong title"]);
      expect(denied).toEqual({ code: 0, stdout: `denied ${approvalId} reason="wrong title"\n`, stderr: "" });
      expect(await exited).toBe(0);
      expect(stdout).toMatch(
        new RegExp(`approval_resolved +${CREATE} call=write-1 approval=${approvalId} decision=denied by=${ME} reason="wrong title"`),
      );
      // Watched again afterwards: the approval is shown as it happened, but nobody is told to decide it any more.
      const replay = await cli(["watch", runId!]);
      expect(replay.code).toBe(0);
      expect(replay.stdout).toMatch(new RegExp(`approval_requested +${CREATE} call=write-1 approval=${approvalId}`));
      expect(replay.stderr).not.toContain("cannot ask here");
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("approve of a confirm tool needs the typed tool name: refused without it on a pipe, asked for at a terminal", async () => {
    const runId = await triggerRun(
      [
        {
          tool_calls: [
            {
              tool_name: ALERT,
              tool_call_id: "alert-1",
              arguments: { dashboard_id: "dash-9", chart: "p50", threshold: 1, api_key: "sk-cli-test-0123456789abcdef" },
            },
          ],
        },
      ],
      channel("confirm"),
    );
    const watching = watchJson(runId);
    const requested = await watching.waitForJson((e) => e.type === "approval_requested");
    expect(requested).toMatchObject({ level: "confirm" });
    const approvalId = String(requested.approval_id);

    // pending --run shows what the person decides on: the level, the arguments (a secret withheld) and the hidden paths.
    const ofRun = await cli(["pending", "--run", runId]);
    expect(ofRun.code).toBe(0);
    expect(ofRun.stdout).toMatch(
      new RegExp(
        `^approval ${approvalId} run=${runId} ${ALERT} call=alert-1 level=confirm expires=\\S+ ` +
          `args=\\{"dashboard_id":"dash-9","chart":"p50","threshold":1,"api_key":"\\[redacted\\]"\\} hidden=\\["/api_key \\(\\d+ chars\\)"\\]\n$`,
      ),
    );

    const unconfirmed = await cli(["approve", runId, approvalId]);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toMatch(/^error: confirmation_mismatch \(400\): /);
    const mistyped = await cli(["approve", runId, approvalId, "--confirm", "create_alert"]);
    expect(mistyped.code).toBe(1);
    expect(mistyped.stderr).toMatch(/^error: confirmation_mismatch \(400\): /);

    const term = spawnInPty(process.execPath, [BIN, "approve", runId, approvalId], terminalEnv(), PROJECT_ROOT);
    try {
      await term.waitFor(`type the tool name (${ALERT}) to confirm:`, RUN_TIMEOUT_MS);
      term.type(`${ALERT}\n`);
      expect(await term.exited).toBe(0);
    } finally {
      term.child.kill("SIGKILL");
    }
    expect(term.screen()).toContain(`approved ${approvalId}`);
    expect((await watching.exited).code).toBe(0);
    expect(await watching.waitForJson((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "approved",
      decided_by: ME,
    });
  });

  it("answers a question, cancels the run, and watch exits 1 on the failed run", async () => {
    const runId = await triggerRun(
      [
        {
          tool_calls: [
            { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which dashboard?" } },
            { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } },
          ],
        },
      ],
      channel("answer"),
    );
    const watching = watchJson(runId);
    await watching.waitForJson((e) => e.type === "human_input_requested");
    const answered = await cli(["answer", runId, "ask-1", "the latency one"]);
    expect(answered).toEqual({ code: 0, stdout: "answered ask-1\n", stderr: "" });
    expect(await watching.waitForJson((e) => e.type === "human_input_received")).toMatchObject({ answered_by: ME });

    await watching.waitForJson((e) => e.type === "approval_requested");
    const cancelled = await cli(["cancel", runId]);
    expect(cancelled).toEqual({ code: 0, stdout: `cancelling ${runId}\n`, stderr: "" });
    const watched = await watching.exited;
    expect(watched.code).toBe(1);
    expect(watched.stderr).toContain("run failed: cancelled");
    expect(JSON.parse(watching.lines.at(-1)!)).toMatchObject({ type: "run_failed", error: { code: "cancelled" } });

    // Cancelling an ended run is not a refusal: it says how the run ended.
    expect(await cli(["cancel", runId])).toEqual({ code: 0, stdout: `${runId} had already ended: failed\n`, stderr: "" });
  });

  it("answer with content that does not fit the question's form prints what does not fit, and changes nothing", async () => {
    await fetch(new URL("/control/reset", modern.url), { method: "POST" });
    const runId = await triggerRun(
      [
        { tool_calls: [{ tool_name: "mcp__modern__create_dashboard", tool_call_id: "dash", arguments: { title: "Latency" } }] },
        { tool_calls: [{ tool_name: "mcp__modern__schedule_report", tool_call_id: "report-1", arguments: { dashboard_id: "dash-1" } }] },
      ],
      channel("misfit"),
    );
    const watching = watchJson(runId);
    const approveNext = async (seen: number) => {
      const approvals = () => watching.lines.filter((l) => JSON.parse(l).type === "approval_requested");
      await watching.waitForJson(() => approvals().length > seen);
      const event = JSON.parse(approvals()[seen]!) as { approval_id: string };
      await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
    };
    await approveNext(0);
    await approveNext(1);
    const asked = await watching.waitForJson((e) => e.type === "human_input_requested");
    const misfit = await cli(["answer", runId, String(asked.input_id), "--accept", '{"frequency":"hourly","recipient":"#ops"}']);
    expect(misfit.code).toBe(1);
    expect(misfit.stdout).toBe("");
    const [first, ...details] = misfit.stderr.trimEnd().split("\n");
    expect(first).toMatch(/^error: invalid_answer \(400\): /);
    expect(details.length).toBeGreaterThan(0);
    expect(details.every((line) => line.startsWith("  "))).toBe(true);
    expect(details.join("\n")).toContain("frequency");
    expect((await engine.summary(runId)).pending_inputs).toHaveLength(1);
    expect((await cli(["cancel", runId])).code).toBe(0);
    await watching.exited;
  });

  it("watch and pending print a question's secrets redacted (contract section 20)", async () => {
    const canary = `CANARY${Math.random().toString(36).slice(2)}`;
    const question = `Deploy with password: ${canary}? Header ["X-Api-Key","${canary}"], then run --token ${canary}.`;
    const runId = await triggerRun(
      [{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-secret", arguments: { question } }] }],
      channel("secret"),
    );
    const watching = watchJson(runId);
    const requested = await watching.waitForJson((e) => e.type === "human_input_requested");
    expect(String(requested.question)).toContain("[redacted]");
    const ofRun = await cli(["pending", "--run", runId]);
    expect(ofRun.stdout).toContain("ask-secret");
    const listed = await cli(["pending"]);
    expect(listed.code).toBe(0);
    const cancelled = await cli(["cancel", runId]);
    expect(cancelled.code).toBe(0);
    await watching.exited;
    for (const out of [watching.lines.join("\n"), ofRun.stdout, ofRun.stderr, listed.stdout, listed.stderr])
      expect(out).not.toContain(canary);
  });

  it("lists an outcome_unknown row and reconciles it; reconciling it again is refused with exit 1", async () => {
    const ch = channel("unknown");
    // The demo server holds the call past the engine's 1 s call timeout: dispatched, outcome unknown.
    await armFault("create_dashboard", "delay", 2_500);
    const runId = await triggerRun([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "slow" } }] }], ch);
    const watching = watchJson(runId);
    const requested = await watching.waitForJson((e) => e.type === "approval_requested");
    const approved = await cli(["approve", runId, String(requested.approval_id)]);
    expect(approved).toEqual({ code: 0, stdout: `approved ${requested.approval_id}\n`, stderr: "" });
    expect((await watching.exited).code).toBe(0);
    const execution = await watching.waitForJson((e) => e.type === "tool_execution");
    expect(execution).toMatchObject({ execution_status: "executed", error: { code: "transport_timeout" } });
    const mutationId = String(execution.mutation_id);

    const listed = await cli(["unknown", "--channel", ch, "--json"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).mutations).toEqual([
      expect.objectContaining({ mutation_id: mutationId, run_id: runId, state: "outcome_unknown", dispatched: true }),
    ]);
    const human = await cli(["unknown", "--channel", ch]);
    expect(human.stdout).toMatch(
      new RegExp(`^${mutationId} state=outcome_unknown run=${runId} ${CREATE} call=write-1 error=transport_timeout `),
    );

    const evidence = "the demo server lists no dashboard titled slow";
    const reconciled = await cli(["reconcile", mutationId, "--outcome", "not_executed", "--evidence", evidence, "--json"]);
    expect(reconciled.code).toBe(0);
    expect(JSON.parse(reconciled.stdout)).toMatchObject({
      mutation_id: mutationId,
      state: "not_executed",
      reconciliation: { outcome: "not_executed", reconciled_by: ME, evidence },
    });
    expect((await engine.mutation(mutationId)).reconciliation?.reconciled_by).toBe(ME);
    expect((await cli(["unknown", "--channel", ch])).stdout).toBe("no outcome_unknown rows\n");

    const again = await cli(["reconcile", mutationId, "--outcome", "completed", "--evidence", evidence]);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe("");
    expect(again.stderr).toMatch(/^error: not_reconcilable \(409\): /);
  });
});

describe("npm run cli", () => {
  const RUNNER = join(PROJECT_ROOT, "scripts/cli.mjs");
  const runner = (args: string[]): Promise<Finished> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [RUNNER, ...args], { cwd: PROJECT_ROOT, env: cliEnv(), stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += String(d)));
      child.stderr.on("data", (d) => (stderr += String(d)));
      child.once("exit", (code) => resolve({ code, stdout, stderr }));
    });

  it(
    "runs the built CLI without building when dist is fresh, and builds once when a source is newer",
    async () => {
      // The global setup has just built dist: nothing to build.
      const fresh = await runner(["--help"]);
      expect(fresh.code).toBe(0);
      expect(fresh.stdout).toContain("Usage: approved-exec");
      expect(fresh.stderr).toBe("");

      // A source saved after the build (now: the global setup built dist earlier): built once, then fresh again,
      // since the rebuilt files are newer than that save.
      const saved = new Date();
      await utimes(join(PROJECT_ROOT, "cli/render.ts"), saved, saved);
      const rebuilt = await runner(["--help"]);
      expect(rebuilt.code).toBe(0);
      expect(rebuilt.stderr).toContain("building the CLI");
      expect(rebuilt.stdout).toContain("Usage: approved-exec");
      const again = await runner(["--help"]);
      expect(again.stderr).toBe("");
    },
    RUN_TIMEOUT_MS * 2,
  );
});

describe("approved-exec with named tokens (contract section 18)", () => {
  it("an admin makes a requester and an approver-only token; each acts as itself and only in its roles; revoke ends one", async () => {
    const suffix = Math.random().toString(36).slice(2, 8);
    const makeToken = async (name: string, role: string) => {
      const made = await cli(["tokens", "create", name, "--role", role]);
      expect(made.code, made.stderr).toBe(0);
      const [first, value] = made.stdout.trimEnd().split("\n");
      expect(first).toMatch(new RegExp(`^created token:${name} roles=${role} expires=`));
      expect(value).toMatch(/^aee_[A-Za-z0-9_-]{43}$/);
      expect(made.stderr).toContain("shown only once");
      return value!;
    };
    const bot = `bot-${suffix}`;
    const ops = `ops-${suffix}`;
    const botToken = await makeToken(bot, "requester");
    const opsToken = await makeToken(ops, "approver");
    const asBot = cliEnv({ ENGINE_TOKEN: botToken });
    const asOps = cliEnv({ ENGINE_TOKEN: opsToken });

    const script = await scriptFile([
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: `two-${suffix}` } }] },
    ]);
    const started = await cli(["trigger", "make it", "--json", "--channel", channel("tokens"), "--script", script], asBot);
    expect(started.code, started.stderr).toBe(0);
    const runId: string = JSON.parse(started.stdout).run_id;
    const requested = await waitForApproval(runId);

    const refused = await cli(["approve", runId, requested], asBot);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`error: forbidden (403): token:${bot} lacks the approver role\n`);
    const approved = await cli(["approve", runId, requested], asOps);
    expect(approved).toEqual({ code: 0, stdout: `approved ${requested}\n`, stderr: "" });
    const events: EngineEvent[] = [];
    for await (const event of engine.events(runId)) events.push(event);
    expect(events.find((e) => e.type === "run_started")).toMatchObject({ user_id: `token:${bot}`, requested_by: `token:${bot}` });
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({ decision: "approved", decided_by: `token:${ops}` });

    const listed = await cli(["tokens", "list"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${bot} roles=requester owner=- expires=\\S+ last_used=\\S+$`, "m"));
    expect(listed.stdout).toMatch(new RegExp(`^${ops} roles=approver `, "m"));
    expect(listed.stdout).not.toContain(botToken);
    // Only an admin manages tokens.
    expect((await cli(["tokens", "list"], asOps)).stderr).toBe(`error: forbidden (403): token:${ops} lacks the admin role\n`);

    const revoked = await cli(["tokens", "revoke", bot]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(new RegExp(`^revoked token:${bot} at \\S+\\n$`));
    const after = await cli(["pending"], asBot);
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/^error: unauthorized \(401\)/);
    expect((await cli(["tokens", "create", bot, "--role", "viewer"])).stderr).toMatch(/^error: name_taken \(409\)/);

    // The audit log names who did each of it (admin only).
    const revokes = await cli(["audit", "--action", "token.revoke", "--principal", ME]);
    expect(revokes.code, revokes.stderr).toBe(0);
    expect(revokes.stdout).toMatch(new RegExp(`^\\S+ token\\.revoke by=${ME} target=token:${bot} ok$`, "m"));
    const creates = await cli(["audit", "--action", "token.create", "--limit", "1"]);
    expect(creates.stdout.trimEnd().split("\n")).toHaveLength(1);
    expect(creates.stdout).toContain(`target=token:${ops} ok {"roles":["approver"]`);
    const cursor = /audit --cursor (\S+) /.exec(creates.stderr)?.[1];
    expect(cursor, creates.stderr).toBeDefined();
    const older = await cli(["audit", "--action", "token.create", "--limit", "1", "--cursor", cursor!]);
    expect(older.stdout).toContain(`target=token:${bot} ok`);
    // run.trigger reaches D1 through the run object's pending marks: polled for.
    let triggered: any;
    await expect
      .poll(
        async () => {
          const found = await cli(["audit", "--principal", `token:${bot}`, "--action", "run.trigger", "--json"]);
          triggered = JSON.parse(found.stdout);
          return triggered.entries.length;
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBe(1);
    expect(triggered.entries[0]).toMatchObject({ principal: `token:${bot}`, action: "run.trigger", target: runId, result: "ok" });
    expect(await cli(["audit", "--principal", "token:nobody"])).toEqual({ code: 0, stdout: "no audit entries\n", stderr: "" });
    expect((await cli(["audit"], asOps)).stderr).toBe(`error: forbidden (403): token:${ops} lacks the admin role\n`);
    expect((await cli(["audit", "--action", "run.explode"])).code).toBe(2);
  });
});

describe("the command the CLI's hints name", () => {
  it("is what npm run cli says, else approved-exec when it is on PATH, else node and the script", async () => {
    const bin = join(scratch, "bin");
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, "approved-exec"), "");
    expect(commandName({ APPROVED_EXEC_COMMAND: "npm run cli --", PATH: bin }, "/x/main.js")).toBe("npm run cli --");
    expect(commandName({ PATH: `/nowhere:${bin}` }, "/x/main.js")).toBe("approved-exec");
    expect(commandName({ PATH: "/nowhere" }, "/x/main.js")).toBe("node /x/main.js");
  });
});

describe("approved-exec exit codes", () => {
  it("exits 2 on bad usage, before sending anything", async () => {
    const noToken = cliEnv({ ENGINE_TOKEN: undefined });
    // An address nothing listens on: a command that sent a request would exit 1 (unreachable), not 2.
    const nowhere = cliEnv({ ENGINE_URL: "http://127.0.0.1:9" });
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [[], nowhere, /Usage: approved-exec/],
      [["frobnicate"], nowhere, /unknown command 'frobnicate'/],
      [["approve", "run_x"], nowhere, /missing required argument 'approval_id'/],
      // Who decides is the token's principal (contract section 18): there is no --as to claim another name.
      [["approve", "run_x", "approval_x", "--as", "slack:UAPPROVER1"], nowhere, /unknown option '--as'/],
      [["reconcile", "mut_x", "--outcome", "maybe", "--evidence", "e"], nowhere, /Allowed choices are completed, not_executed/],
      [["reconcile", "mut_x", "--outcome", "completed"], nowhere, /required option '--evidence <text>' not specified/],
      [["trigger", "hi", "--max-tool-calls", "lots"], nowhere, /expected a whole number/],
      [["trigger", "hi", "--script", join(PROJECT_ROOT, "no-such-script.json")], nowhere, /--script .*cannot read it/],
      [["pending"], noToken, /set ENGINE_TOKEN \(or API_TOKEN\)/],
      [["pending"], cliEnv({ ENGINE_URL: "ftp://example" }), /ENGINE_URL must be an http\(s\) URL/],
    ];
    for (const [args, env, message] of cases) {
      const result = await cli(args, env);
      expect([args, result.code]).toEqual([args, 2]);
      expect(result.stderr).toMatch(message);
    }
  });

  it("names the environment in --help and exits 0", async () => {
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("ENGINE_URL    the engine's address (default http://127.0.0.1:8787)");
    expect(help.stdout).toContain("ENGINE_TOKEN  the engine's API_TOKEN or a named token (API_TOKEN is read when ENGINE_TOKEN is unset);");
  });

  it("exits 1 with the error code printed when the service refuses or cannot be reached", async () => {
    const unknownRun = await cli(["approve", "run_does_not_exist", "approval_x"]);
    expect(unknownRun.code).toBe(1);
    expect(unknownRun.stderr).toMatch(/^error: not_found \(404\): /);

    const wrongToken = await cli(["pending"], cliEnv({ ENGINE_TOKEN: "not-the-token" }));
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toMatch(/^error: unauthorized \(401\)/);

    // API_TOKEN is read when ENGINE_TOKEN is unset.
    const viaApiToken = await cli(["pending", "--json"], cliEnv({ ENGINE_TOKEN: undefined, API_TOKEN: token }));
    expect(viaApiToken.code).toBe(0);
    expect(JSON.parse(viaApiToken.stdout)).toEqual({ approvals: expect.any(Array), inputs: expect.any(Array) });

    const unreachable = await cli(["pending"], cliEnv({ ENGINE_URL: "http://127.0.0.1:9" }));
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: cannot reach the engine at http:\/\/127\.0\.0\.1:9 \(/);
  });
});

describe("approved-exec halt, halts and release (contract section 23)", () => {
  it("engages a halt that refuses an approve, lists it, and releases it; a bad scope is refused", async () => {
    const bad = await cli(["halt", "server:nowhere", "--reason", "typo"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: invalid_scope \(400\)/);

    const script = await scriptFile([{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "halted-cli" } }] }]);
    const started = await cli(["trigger", "make it", "--json", "--channel", channel("halt"), "--script", script]);
    const runId: string = JSON.parse(started.stdout).run_id;
    const requested = await waitForApproval(runId);

    const engaged = await cli(["halt", "server:demo", "--reason", "dashboards look wrong", "--json"]);
    expect(engaged.code, engaged.stderr).toBe(0);
    const halt = JSON.parse(engaged.stdout);
    expect(halt).toMatchObject({ scope: "server:demo", reason: "dashboards look wrong", engaged_by: ME, status: "active" });
    try {
      const listed = await cli(["halts", "--status", "active"]);
      expect(listed.stdout).toMatch(
        new RegExp(`^${halt.halt_id} active scope=server:demo by=${ME} at=\\S+ releases=0/1 reason="dashboards look wrong"$`, "m"),
      );
      const refused = await cli(["approve", runId, requested]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^error: halted \(409\)/);
    } finally {
      const released = await cli(["release", halt.halt_id]);
      expect(released.code, released.stderr).toBe(0);
      expect(released.stdout).toMatch(new RegExp(`^${halt.halt_id} released by=${ME} at=\\S+\\n$`));
    }
    expect((await cli(["halts", "--status", "active"])).stdout).toBe("no active halts\n");
    expect((await cli(["approve", runId, requested])).code).toBe(0);
  });
});

describe("approved-exec policy (contract section 24)", () => {
  it("gets the active version, puts a tightening one from a file, lists the versions, and approve of an active one exits 1", async () => {
    const got = await cli(["policy", "get", "--json"]);
    expect(got.code, got.stderr).toBe(0);
    const active = JSON.parse(got.stdout);
    expect(active.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Adding a limit tightens (on a tool no other test calls): active at once.
    const tools = { ...active.policy.tools, mcp__demo__schedule_report: { limits: [{ max: 10_000, per: "1m", by: "all" }] } };
    const file = join(scratch, "policy-tighter.json");
    await writeFile(file, JSON.stringify({ ...active.policy, tools }));
    const put = await cli(["policy", "put", file, "--comment", "a limit on reports"]);
    expect(put.code, put.stderr).toBe(0);
    const next = active.version + 1;
    expect(put.stdout).toMatch(
      new RegExp(`^v${next} active sha256:[0-9a-f]{64} by=${ME} at=\\S+ base=${active.version} comment="a limit on reports"\\n$`),
    );
    const versions = await cli(["policy", "versions"]);
    expect(versions.stdout.split("\n")[0]).toMatch(new RegExp(`^v${next} active `));
    expect(versions.stdout).toMatch(/^v0 superseded sha256:[0-9a-f]{64} by=settings /m);
    const again = await cli(["policy", "approve", String(next)]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error: not_proposed \(409\)/);
    const stale = await cli(["policy", "put", file, "--base", String(active.version)]);
    expect(stale.code).toBe(0); // identical to the active one: 200 with it
    expect(stale.stdout).toMatch(new RegExp(`^v${next} active `));
  });
});
