// The write-ahead dispatch pipeline (src/execution/dispatch-pipeline.ts) with
// a fake ledger and a fake sender: which steps run, in which order, what is
// sent, which rows are settled, and what the call is told, for every way the
// steps can go (contract section 8), plus the restart rule.
import { describe, expect, it } from "vitest";
import {
  DispatchPipeline,
  type CallSession,
  type PipelineDecision,
  type PipelineLedger,
  type PipelineRun,
  type RowRef,
  type SendOutcome,
  type ToolListed,
} from "../../src/execution/dispatch-pipeline";
import type { McpFollowUp } from "../../src/execution/mcp-transport";
import type { QuestionAnswer } from "../../src/execution/mcp-questions";
import type { DispatchOutcome, Dispatched, McpConversation } from "../../src/execution/tool-calls";
import type { IntentInput, MutationOutcomeRow, Settlement } from "../../src/outcomes/mutation-outcomes";

type Step = "open" | "intent" | "checkpoint" | "send" | "close" | "settle" | "settle_background" | "unsent" | "read" | "write_ahead";

interface FakeOptions {
  intent?: "recorded" | "replay_blocked" | "unavailable";
  checkpoint?: "acknowledged" | "prior_outcome_unknown" | "unavailable";
  settle?: "settled" | "late";
  read?: Partial<MutationOutcomeRow> | null | "unavailable";
  /** What opening the MCP session gives: open (default), unreachable, or the opener throws. */
  session?: "open" | "unreachable" | "throws" | "unauthorized";
  outcome?: DispatchOutcome;
  /** The answers of successive sends (contract section 21: input_required, then the follow-ups'); overrides `outcome`. */
  answers?: SendOutcome[];
  maxInputRounds?: number;
  /** Runs during the checkpoint, before it answers (e.g. a cancel arriving meanwhile). */
  duringCheckpoint?: () => void;
  /** Runs while the session is being opened. */
  duringOpen?: () => void;
  /** What the session's fresh listing says of the call's tool (contract section 23); default: the approved digest. */
  listed?: ToolListed;
}

/** The tool's digest the calls below were approved with. */
const TOOL_DIGEST = `sha256:${"a".repeat(64)}`;

const OK: DispatchOutcome = { kind: "result", is_error: false, content_bytes: 2, summary: "ok", model_text: "ok", sent: true };
const APPROVED_AT = Date.parse("2026-11-20T10:00:00.000Z");
/** The row of the call `mutation()` makes, as recordIntent gets it at approval. */
const APPROVED_ROW: RowRef = {
  tool_call_id: "call-1",
  tool_name: "t",
  arguments_digest: "d",
  mutation_id: "mut-1",
  approval_id: "approval-1",
  approved_by: "U1",
  approvals: [{ by: "U1", at: "2026-11-20T10:00:00.000Z" }],
  approved_at: APPROVED_AT,
};

function fakes(options: FakeOptions = {}) {
  const steps: Step[] = [];
  const unsent: { mutationId: string; reason: string; approvalId: string | null; approvedBy: string; approvedAt: string }[] = [];
  const intents: IntentInput[] = [];
  /** The `since` each intent write was given: when its storage bound starts. */
  const intentSince: (number | undefined)[] = [];
  const settled: { mutationId: string; settlement: Settlement }[] = [];
  const sent: Dispatched[] = [];
  /** Each send's follow-up (undefined for the first tools/call). */
  const followUps: (McpFollowUp | undefined)[] = [];
  /** Each conversation written ahead (the engine keeps it with the call in the run's storage). */
  const writtenAhead: McpConversation[] = [];
  /** How many times the session's fresh listing was asked for the tool (contract section 23). */
  const identified = { count: 0 };
  const ledger: PipelineLedger = {
    intent: async (input, intentOptions) => {
      steps.push("intent");
      intents.push(input);
      intentSince.push(intentOptions?.since);
      return options.intent ?? "recorded";
    },
    checkpointUnlessPrior: async (_mutationId, notSent) => {
      steps.push("checkpoint");
      expect(notSent.reason).toBe("storage_unavailable");
      options.duringCheckpoint?.();
      return options.checkpoint ?? "acknowledged";
    },
    settleDispatched: async (mutationId, settlement) => {
      steps.push("settle");
      settled.push({ mutationId, settlement });
      return options.settle ?? "settled";
    },
    settleInBackground: (mutationId, settlement) => {
      steps.push("settle_background");
      settled.push({ mutationId, settlement });
    },
    recordUnsentInBackground: (input, settlement) => {
      steps.push("unsent");
      unsent.push({
        mutationId: input.mutationId,
        reason: settlement.reason ?? "",
        approvalId: input.approvalId,
        approvedBy: input.approvedBy,
        approvedAt: input.approvedAt,
      });
    },
    read: async () => {
      steps.push("read");
      const read = options.read === undefined ? null : options.read;
      return read === null || read === "unavailable" ? read : ({ dispatched: 0, state: "unresolved", ...read } as MutationOutcomeRow);
    },
  };
  const run: PipelineRun = { run_id: "run-1", channel_id: "C1", delivery_id: null, cancel_requested: false };
  const open = async (call: Dispatched): Promise<CallSession> => {
    steps.push("open");
    options.duringOpen?.();
    if (options.session === "throws") throw new Error("opener broke");
    if (options.session === "unreachable") return { kind: "unreachable", message: "connect ECONNREFUSED" };
    if (options.session === "unauthorized") return { kind: "unreachable", message: "not connected", reason: "authorization_required" };
    return {
      kind: "open",
      send: async (followUp) => {
        steps.push("send");
        sent.push(call);
        followUps.push(followUp);
        if (options.answers) return options.answers[followUps.length - 1] ?? OK;
        return options.outcome ?? OK;
      },
      close: async () => {
        steps.push("close");
      },
      identify: async () => {
        identified.count += 1;
        return options.listed ?? { kind: "listed", digest: TOOL_DIGEST };
      },
    };
  };
  const pipeline = new DispatchPipeline({
    ledger,
    run: () => run,
    open,
    writeAhead: (_call, conversation) => {
      steps.push("write_ahead");
      writtenAhead.push(conversation);
    },
    ...(options.maxInputRounds !== undefined ? { maxInputRounds: options.maxInputRounds } : {}),
  });
  /** The follow-up of a kept round, as the engine sends it once the round closed; resolves with its decision. */
  const followUp = (call: Dispatched, inputResponses: Record<string, QuestionAnswer>) =>
    new Promise<PipelineDecision>((resolve) => pipeline.followUp(call, inputResponses, resolve));
  return { pipeline, steps, unsent, intents, intentSince, settled, sent, run, followUps, writtenAhead, followUp, identified };
}

/** Lets the closes fired off the critical path run. */
const settleBackground = () => new Promise((r) => setTimeout(r, 0));

function mutation(over: Partial<Dispatched> = {}): Dispatched {
  return {
    turn: 0,
    index: 0,
    tool_call_id: "call-1",
    tool_name: "mcp__demo__create_dashboard",
    arguments: { title: "t" },
    arguments_digest: "sha256:d",
    kind: "mcp",
    mutating: true,
    level: "approve",
    description: "Create.",
    started_at: 0,
    state: "dispatched",
    grant: { approval_id: "approval-1", level: "approve", expires_at: 1, decision: "approved", decided_by: "U1" },
    approved_at: APPROVED_AT,
    mutation_id: "mut-1",
    tool_digest: TOOL_DIGEST,
    ...over,
  };
}

const UNSENT = (reason: string) => ({
  mutationId: "mut-1",
  reason,
  approvalId: "approval-1",
  approvedBy: "U1",
  approvedAt: "2026-11-20T10:00:00.000Z",
});

describe("the write-ahead steps", () => {
  it("opens the session while the intent is awaited, checkpoints (prior check folded in), sends, closes, then settles completed", async () => {
    const f = fakes();
    const decision = await f.pipeline.execute(mutation());
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "checkpoint", "send", "settle", "close"]);
    expect(decision).toEqual({ kind: "settle", outcome: OK, settlementLate: false });
    expect(f.sent.map((c) => c.arguments)).toEqual([{ title: "t" }]);
    expect(f.settled).toEqual([
      {
        mutationId: "mut-1",
        settlement: {
          state: "completed",
          result: { is_error: false, content_bytes: 2, summary: "ok" },
          settledAt: expect.any(String),
          sends: 1,
        },
      },
    ]);
    expect(f.unsent).toEqual([]);
  });

  it("writes approved_by and approved_at into the intent: the decider, or automatic", async () => {
    const human = fakes();
    await human.pipeline.execute(mutation());
    expect(human.intents[0]).toMatchObject({ approvedBy: "U1", approvedAt: "2026-11-20T10:00:00.000Z", approvalId: "approval-1" });
    const auto = fakes();
    await auto.pipeline.execute(mutation({ grant: "automatic", approved_at: APPROVED_AT + 1_000 }));
    expect(auto.intents[0]).toMatchObject({ approvedBy: "automatic", approvedAt: "2026-11-20T10:00:01.000Z", approvalId: null });
  });

  it("awaits the intent started at approval instead of writing another", async () => {
    const f = fakes();
    f.pipeline.recordIntent(APPROVED_ROW);
    await f.pipeline.execute(mutation());
    expect(f.steps.filter((s) => s === "intent")).toHaveLength(1);
    expect(f.intents[0]).toMatchObject({ approvedBy: "U1", approvedAt: "2026-11-20T10:00:00.000Z" });
  });

  it("counts the intent's storage bound from the approval, not from the later turn that writes it", async () => {
    const f = fakes();
    const approvedAt = Date.now();
    f.pipeline.recordIntent(APPROVED_ROW);
    // The object is busy for a while before the write's turn comes.
    const busyUntil = Date.now() + 20;
    while (Date.now() < busyUntil) {
      // a synchronous stretch of other work
    }
    await f.pipeline.execute(mutation());
    expect(f.intentSince).toHaveLength(1);
    expect(f.intentSince[0]).toBeGreaterThanOrEqual(approvedAt);
    expect(f.intentSince[0]).toBeLessThan(busyUntil);
  });

  it("refuses without sending when the intent could not be recorded, settles its row unsent and closes the session", async () => {
    const f = fakes({ intent: "unavailable" });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "storage_unavailable" });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "unsent", "close"]);
    expect(f.unsent).toEqual([UNSENT("storage_unavailable")]);
  });

  it("refuses replay_blocked and leaves the row that is not its own untouched", async () => {
    const f = fakes({ intent: "replay_blocked" });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "replay_blocked" });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "close"]);
  });

  it.each([["unreachable"], ["throws"]] as const)(
    "a session that cannot be opened (%s) ends transport_unavailable before any checkpoint: row unsent, nothing sent",
    async (session) => {
      const f = fakes({ session });
      expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "transport_unavailable" });
      await settleBackground();
      expect(f.steps).toEqual(["open", "intent", "unsent"]);
      expect(f.unsent).toEqual([UNSENT("transport_unavailable")]);
      expect(f.sent).toEqual([]);
    },
  );

  it("a tools/call that provably never left (sent: false) after the checkpoint is transport_unavailable, settled unsent", async () => {
    const f = fakes({ outcome: { kind: "failed", code: "transport_error", message: "no", sent: false } });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "transport_unavailable" });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "checkpoint", "send", "unsent", "close"]);
    expect(f.unsent).toEqual([UNSENT("transport_unavailable")]);
    expect(f.settled).toEqual([]);
  });

  it.each([
    ["prior_outcome_unknown", "prior_outcome_unknown"],
    ["unavailable", "storage_unavailable"],
  ] as const)("refuses when the folded checkpoint answers %s: nothing is sent, the session is closed", async (checkpoint, reason) => {
    const f = fakes({ checkpoint });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "checkpoint", "unsent", "close"]);
    expect(f.unsent).toEqual([UNSENT(reason)]);
    expect(f.sent).toEqual([]);
  });

  it("checks the tool's identity right before the checkpoint, and records the approved digest with the intent (contract section 23)", async () => {
    const f = fakes({ duringCheckpoint: () => expect(f.identified.count).toBe(1) });
    await f.pipeline.execute(mutation());
    expect(f.identified.count).toBe(1);
    expect(f.steps).toContain("checkpoint");
    expect(f.intents[0]).toMatchObject({ toolDigest: TOOL_DIGEST });
  });

  it.each([
    ["listed with another digest", `sha256:${"b".repeat(64)}`],
    ["gone from the listing", null],
  ] as const)("a tool %s ends tool_changed with the digest now listed: no checkpoint, nothing sent, row unsent", async (_what, listed) => {
    const f = fakes({ listed: { kind: "listed", digest: listed } });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "tool_changed", tool_digest: listed });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "unsent", "close"]);
    expect(f.unsent).toEqual([UNSENT("tool_changed")]);
    expect(f.sent).toEqual([]);
  });

  it("a call proposed while its tool was not listed (no digest) is not sent on a tool listed now", async () => {
    const f = fakes();
    const { tool_digest: _none, ...unlisted } = mutation();
    expect(await f.pipeline.execute(unlisted)).toEqual({ kind: "refuse", reason: "tool_changed", tool_digest: TOOL_DIGEST });
    expect(f.sent).toEqual([]);
  });

  it("a fresh listing that fails ends transport_unavailable: no checkpoint, nothing sent", async () => {
    const f = fakes({ listed: { kind: "failed", message: "tools/list timed out" } });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "transport_unavailable" });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "unsent", "close"]);
    expect(f.unsent).toEqual([UNSENT("transport_unavailable")]);
  });

  it("lets a cancel that arrives during the checkpoint win: nothing is sent", async () => {
    const f = fakes({ duringCheckpoint: () => (f.run.cancel_requested = true) });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "cancelled" });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "checkpoint", "unsent", "close"]);
    expect(f.unsent).toEqual([UNSENT("cancelled")]);
  });

  it("a cancel that arrives while the session opens is checked before the checkpoint", async () => {
    const f = fakes({ duringOpen: () => (f.run.cancel_requested = true) });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "cancelled" });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "unsent", "close"]);
    expect(f.sent).toEqual([]);
  });

  it("refuses a run already cancelled without connecting or checkpointing", async () => {
    const f = fakes();
    f.run.cancel_requested = true;
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "cancelled" });
    expect(f.steps).toEqual(["intent", "unsent"]);
  });

  it("settles a failed send outcome_unknown and carries `sent` through", async () => {
    const failed: DispatchOutcome = { kind: "failed", code: "transport_timeout", message: "timed out", sent: true };
    const f = fakes({ outcome: failed });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "settle", outcome: failed, settlementLate: false });
    expect(f.settled).toEqual([
      {
        mutationId: "mut-1",
        settlement: {
          state: "outcome_unknown",
          error: { code: "transport_timeout", message: "timed out" },
          settledAt: expect.any(String),
          sends: 1,
        },
      },
    ]);
  });

  it("reports a late settlement", async () => {
    const f = fakes({ settle: "late" });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "settle", outcome: OK, settlementLate: true });
  });

  it("sends a read-only call without any row work, unless the run was cancelled", async () => {
    const f = fakes();
    const read = mutation({ mutating: false, mutation_id: null, grant: "automatic" });
    expect(await f.pipeline.execute(read)).toEqual({ kind: "settle", outcome: OK, settlementLate: false });
    await settleBackground();
    expect(f.steps).toEqual(["open", "send", "close"]);
    // No checkpoint, so no tool identity check (contract section 23 binds mutations).
    expect(f.identified.count).toBe(0);
    f.run.cancel_requested = true;
    expect(await f.pipeline.execute(read)).toEqual({ kind: "refuse", reason: "cancelled" });
    expect(f.steps).toEqual(["open", "send", "close"]);
  });

  it("a read-only call that reached nothing is transport_unavailable; one that may have left stays an executed failure", async () => {
    const read = mutation({ mutating: false, mutation_id: null, grant: "automatic" });
    const unreachable = fakes({ session: "unreachable" });
    expect(await unreachable.pipeline.execute(read)).toEqual({ kind: "refuse", reason: "transport_unavailable" });
    const unsentCall = fakes({ outcome: { kind: "failed", code: "transport_error", message: "no", sent: false } });
    expect(await unsentCall.pipeline.execute(read)).toEqual({ kind: "refuse", reason: "transport_unavailable" });
    const ambiguous: DispatchOutcome = { kind: "failed", code: "transport_error", message: "broke", sent: true };
    const mayHaveLeft = fakes({ outcome: ambiguous });
    expect(await mayHaveLeft.pipeline.execute(read)).toEqual({ kind: "settle", outcome: ambiguous, settlementLate: false });
    for (const f of [unreachable, unsentCall, mayHaveLeft]) expect(f.unsent).toEqual([]);
  });

  it("start() hands the decision over once and tracks the call in flight meanwhile", async () => {
    const f = fakes();
    const decisions: unknown[] = [];
    await new Promise<void>((resolve) => {
      f.pipeline.start(mutation(), (d) => {
        decisions.push(d);
        resolve();
      });
      expect(f.pipeline.isInFlight("call-1")).toBe(true);
    });
    expect(f.pipeline.isInFlight("call-1")).toBe(false);
    expect(decisions).toEqual([{ kind: "settle", outcome: OK, settlementLate: false }]);
  });
});

describe("restart recovery", () => {
  it("a row already checkpointed (dispatched) becomes outcome_unknown and is never sent again", async () => {
    const f = fakes({ read: { dispatched: 1, state: "unresolved" } });
    const decision = await f.pipeline.recover(mutation());
    expect(decision).toMatchObject({ kind: "settle", outcome: { kind: "failed", code: "transport_error" } });
    expect(f.steps).toEqual(["read", "settle_background"]);
    // The checkpointed request may have carried it (contract section 21's `sends`).
    expect(f.settled[0]).toMatchObject({ mutationId: "mut-1", settlement: { state: "outcome_unknown", sends: 1 } });
    expect(f.sent).toEqual([]);
  });

  it("a row never checkpointed resumes its pipeline, and is then sent exactly once", async () => {
    const f = fakes({ read: { dispatched: 0, state: "unresolved" } });
    expect(await f.pipeline.recover(mutation())).toEqual({ kind: "resume" });
    expect(f.sent).toEqual([]);
    await f.pipeline.execute(mutation());
    expect(f.sent).toHaveLength(1);
  });

  it("an already settled row is reported lost without touching it; an unreadable one is retried later", async () => {
    const settledRow = fakes({ read: { dispatched: 1, state: "completed" } });
    expect(await settledRow.pipeline.recover(mutation())).toMatchObject({ kind: "settle" });
    expect(settledRow.steps).toEqual(["read"]);
    const unreadable = fakes({ read: "unavailable" });
    expect(await unreadable.pipeline.recover(mutation())).toEqual({ kind: "retry_later" });
  });

  it("a read-only call lost in a restart is an ambiguous failure, without any read", async () => {
    const f = fakes();
    expect(await f.pipeline.recover(mutation({ mutating: false, mutation_id: null, grant: "automatic" }))).toMatchObject({
      kind: "settle",
      outcome: { kind: "failed", code: "transport_error" },
    });
    expect(f.steps).toEqual([]);
  });
});

describe("questions mid-call (contract section 21)", () => {
  const form = (message: string) => ({
    method: "elicitation/create",
    params: { message, requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } },
  });

  it("hands the round back with nothing in flight, then sends the follow-up on a new session with the answers and the requestState verbatim; the row counts 2 sends", async () => {
    const f = fakes({
      answers: [{ kind: "input_required", inputRequests: { confirm: form("Sure?") }, requestState: "state-é" }, OK],
    });
    const asked = await f.pipeline.execute(mutation());
    expect(asked).toEqual({
      kind: "ask",
      conversation: { phase: "waiting", round: 1, sends: 1, request_state: "state-é" },
      questions: [{ key: "confirm", question: "Sure?", requested_schema: form("").params.requestedSchema }],
    });
    // The first exchange is over: its session closed, the row untouched, nothing written ahead yet.
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "checkpoint", "send", "close"]);
    expect(f.pipeline.isInFlight("call-1")).toBe(false);
    const kept = mutation({ conversation: asked.kind === "ask" ? asked.conversation : undefined });
    const decision = await f.followUp(kept, { confirm: { action: "accept", content: { ok: true } } });
    await settleBackground();
    // Written ahead before its session opens and the request leaves (contract section 21, like the checkpoint).
    expect(f.steps.slice(5)).toEqual(["write_ahead", "open", "send", "settle", "close"]);
    expect(f.writtenAhead).toEqual([{ phase: "sending", round: 1, sends: 1, request_state: "state-é" }]);
    expect(f.followUps).toEqual([
      undefined,
      { inputResponses: { confirm: { action: "accept", content: { ok: true } } }, requestState: "state-é" },
    ]);
    expect(decision).toEqual({ kind: "settle", outcome: OK, settlementLate: false });
    expect(f.settled[0]?.settlement).toMatchObject({ state: "completed", sends: 2 });
  });

  it("a follow-up answered with another round hands that round back, counting both sends", async () => {
    const f = fakes({
      answers: [
        { kind: "input_required", inputRequests: { a: form("First?") }, requestState: "s1" },
        { kind: "input_required", inputRequests: { b: form("Second?") }, requestState: "s2" },
        OK,
      ],
    });
    const first = await f.pipeline.execute(mutation());
    if (first.kind !== "ask") throw new Error("expected a round");
    const second = await f.followUp(mutation({ conversation: first.conversation }), { a: { action: "decline" } });
    expect(second).toMatchObject({ kind: "ask", conversation: { phase: "waiting", round: 2, sends: 2, request_state: "s2" } });
    if (second.kind !== "ask") throw new Error("expected a round");
    expect(await f.followUp(mutation({ conversation: second.conversation }), { b: { action: "cancel" } })).toMatchObject({
      kind: "settle",
    });
    expect(f.followUps.map((u) => u?.requestState)).toEqual([undefined, "s1", "s2"]);
    expect(f.settled[0]?.settlement).toMatchObject({ state: "completed", sends: 3 });
  });

  it("an input_required without inputRequests is sent again at once, written ahead, asking nobody", async () => {
    const f = fakes({ answers: [{ kind: "input_required", inputRequests: {}, requestState: "again" }, OK] });
    const decision = await f.pipeline.execute(mutation());
    expect(decision).toMatchObject({ kind: "settle" });
    expect(f.steps.filter((s) => s !== "close")).toEqual(["open", "intent", "checkpoint", "send", "write_ahead", "send", "settle"]);
    expect(f.writtenAhead).toEqual([{ phase: "sending", round: 1, sends: 1, request_state: "again" }]);
    expect(f.followUps).toEqual([undefined, { inputResponses: {}, requestState: "again" }]);
    expect(f.settled[0]?.settlement).toMatchObject({ state: "completed", sends: 2 });
  });

  it("more rounds than maxInputRounds end input_unsupported (outcome_unknown) with nothing more sent", async () => {
    const again: SendOutcome = { kind: "input_required", inputRequests: {}, requestState: "s" };
    const f = fakes({ answers: [again, again, again], maxInputRounds: 2 });
    const decision = await f.pipeline.execute(mutation());
    expect(f.followUps).toHaveLength(3);
    expect(decision).toMatchObject({ kind: "settle", outcome: { kind: "failed", code: "input_unsupported", sent: true } });
    expect(f.settled[0]?.settlement).toMatchObject({ state: "outcome_unknown", error: { code: "input_unsupported" }, sends: 3 });
  });

  it("an undeclared request kind (sampling, URL mode) ends input_unsupported after the one send, asking nobody", async () => {
    for (const request of [
      { method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } },
      { method: "elicitation/create", params: { mode: "url", message: "go", url: "https://example.com" } },
      { method: "roots/list" },
    ]) {
      const f = fakes({ answers: [{ kind: "input_required", inputRequests: { x: request } }] });
      const decision = await f.pipeline.execute(mutation());
      expect(f.followUps).toEqual([undefined]);
      expect(decision).toMatchObject({ kind: "settle", outcome: { kind: "failed", code: "input_unsupported" } });
      expect(f.settled[0]?.settlement).toMatchObject({ state: "outcome_unknown", sends: 1 });
    }
  });

  it("a follow-up that could not leave, or whose server cannot be reached now, is still ambiguous: the first send reached the server", async () => {
    const conversation: McpConversation = { phase: "waiting", round: 1, sends: 1 };
    const cut = fakes({ answers: [{ kind: "failed", code: "transport_error", message: "connection refused", sent: false }] });
    const decision = await cut.followUp(mutation({ conversation }), { q: { action: "decline" } });
    expect(decision).toMatchObject({ kind: "settle", outcome: { kind: "failed", code: "transport_error", sent: true } });
    expect(cut.settled[0]?.settlement).toMatchObject({ state: "outcome_unknown", sends: 2 });
    expect(cut.unsent).toEqual([]);
    const gone = fakes({ session: "unreachable" });
    expect(await gone.followUp(mutation({ conversation }), { q: { action: "decline" } })).toMatchObject({
      kind: "settle",
      outcome: { kind: "failed", code: "transport_error", sent: true },
    });
    expect(gone.sent).toEqual([]);
    expect(gone.settled[0]?.settlement).toMatchObject({ state: "outcome_unknown", sends: 1 });
    expect(gone.unsent).toEqual([]);
  });
});

describe("restart recovery of a call that asked (contract sections 8 and 21)", () => {
  it("a round kept waiting is not lost: the call goes on waiting, with no read and nothing settled", async () => {
    const f = fakes({ read: { dispatched: 1, state: "unresolved" } });
    expect(await f.pipeline.recover(mutation({ conversation: { phase: "waiting", round: 1, sends: 1, request_state: "s" } }))).toEqual({
      kind: "wait",
    });
    expect(f.steps).toEqual([]);
  });

  it("a follow-up written ahead may have been in flight: outcome_unknown counting it, never sent again", async () => {
    const f = fakes({ read: { dispatched: 1, state: "unresolved" } });
    const decision = await f.pipeline.recover(mutation({ conversation: { phase: "sending", round: 2, sends: 2 } }));
    expect(decision).toMatchObject({ kind: "settle", outcome: { kind: "failed", code: "transport_error", sent: true } });
    expect(f.settled[0]).toMatchObject({ mutationId: "mut-1", settlement: { state: "outcome_unknown", sends: 3 } });
    expect(f.sent).toEqual([]);
  });
});

describe("authorization (contract section 21)", () => {
  it("a server without a usable token ends authorization_required before any checkpoint: row unsent, nothing sent", async () => {
    const f = fakes({ session: "unauthorized" });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "authorization_required" });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "unsent"]);
    expect(f.unsent).toEqual([UNSENT("authorization_required")]);
    expect(f.sent).toEqual([]);
  });

  it("a tools/call refused for its token (401/403) settles unsent with authorization_required, sent once", async () => {
    const f = fakes({
      outcome: { kind: "failed", code: "transport_error", message: "401", sent: false, unsent: "authorization_required" },
    });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "authorization_required" });
    await settleBackground();
    expect(f.steps).toEqual(["open", "intent", "checkpoint", "send", "unsent", "close"]);
    expect(f.unsent).toEqual([UNSENT("authorization_required")]);
    expect(f.sent).toHaveLength(1);
    expect(f.settled).toEqual([]);
  });
});
