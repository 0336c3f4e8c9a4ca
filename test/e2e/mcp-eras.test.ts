// The two MCP eras end to end (contract section 21), over loopback against
// real local servers: a stateless server of the 2026-07-28 revision only (the
// v2 server package, refusing initialize; test/support/stateless-mcp-server.ts)
// and the demo server, which speaks only the earlier revisions. One Worker
// names both. The era is learned with server/discover before any
// checkpoint; the stateless server gets the revision's headers and `_meta`
// on every request, never initialize or a session, and exactly one
// tools/call per approved mutation; the demo server gets initialize after
// the probe. GET /api/mcp/servers (and the CLI's `mcp list`) show each as
// last seen, without header values. A third server is one the engine did not
// write: the MCP maintainers' server-everything (an older-revision server
// with sessions), called for a read tool. Questions mid-call: the stateless
// server's tools that answer input_required are asked of people through the
// engine and answered (accept, decline, expiry as cancel) in the follow-up
// tools/call, which carries the requestState byte for byte; a question that
// cannot be asked, or a fourth round, ends the call input_unsupported.
// Crashes: a SIGKILL of the Worker mid-call, or while a follow-up is in
// flight, leaves the call outcome_unknown and never sent again; a SIGKILL while
// a person decides a question changes nothing (the round is kept in the run's
// storage: the answer after the restart, or the expiry, is sent once, against
// the stateless server and the demo server's schedule_report alike); answers
// to MCP questions, refused or counted, are in the audit log.
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { ApiError, EngineClient, type EngineEvent, type InputAnswer, type ScriptTurn } from "../../src/client";
import { demoCalls, demoReset } from "../support/e2e-client";
import { startEverythingMcpProcess, type EverythingMcpProcess } from "../support/everything-mcp-process";
import { startDemoMcpProcess, type DemoMcpProcess } from "../support/demo-mcp-process";
import {
  CONFIRM_SCHEMA,
  confirmState,
  STATELESS_API_KEY_HEADER,
  startStatelessMcpServer,
  type StatelessMcpServer,
} from "../support/stateless-mcp-server";
import { runCli } from "../support/cli-process";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const API_KEY = "stateless-api-key-s3cr3t";
const CREATE_NOTE = "mcp__stateless__create_note";
const LIST_NOTES = "mcp__stateless__list_notes";
const CREATE_DASHBOARD = "mcp__demo__create_dashboard";
const MODERN = "2026-07-28";
const CONFIRM_NOTE = "mcp__stateless__confirm_note";
const TWO_STEP_NOTE = "mcp__stateless__two_step_note";
const ASK_FOREVER = "mcp__stateless__ask_forever";
const ASK_URL = "mcp__stateless__ask_url";
/** The demo server as `npm start` runs it (2026-07-28), whose schedule_report asks mid-call (the README's example). */
const MODERN_DEMO_DASHBOARD = "mcp__report__create_dashboard";
const MODERN_DEMO_REPORT = "mcp__report__schedule_report";
/**
 * Short, so the expiry cases wait seconds (the run's alarm expires the question, as it does approvals),
 * yet longer than a SIGKILLed wrangler dev takes to restart on a busy two-core machine, so a question
 * answered after a restart is still open.
 */
const APPROVAL_TIMEOUT_MS = 10_000;

let stateless: StatelessMcpServer;
let everything: EverythingMcpProcess;
let modernDemoProcess: DemoMcpProcess;
let server: WorkerServer;
let engine: EngineClient;

beforeAll(async () => {
  [stateless, everything, modernDemoProcess] = await Promise.all([
    startStatelessMcpServer(API_KEY),
    startEverythingMcpProcess(),
    startDemoMcpProcess({ DEMO_MCP_ERA: MODERN }),
  ]);
  server = await startWorkerServer({
    ...e2eVars(`${demo}/mcp`),
    APPROVAL_TIMEOUT_MS: String(APPROVAL_TIMEOUT_MS),
    MCP_SERVERS: JSON.stringify({
      stateless: { url: stateless.url, headers: { [STATELESS_API_KEY_HEADER]: API_KEY }, trust_annotations: true },
      demo: { url: `${demo}/mcp` },
      // Its readOnlyHint tools run without approval only because it is marked trusted.
      everything: { url: everything.url, trust_annotations: true },
      report: { url: modernDemoProcess.url },
    }),
    MUTATION_BUDGET: JSON.stringify({
      [CREATE_NOTE]: 3,
      [CREATE_DASHBOARD]: 1,
      [CONFIRM_NOTE]: 10,
      [TWO_STEP_NOTE]: 1,
      [ASK_FOREVER]: 1,
      [ASK_URL]: 1,
      [MODERN_DEMO_DASHBOARD]: 1,
      [MODERN_DEMO_REPORT]: 1,
    }),
    // Only the root token may approve confirm_note and answer its questions (contract sections 19 and 21).
    TOOL_POLICY: JSON.stringify({ [CONFIRM_NOTE]: { approvers: ["token:root"] } }),
  });
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await stateless?.stop();
  await everything?.stop();
  await modernDemoProcess?.stop();
});

beforeEach(async () => {
  await demoReset();
});

type QuestionEvent = Extract<EngineEvent, { type: "human_input_requested" }>;

/**
 * Runs `script` to its end, approving every approval it asks for, and handing each MCP question
 * to `onQuestion` (which answers it, or not).
 */
async function runApproving(
  script: ScriptTurn[],
  onQuestion: (runId: string, question: QuestionEvent) => Promise<void> = async () => {},
): Promise<EngineEvent[]> {
  const { run_id: runId } = await engine.trigger({ message: "m", channel_id: `C-eras-${Date.now()}-${Math.random()}`, script });
  const events: EngineEvent[] = [];
  for await (const event of engine.events(runId)) {
    events.push(event);
    if (event.type === "approval_requested") await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
    if (event.type === "human_input_requested") await onQuestion(runId, event);
  }
  return events;
}

/** The 2026-07-28 demo server's control API: its state and the calls it took. */
const modernDemo = {
  reset: async () => expect((await fetch(`${modernDemoProcess.baseUrl}/control/reset`, { method: "POST" })).status).toBe(200),
  state: async () => (await (await fetch(`${modernDemoProcess.baseUrl}/control/state`)).json()) as { reports?: unknown[] },
  calls: async () => (await (await fetch(`${modernDemoProcess.baseUrl}/control/calls`)).json()) as { by_tool?: Record<string, number> },
};

/** Starts a run of one `tool` call, approves it and returns once its server's first question waits for a person. */
async function waitingQuestion(
  tool: string,
  toolCallId: string,
  args: Record<string, unknown>,
): Promise<{ runId: string; question: QuestionEvent }> {
  const { run_id: runId } = await engine.trigger({
    message: "m",
    channel_id: `C-crash-ask-${Date.now()}-${Math.random()}`,
    script: [{ tool_calls: [{ tool_name: tool, tool_call_id: toolCallId, arguments: args }] }, { text: "done" }],
  });
  for await (const event of engine.events(runId)) {
    if (event.type === "approval_requested") await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
    if (event.type === "human_input_requested") return { runId, question: event };
  }
  throw new Error(`run ${runId} ended without asking`);
}

/** SIGKILLs wrangler and workerd and serves the same state again (every object unloaded, nothing in memory kept). */
async function crash(): Promise<void> {
  server = await server.crashAndRestart();
  engine = new EngineClient({ baseUrl: server.url, token: server.token });
}

/** The run's whole log from the start, once it has ended. */
async function eventsToEnd(runId: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of engine.events(runId)) events.push(event);
  return events;
}

/** Answers every question with `answer`. */
const answering = (answer: InputAnswer) => async (runId: string, q: QuestionEvent) => {
  await engine.answerInput(runId, q.input_id ?? "", answer);
};

/** The call's events in order, heartbeats left out: the types only. */
const callTypes = (events: EngineEvent[], toolCallId: string) =>
  events.filter((e) => "tool_call_id" in e && e.tool_call_id === toolCallId).map((e) => e.type);

/** The stateless server's tools/call requests for one tool, as it received them. */
const callsTo = (tool: string) => stateless.seen().filter((r) => r.method === "tools/call" && r.tool === tool);

async function rowOf(events: EngineEvent[], toolCallId: string) {
  const mutationId = executionOf(events, toolCallId)?.mutation_id;
  if (mutationId === undefined) throw new Error(`no mutation for ${toolCallId}`);
  return engine.mutation(mutationId);
}

const executionOf = (events: EngineEvent[], toolCallId: string) =>
  events.find((e): e is Extract<EngineEvent, { type: "tool_execution" }> => e.type === "tool_execution" && e.tool_call_id === toolCallId);

/** `approved-exec <args>` as a process against the Worker, to its exit. */
const cli = (args: string[]) => runCli(server, args);

describe("MCP eras: a stateless 2026-07-28 server and an older one", () => {
  it("the stateless server refuses initialize: it is not a server that would also take the older handshake", async () => {
    const refused = await fetch(stateless.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", [STATELESS_API_KEY_HEADER]: API_KEY },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "probe", version: "0" } },
      }),
    });
    expect(refused.ok).toBe(false);
  });

  it("lists every configured server before any contact with nulls, and never a header value", async () => {
    const response = await fetch(`${server.url}/api/mcp/servers`, { headers: { authorization: `Bearer ${server.token}` } });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain(API_KEY);
    expect(JSON.parse(text)).toEqual({
      servers: [
        {
          server: "stateless",
          url: stateless.url,
          protocol_version: null,
          auth: "headers",
          trust_annotations: true,
          connected: null,
          tools: null,
          last_contact_at: null,
        },
        {
          server: "demo",
          url: `${demo}/mcp`,
          protocol_version: null,
          auth: "none",
          trust_annotations: false,
          connected: null,
          tools: null,
          last_contact_at: null,
        },
        {
          server: "everything",
          url: everything.url,
          protocol_version: null,
          auth: "none",
          trust_annotations: true,
          connected: null,
          tools: null,
          last_contact_at: null,
        },
        {
          server: "report",
          url: modernDemoProcess.url,
          protocol_version: null,
          auth: "none",
          trust_annotations: false,
          connected: null,
          tools: null,
          last_contact_at: null,
        },
      ],
    });
  });

  it("speaks 2026-07-28 to the stateless server (one tools/call, no initialize) and initialize to the older one", async () => {
    stateless.reset();
    const events = await runApproving([
      {
        tool_calls: [
          { tool_name: CREATE_NOTE, tool_call_id: "note", arguments: { text: "hello" } },
          { tool_name: LIST_NOTES, tool_call_id: "notes", arguments: {} },
          { tool_name: CREATE_DASHBOARD, tool_call_id: "dash", arguments: { title: "eras" } },
        ],
      },
    ]);
    expect(executionOf(events, "note")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(executionOf(events, "notes")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(executionOf(events, "dash")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(stateless.notes()).toEqual(["hello"]);
    expect(await demoCalls()).toMatchObject({ total: 1, by_tool: { create_dashboard: 1 } });

    const seen = stateless.seen();
    // Every request carried the key and reached the server; the era came from server/discover, not a tools/call.
    expect(seen.every((r) => r.status === 200)).toBe(true);
    expect(seen.map((r) => r.method)).not.toContain("initialize");
    expect(seen.filter((r) => r.method === "server/discover").length).toBeLessThanOrEqual(1);
    expect(seen.filter((r) => r.headers["mcp-session-id"] !== undefined)).toEqual([]);
    const calls = seen.filter((r) => r.method === "tools/call");
    expect(calls.map((r) => r.tool)).toEqual(["create_note", "list_notes"]);
    for (const request of seen) {
      expect(request.headers).toMatchObject({ "mcp-protocol-version": MODERN, "mcp-method": request.method });
      expect(request.meta).toMatchObject({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": { name: "approved-execution-engine" },
      });
      // Form-mode elicitation and nothing else: no URL mode, sampling or roots (contract section 21).
      expect(request.meta?.["io.modelcontextprotocol/clientCapabilities"]).toEqual({ elicitation: { form: {} } });
    }
    expect(calls.map((r) => r.headers["mcp-name"])).toEqual(["create_note", "list_notes"]);
  });

  it("learns the era once per server: a second run sends no probe and exactly one tools/call", async () => {
    stateless.reset();
    const events = await runApproving([{ tool_calls: [{ tool_name: CREATE_NOTE, tool_call_id: "again", arguments: { text: "again" } }] }]);
    expect(executionOf(events, "again")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    const methods = stateless.seen().map((r) => r.method);
    expect(methods).not.toContain("server/discover");
    expect(methods.filter((m) => m === "tools/call")).toEqual(["tools/call"]);
  });

  it("runs server-everything's read tool get-sum through the engine: no approval (readOnlyHint on a trusted server), the server's answer as the result", async () => {
    const events = await runApproving([
      { tool_calls: [{ tool_name: "mcp__everything__get-sum", tool_call_id: "sum", arguments: { a: 2, b: 40 } }] },
    ]);
    expect(events.find((e) => e.type === "tool_started" && e.tool_call_id === "sum")).toMatchObject({ approval_required: false });
    expect(events.filter((e) => e.type === "approval_requested")).toEqual([]);
    expect(executionOf(events, "sum")).toMatchObject({
      execution_status: "executed",
      result: { is_error: false, summary: expect.stringContaining("42") },
    });
    // It speaks an earlier revision: the engine fell back to initialize after its server/discover probe.
    const listed = Object.fromEntries((await engine.listMcpServers()).map((s) => [s.server, s]));
    expect(listed.everything).toMatchObject({ protocol_version: "2025-11-25", connected: true });
  });

  it("shows each server as last seen: the revision it speaks, its tools, its last contact", async () => {
    const listed = await engine.listMcpServers();
    const byName = Object.fromEntries(listed.map((s) => [s.server, s]));
    expect(byName.stateless).toMatchObject({ protocol_version: MODERN, connected: true, tools: 6, auth: "headers" });
    expect(byName.demo).toMatchObject({ protocol_version: "2025-11-25", connected: true, tools: 8, auth: "none" });
    // Every server contacted so far (the crash cases' "report" server is contacted later in the file).
    for (const s of listed.filter((l) => l.server !== "report")) expect(Date.parse(s.last_contact_at ?? "")).not.toBeNaN();

    const printed = await cli(["mcp", "list"]);
    expect(printed).toMatchObject({ code: 0, stderr: "" });
    const lines = printed.stdout.trim().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^stateless ${stateless.url} protocol=${MODERN} auth=headers tools=6 connected=yes last_contact=\\S+ trust_annotations$`,
        ),
      ),
      expect.stringMatching(new RegExp(`^demo ${demo}/mcp protocol=2025-11-25 auth=none tools=8 connected=yes last_contact=\\S+$`)),
      expect.stringMatching(
        new RegExp(
          `^everything ${everything.url} protocol=2025-11-25 auth=none tools=\\d+ connected=yes last_contact=\\S+ trust_annotations$`,
        ),
      ),
      // The 2026-07-28 demo server of the crash cases below, listed as last seen (its protocol then is whatever a contact found).
      expect.stringMatching(new RegExp(`^report ${modernDemoProcess.url} `)),
    ]);
    expect(printed.stdout).not.toContain(API_KEY);
  });
});

describe("MCP questions mid-call (input_required, contract section 21)", () => {
  it("accept: the question is shown, the follow-up carries the answer and requestState byte for byte, and the answer settles the call", async () => {
    stateless.reset();
    const seenQuestions: QuestionEvent[] = [];
    const events = await runApproving(
      [{ tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: "confirm", arguments: { text: "hi" } }] }],
      async (runId, q) => {
        seenQuestions.push(q);
        // While it waits, the run summary shows the question, and the call is dispatched: its row says so.
        const summary = await engine.summary(runId);
        expect(summary.pending_inputs).toEqual([
          {
            tool_call_id: "confirm",
            question: 'Create the note "hi"?',
            expires_at: q.expires_at,
            input_id: q.input_id,
            requested_schema: CONFIRM_SCHEMA,
          },
        ]);
        const rows = await engine.runMutations(runId);
        expect(rows.mutations).toMatchObject([{ tool_call_id: "confirm", state: "unresolved", dispatched: true }]);
        expect(await engine.answerInput(runId, q.input_id ?? "", { action: "accept", content: { confirm: true, label: "x" } })).toEqual({
          input_id: "confirm:1:confirm",
          tool_call_id: "confirm",
          action: "accept",
          status: "answered",
        });
        // The same answer again: the same 200, no second event; a different one: 409.
        expect(
          await engine.answerInput(runId, q.input_id ?? "", { action: "accept", content: { confirm: true, label: "x" } }),
        ).toMatchObject({ status: "answered" });
        await expect(engine.answerInput(runId, q.input_id ?? "", { action: "decline" })).rejects.toMatchObject({
          status: 409,
          code: "already_resolved",
        });
      },
    );
    expect(seenQuestions).toEqual([
      expect.objectContaining({
        input_id: "confirm:1:confirm",
        tool_call_id: "confirm",
        question: 'Create the note "hi"?',
        requested_schema: CONFIRM_SCHEMA,
      }),
    ]);
    const [question] = seenQuestions;
    expect(Date.parse(question?.expires_at ?? "") - Date.parse(question?.at ?? "")).toBe(APPROVAL_TIMEOUT_MS);
    expect(callTypes(events, "confirm")).toEqual([
      "tool_started",
      "approval_requested",
      "approval_resolved",
      "tool_execution_started",
      "human_input_requested",
      "human_input_received",
      "tool_execution",
      "tool_completed",
    ]);
    expect(events.find((e) => e.type === "human_input_received")).toMatchObject({
      input_id: "confirm:1:confirm",
      answered_by: "token:root",
      action: "accept",
    });
    expect(executionOf(events, "confirm")).toMatchObject({
      execution_status: "executed",
      result: { is_error: false, summary: "created note 1: hi [x]" },
    });
    expect(stateless.notes()).toEqual(["hi"]);
    // Exactly two tools/call requests: the first, and the follow-up with the same arguments, the answer and the state.
    const calls = callsTo("confirm_note");
    expect(calls.map((c) => [c.inputResponses, c.requestState])).toEqual([
      [undefined, undefined],
      [{ confirm: { action: "accept", content: { confirm: true, label: "x" } } }, confirmState("hi")],
    ]);
    expect(await rowOf(events, "confirm")).toMatchObject({ state: "completed", dispatched: true, sends: 2 });
  });

  it("decline goes back to the server, which settles the call; two rounds ask one after the other", async () => {
    stateless.reset();
    const events = await runApproving(
      [
        {
          tool_calls: [
            { tool_name: CONFIRM_NOTE, tool_call_id: "no", arguments: { text: "no" } },
            { tool_name: TWO_STEP_NOTE, tool_call_id: "two", arguments: { text: "two" } },
          ],
        },
      ],
      async (runId, q) => {
        const answer: InputAnswer =
          q.tool_call_id === "no" ? { action: "decline" } : { action: "accept", content: { value: `v-${q.input_id}` } };
        await engine.answerInput(runId, q.input_id ?? "", answer);
      },
    );
    expect(executionOf(events, "no")).toMatchObject({ execution_status: "executed", result: { summary: "not created (decline)" } });
    expect(await rowOf(events, "no")).toMatchObject({ state: "completed", sends: 2 });
    const asked = events.filter((e): e is QuestionEvent => e.type === "human_input_requested" && e.tool_call_id === "two");
    expect(asked.map((q) => [q.input_id, q.question])).toEqual([
      ["two:1:title", "Which title?"],
      ["two:2:tag", "Which tag for v-two:1:title?"],
    ]);
    expect(executionOf(events, "two")).toMatchObject({ result: { summary: "created two titled v-two:1:title tagged v-two:2:tag" } });
    expect(callsTo("two_step_note").map((c) => c.requestState)).toEqual([undefined, "step-1", "step-2:v-two:1:title"]);
    expect(await rowOf(events, "two")).toMatchObject({ state: "completed", sends: 3 });
    expect(stateless.notes()).toEqual(["two:v-two:1:title:v-two:2:tag"]);
  });

  it("a question nobody answers expires by the run's alarm and goes back as cancel; a late answer gets 410", async () => {
    stateless.reset();
    let late: { runId: string; inputId: string } | undefined;
    const events = await runApproving(
      [{ tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: "late", arguments: { text: "late" } }] }],
      async (runId, q) => {
        late = { runId, inputId: q.input_id ?? "" };
      },
    );
    expect(callTypes(events, "late")).not.toContain("human_input_received");
    expect(executionOf(events, "late")).toMatchObject({ execution_status: "executed", result: { summary: "not created (cancel)" } });
    expect(callsTo("confirm_note").map((c) => c.inputResponses)).toEqual([undefined, { confirm: { action: "cancel" } }]);
    expect(await rowOf(events, "late")).toMatchObject({ state: "completed", sends: 2 });
    await expect(
      engine.answerInput(late?.runId ?? "", late?.inputId ?? "", { action: "accept", content: { confirm: true } }),
    ).rejects.toMatchObject({
      status: 410,
      code: "expired",
    });
    expect(stateless.notes()).toEqual([]);
  });

  it("refuses an answerer the call's policy does not allow (403, nothing changes) and content that does not fit the form (400 invalid_answer)", async () => {
    stateless.reset();
    const other = await engine.createToken({ name: `q21-approver-${Date.now()}`, roles: ["approver"] });
    const otherEngine = new EngineClient({ baseUrl: server.url, token: other.token });
    const events = await runApproving(
      [{ tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: "guarded", arguments: { text: "g" } }] }],
      async (runId, q) => {
        const id = q.input_id ?? "";
        await expect(otherEngine.answerInput(runId, id, { action: "accept", content: { confirm: true } })).rejects.toMatchObject({
          status: 403,
          code: "not_an_approver",
        });
        const invalid = await engine.answerInput(runId, id, { action: "accept", content: { confirm: "yes" } }).catch((e: unknown) => e);
        expect(invalid).toBeInstanceOf(ApiError);
        expect(invalid).toMatchObject({ status: 400, code: "invalid_answer", details: [expect.any(String)] });
        await expect(
          engine.answerInput(runId, id, { action: "accept", content: { confirm: true, label: "far too long for the twenty" } }),
        ).rejects.toMatchObject({
          status: 400,
          code: "invalid_answer",
        });
        // A multi-select's list: a value it does not offer, more than its maxItems, a value twice.
        for (const tags of [["someday"], ["urgent", "later"], ["later", "later"]]) {
          await expect(engine.answerInput(runId, id, { action: "accept", content: { confirm: true, tags } })).rejects.toMatchObject({
            status: 400,
            code: "invalid_answer",
            details: [expect.stringContaining("tags")],
          });
        }
        // Nothing changed: the question still waits, and the server got nothing more.
        expect((await engine.summary(runId)).pending_inputs.map((p) => p.input_id)).toEqual([id]);
        expect(callsTo("confirm_note")).toHaveLength(1);
        await engine.answerInput(runId, id, { action: "accept", content: { confirm: true, tags: ["later"] } });
      },
    );
    expect(executionOf(events, "guarded")).toMatchObject({ result: { summary: "created note 1: g" } });
    expect(events.filter((e) => e.type === "human_input_received")).toHaveLength(1);
    expect(callsTo("confirm_note").at(-1)?.inputResponses).toEqual({
      confirm: { action: "accept", content: { confirm: true, tags: ["later"] } },
    });
  });

  it("more rounds than MCP_MAX_INPUT_ROUNDS, or a URL-mode request, end the call input_unsupported with nothing more sent", async () => {
    stateless.reset();
    const events = await runApproving(
      [
        {
          tool_calls: [
            { tool_name: ASK_FOREVER, tool_call_id: "forever", arguments: { text: "f" } },
            { tool_name: ASK_URL, tool_call_id: "url", arguments: { text: "u" } },
          ],
        },
      ],
      answering({ action: "cancel" }),
    );
    expect(events.filter((e) => e.type === "human_input_requested")).toEqual([]);
    // Three rounds of requestState only are sent again at once; the fourth input_required ends it.
    expect(callsTo("ask_forever").map((c) => c.requestState)).toEqual([undefined, "1", "2", "3"]);
    expect(executionOf(events, "forever")).toMatchObject({ execution_status: "executed", error: { code: "input_unsupported" } });
    expect(await rowOf(events, "forever")).toMatchObject({
      state: "outcome_unknown",
      dispatched: true,
      sends: 4,
      error: { code: "input_unsupported" },
    });
    expect(callsTo("ask_url")).toHaveLength(1);
    expect(executionOf(events, "url")).toMatchObject({ execution_status: "executed", error: { code: "input_unsupported" } });
    expect(await rowOf(events, "url")).toMatchObject({ state: "outcome_unknown", sends: 1 });
  });

  it("the CLI shows the question (pending --run) and answers it with --accept; bad usage is refused", async () => {
    stateless.reset();
    let shown: { code: number | null; stdout: string; stderr: string } | undefined;
    let answered: { code: number | null; stdout: string; stderr: string } | undefined;
    const events = await runApproving(
      [{ tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: "cli", arguments: { text: "by cli" } }] }],
      async (runId, q) => {
        shown = await cli(["pending", "--run", runId]);
        const usage = await cli(["answer", runId, q.input_id ?? "", "text", "--decline"]);
        expect(usage.code).not.toBe(0);
        answered = await cli(["answer", runId, q.input_id ?? "", "--accept", '{"confirm":true}']);
      },
    );
    expect(shown?.stdout).toContain(`question cli:1:confirm run=${events[0]?.run_id} call=cli "Create the note \\"by cli\\"?" schema=`);
    expect(answered).toMatchObject({ code: 0, stdout: "accept cli:1:confirm\n" });
    expect(executionOf(events, "cli")).toMatchObject({ result: { summary: "created note 1: by cli" } });
  });

  it("cancelling the run while a question waits sends cancel in the follow-up; the call is not abandoned, then the run ends cancelled", async () => {
    stateless.reset();
    const events = await runApproving(
      [{ tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: "stop", arguments: { text: "stop" } }] }],
      async (runId) => {
        await engine.cancel(runId);
      },
    );
    expect(callsTo("confirm_note").map((c) => c.inputResponses)).toEqual([undefined, { confirm: { action: "cancel" } }]);
    expect(executionOf(events, "stop")).toMatchObject({ execution_status: "executed", result: { summary: "not created (cancel)" } });
    expect(events.at(-1)).toMatchObject({ type: "run_failed", error: { code: "cancelled" } });
    expect(await rowOf(events, "stop")).toMatchObject({ state: "completed", sends: 2 });
  });
});

describe("MCP 2026-07-28 headers: Mcp-Param-* from the tool's x-mcp-header declarations", () => {
  it("mirrors an annotated argument into its Mcp-Param header, base64-wrapped when it is not plain ASCII, beside Mcp-Method and Mcp-Name", async () => {
    stateless.reset();
    // Not a plain ASCII field value (non-ASCII letters, trailing space): the revision wants =?base64?…?=.
    const text = "grüße aus Zürich ";
    const events = await runApproving([{ tool_calls: [{ tool_name: CREATE_NOTE, tool_call_id: "param", arguments: { text } }] }]);
    // The server (the v2 SDK) refuses a call whose Mcp-Param-Text is absent or disagrees with the body.
    expect(executionOf(events, "param")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(stateless.notes()).toEqual([text]);
    const calls = stateless.seen().filter((r) => r.method === "tools/call");
    expect(calls).toHaveLength(1);
    expect(calls[0]?.headers).toEqual({
      "mcp-protocol-version": MODERN,
      "mcp-method": "tools/call",
      "mcp-name": "create_note",
      "mcp-param-text": `=?base64?${Buffer.from(text, "utf8").toString("base64")}?=`,
    });
    // A plain value rides as it is; a tool without declarations (list_notes) gets no Mcp-Param header.
    stateless.reset();
    await runApproving([
      {
        tool_calls: [
          { tool_name: CREATE_NOTE, tool_call_id: "plain", arguments: { text: "plain note" } },
          { tool_name: LIST_NOTES, tool_call_id: "list", arguments: {} },
        ],
      },
    ]);
    const plain = stateless.seen().filter((r) => r.method === "tools/call");
    expect(plain.map((r) => [r.tool, r.headers["mcp-param-text"]])).toEqual([
      ["create_note", "plain note"],
      ["list_notes", undefined],
    ]);
  });
  it("a Worker that has not listed the tool since it started lists it before the checkpoint, so the call still carries its Mcp-Param header", async () => {
    const text = `cold ${Date.now()}`;
    const { run_id: runId } = await engine.trigger({
      message: "m",
      channel_id: `C-cold-${Date.now()}`,
      script: [{ tool_calls: [{ tool_name: CREATE_NOTE, tool_call_id: "cold", arguments: { text } }] }, { text: "done" }],
    });
    let approvalId = "";
    for await (const event of engine.events(runId)) {
      if (event.type !== "approval_requested") continue;
      approvalId = event.approval_id;
      break;
    }
    // A new isolate: the tool listing the run was started with is gone; the approval waits in the run's storage.
    server = await server.crashAndRestart();
    engine = new EngineClient({ baseUrl: server.url, token: server.token });
    stateless.reset();
    await engine.decideApproval(runId, approvalId, { decision: "approve" });
    const events: EngineEvent[] = [];
    for await (const event of engine.events(runId)) events.push(event);
    // The server (the v2 SDK) refuses a call without its Mcp-Param-Text: executed and not an error means it was there.
    expect(executionOf(events, "cold")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(callsTo("create_note").map((r) => r.headers["mcp-param-text"])).toEqual([text]);
    const methods = stateless.seen().map((r) => r.method);
    expect(methods.indexOf("tools/list")).toBeGreaterThanOrEqual(0);
    expect(methods.indexOf("tools/list")).toBeLessThan(methods.indexOf("tools/call"));
    expect(stateless.notes()).toContain(text);
  });
});

describe("crash invariants on a stateless server: SIGKILL mid-call", () => {
  it("the Worker killed while the tools/call is in flight: after the restart the call is executed(transport_error), its row outcome_unknown, and it was sent once", async () => {
    stateless.reset();
    const HOLD_MS = 1_500;
    stateless.holdNextCreate(HOLD_MS);
    const text = `crash ${Date.now()}`;
    const { run_id: runId } = await engine.trigger({
      message: "m",
      channel_id: `C-crash-${Date.now()}`,
      script: [{ tool_calls: [{ tool_name: CREATE_NOTE, tool_call_id: "crash", arguments: { text } }] }, { text: "done" }],
    });
    for await (const event of engine.events(runId)) {
      if (event.type !== "approval_requested") continue;
      await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
      break;
    }
    // The server has the call (counted on arrival) and is holding it: kill wrangler and workerd now.
    await expect.poll(() => stateless.arrivals(), { timeout: 10_000, interval: 20 }).toEqual([text]);
    const arrivedAt = Date.now();
    server = await server.crashAndRestart();
    engine = new EngineClient({ baseUrl: server.url, token: server.token });

    const events: EngineEvent[] = [];
    for await (const event of engine.events(runId)) events.push(event);
    expect(executionOf(events, "crash")).toMatchObject({
      execution_status: "executed",
      error: { code: "transport_error", message: expect.stringContaining("restarted") },
    });
    expect(events.at(-1)?.type).toBe("run_completed");
    const mutations = (await (await server.api(`/api/runs/${runId}/mutations`)).json()) as {
      mutations: { state: string; dispatched: boolean }[];
    };
    expect(mutations.mutations).toMatchObject([{ state: "outcome_unknown", dispatched: true }]);
    // Well past the server's hold: still exactly one arrival and one tools/call request, never a second send.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, arrivedAt + HOLD_MS + 500 - Date.now())));
    expect(stateless.arrivals()).toEqual([text]);
    expect(stateless.seen().filter((r) => r.method === "tools/call")).toHaveLength(1);
  });
});

describe("MCP questions in GET /api/inputs (contract sections 15 and 21)", () => {
  it("lists each question while it waits, with its input_id and form, then answered, expired (its round's time ran out) or cancelled (the run was)", async () => {
    stateless.reset();
    const listed = async (runId: string) =>
      (await engine.listInputs({ limit: 200 })).inputs.filter((q) => q.run_id === runId).map((q) => [q.input_id, q.status]);
    /** Waits until the listing has the question pending with its form, then does `then`. */
    const whenListed = (then: (runId: string, inputId: string) => Promise<unknown>) => async (runId: string, q: QuestionEvent) => {
      await expect
        .poll(
          async () =>
            (await engine.listInputs({ status: "pending", limit: 200 })).inputs.find(
              (i) => i.input_id === q.input_id && i.run_id === runId,
            ),
          {
            timeout: 10_000,
          },
        )
        .toMatchObject({ tool_call_id: q.tool_call_id, question: q.question, requested_schema: q.requested_schema, status: "pending" });
      await then(runId, q.input_id ?? "");
    };
    const confirming = (id: string): ScriptTurn[] => [
      { tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: id, arguments: { text: id } }] },
    ];
    const [declined, expired, cancelled] = await Promise.all([
      runApproving(
        confirming("l-decline"),
        whenListed((runId, inputId) => engine.answerInput(runId, inputId, { action: "decline" })),
      ),
      runApproving(
        confirming("l-expire"),
        whenListed(async () => {}),
      ),
      runApproving(
        confirming("l-cancel"),
        whenListed((runId) => engine.cancel(runId)),
      ),
    ]);
    const runOf = (events: EngineEvent[]) => events[0]?.run_id ?? "";
    await expect.poll(() => listed(runOf(declined)), { timeout: 10_000 }).toEqual([["l-decline:1:confirm", "answered"]]);
    await expect.poll(() => listed(runOf(expired)), { timeout: APPROVAL_TIMEOUT_MS + 10_000 }).toEqual([["l-expire:1:confirm", "expired"]]);
    await expect.poll(() => listed(runOf(cancelled)), { timeout: 10_000 }).toEqual([["l-cancel:1:confirm", "cancelled"]]);
  });
});

describe("MCP questions across a crash, and who answered them in the audit log (contract sections 8, 18, 21)", () => {
  it("an ineligible principal's answer is refused and audited access.refused; the answer that settles the call is audited input.answer", async () => {
    stateless.reset();
    const name = `r21-approver-${Date.now()}`;
    const other = await engine.createToken({ name, roles: ["approver"] });
    const otherEngine = new EngineClient({ baseUrl: server.url, token: other.token });
    let inputId = "";
    const events = await runApproving(
      [{ tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: "audited", arguments: { text: "audited" } }] }],
      async (runId, q) => {
        inputId = q.input_id ?? "";
        await expect(otherEngine.answerInput(runId, inputId, { action: "accept", content: { confirm: true } })).rejects.toMatchObject({
          status: 403,
          code: "not_an_approver",
        });
        await engine.answerInput(runId, inputId, { action: "accept", content: { confirm: true } });
      },
    );
    expect(inputId).toBe("audited:1:confirm");
    expect(executionOf(events, "audited")).toMatchObject({ result: { summary: "created note 1: audited" } });
    const runId = events[0]?.run_id ?? "";
    // The refusal: the route as it was asked (the path as the client sent it), the error code, one count.
    const refusedTarget = `POST /api/runs/${encodeURIComponent(runId)}/inputs/${encodeURIComponent(inputId)}`;
    await expect
      .poll(async () => (await engine.audit({ principal: `token:${name}`, action: "access.refused" })).entries, { timeout: 10_000 })
      .toEqual([
        expect.objectContaining({
          principal: `token:${name}`,
          action: "access.refused",
          target: refusedTarget,
          result: "refused",
          count: 1,
          details: { error: "not_an_approver" },
        }),
      ]);
    // The answer that counted: the root token's, at the question's input_id, saying how it answered.
    await expect
      .poll(
        async () =>
          (await engine.audit({ principal: "token:root", action: "input.answer" })).entries.filter(
            (e) => e.target === `${runId}/inputs/${inputId}`,
          ),
        { timeout: 10_000 },
      )
      .toEqual([expect.objectContaining({ result: "ok", details: { action: "accept", tool_call_id: "audited" } })]);
    // The refused principal answered nothing.
    expect((await engine.audit({ principal: `token:${name}`, action: "input.answer" })).entries).toEqual([]);
  });

  it("the Worker killed while a person decides: the round was kept in storage, so the answer after the restart is taken and the call executes once, with exactly two tools/call", async () => {
    stateless.reset();
    const { runId, question } = await waitingQuestion(CONFIRM_NOTE, "asked", { text: "crash ask" });
    expect(question).toMatchObject({ input_id: "asked:1:confirm", tool_call_id: "asked" });
    // The server has answered input_required once; the question waits for a person: kill wrangler and workerd now.
    expect(callsTo("confirm_note")).toHaveLength(1);
    await crash();
    // The answer is the first request the restarted Worker gets: the cold object reads its round from storage and takes it.
    await engine.answerInput(runId, question.input_id ?? "", { action: "accept", content: { confirm: true } });
    const events = await eventsToEnd(runId);
    expect(callTypes(events, "asked")).toEqual([
      "tool_started",
      "approval_requested",
      "approval_resolved",
      "tool_execution_started",
      "human_input_requested",
      "human_input_received",
      "tool_execution",
      "tool_completed",
    ]);
    expect(executionOf(events, "asked")).toMatchObject({ execution_status: "executed", result: { summary: "created note 1: crash ask" } });
    expect(events.at(-1)?.type).toBe("run_completed");
    expect(await rowOf(events, "asked")).toMatchObject({ state: "completed", dispatched: true, sends: 2 });
    // Exactly two tools/call at the server: the first, and the follow-up with the answer and the requestState byte for byte.
    expect(callsTo("confirm_note").map((c) => [c.inputResponses, c.requestState])).toEqual([
      [undefined, undefined],
      [{ confirm: { action: "accept", content: { confirm: true } } }, confirmState("crash ask")],
    ]);
    expect(stateless.notes()).toEqual(["crash ask"]);
    // The question is answered: the same answer again gets the same verdict, another one 409, and nothing more is sent.
    await expect(engine.answerInput(runId, question.input_id ?? "", { action: "decline" })).rejects.toMatchObject({ status: 409 });
    expect(callsTo("confirm_note")).toHaveLength(2);
  });

  it("the Worker killed while the question waits, and the question's time runs out while it is down: the restarted run sends cancel once", async () => {
    stateless.reset();
    const { runId, question } = await waitingQuestion(CONFIRM_NOTE, "lapsed", { text: "lapsed ask" });
    await crash();
    // Nobody answers: the run's alarm (in storage, like the round) closes the round as cancel and sends the follow-up.
    const events = await eventsToEnd(runId);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(question.expires_at));
    expect(executionOf(events, "lapsed")).toMatchObject({ execution_status: "executed", result: { summary: "not created (cancel)" } });
    expect(callsTo("confirm_note").map((c) => c.inputResponses)).toEqual([undefined, { confirm: { action: "cancel" } }]);
    expect(await rowOf(events, "lapsed")).toMatchObject({ state: "completed", sends: 2 });
    await expect(engine.answerInput(runId, question.input_id ?? "", { action: "decline" })).rejects.toMatchObject({
      status: 410,
      code: "expired",
    });
  });

  it("the Worker killed while the follow-up is in flight: the call ends outcome_unknown (its follow-up was written ahead), and no third tools/call is ever sent", async () => {
    stateless.reset();
    const HOLD_MS = 1_500;
    const { runId, question } = await waitingQuestion(CONFIRM_NOTE, "inflight", { text: "in flight" });
    stateless.holdNextFollowUp(HOLD_MS);
    await engine.answerInput(runId, question.input_id ?? "", { action: "accept", content: { confirm: true } });
    // The follow-up reached the server (counted on arrival), which holds it: kill wrangler and workerd now.
    await expect.poll(() => stateless.followUpArrivals(), { timeout: 10_000, interval: 20 }).toEqual(["in flight"]);
    const arrivedAt = Date.now();
    await crash();
    const events = await eventsToEnd(runId);
    expect(executionOf(events, "inflight")).toMatchObject({
      execution_status: "executed",
      error: { code: "transport_error", message: expect.stringContaining("restarted") },
    });
    // Both requests may have carried it; the restart settled it, counting the one written ahead.
    expect(await rowOf(events, "inflight")).toMatchObject({ state: "outcome_unknown", dispatched: true, sends: 2 });
    // Past the server's hold: still the two tools/call requests, never a third, and the follow-up arrived once.
    await expect.poll(() => Date.now() >= arrivedAt + HOLD_MS + 500, { timeout: 10_000, interval: 100 }).toBe(true);
    expect(callsTo("confirm_note")).toHaveLength(2);
    expect(stateless.followUpArrivals()).toEqual(["in flight"]);
  });

  it("the demo server's schedule_report (the README's example) answered after a SIGKILL: scheduled once, schedule_report called twice", async () => {
    await modernDemo.reset();
    const { run_id: runId } = await engine.trigger({
      message: "send me the latency report",
      channel_id: `C-crash-report-${Date.now()}`,
      script: [
        { tool_calls: [{ tool_name: MODERN_DEMO_DASHBOARD, tool_call_id: "dash", arguments: { title: "Latency" } }] },
        { tool_calls: [{ tool_name: MODERN_DEMO_REPORT, tool_call_id: "report", arguments: { dashboard_id: "dash-1" } }] },
        { text: "Scheduled." },
      ],
    });
    let question: QuestionEvent | undefined;
    for await (const event of engine.events(runId)) {
      if (event.type === "approval_requested") await engine.decideApproval(runId, event.approval_id, { decision: "approve" });
      if (event.type === "human_input_requested") {
        question = event;
        break;
      }
    }
    expect(question).toMatchObject({ tool_call_id: "report" });
    await crash();
    await engine.answerInput(runId, question?.input_id ?? "", {
      action: "accept",
      content: { frequency: "weekly", recipient: "#sre", formats: ["pdf"] },
    });
    const events = await eventsToEnd(runId);
    expect(executionOf(events, "report")).toMatchObject({ execution_status: "executed", result: { is_error: false } });
    expect(await rowOf(events, "report")).toMatchObject({ state: "completed", sends: 2 });
    expect((await modernDemo.state()).reports).toEqual([
      expect.objectContaining({ dashboard_id: "dash-1", frequency: "weekly", recipient: "#sre" }),
    ]);
    expect((await modernDemo.calls()).by_tool?.schedule_report).toBe(2);
  });
});
