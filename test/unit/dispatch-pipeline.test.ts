// The write-ahead dispatch pipeline (src/execution/dispatch-pipeline.ts) with
// a fake ledger and a fake sender: which steps run, in which order, what is
// sent, which rows are settled, and what the call is told, for every way the
// steps can go (contract section 8), plus the restart rule.
import { describe, expect, it } from "vitest";
import { DispatchPipeline, type PipelineLedger, type PipelineRun } from "../../src/execution/dispatch-pipeline";
import type { DispatchOutcome, Dispatched } from "../../src/execution/tool-calls";
import type { MutationOutcomeRow, Settlement } from "../../src/outcomes/mutation-outcomes";

type Step = "intent" | "prior" | "checkpoint" | "send" | "settle" | "settle_background" | "unsent" | "read";

interface FakeOptions {
  intent?: "recorded" | "replay_blocked" | "unavailable";
  prior?: boolean | "unavailable";
  checkpoint?: "acknowledged" | "unavailable";
  settle?: "settled" | "late";
  read?: Partial<MutationOutcomeRow> | null | "unavailable";
  outcome?: DispatchOutcome;
  /** Runs during the checkpoint, before it answers (e.g. a cancel arriving meanwhile). */
  duringCheckpoint?: () => void;
}

const OK: DispatchOutcome = { kind: "result", is_error: false, content_bytes: 2, summary: "ok", model_text: "ok", sent: true };

function fakes(options: FakeOptions = {}) {
  const steps: Step[] = [];
  const unsent: { mutationId: string; reason: string; approvalId: string | null }[] = [];
  const settled: { mutationId: string; settlement: Settlement }[] = [];
  const sent: Dispatched[] = [];
  const ledger: PipelineLedger = {
    intent: async () => {
      steps.push("intent");
      return options.intent ?? "recorded";
    },
    priorUnknown: async (query) => {
      steps.push("prior");
      expect(query).toEqual({
        channelId: "C1",
        toolName: "mcp__demo__create_dashboard",
        argumentsDigest: "sha256:d",
        excludeRunId: "run-1",
      });
      return options.prior ?? false;
    },
    checkpoint: async () => {
      steps.push("checkpoint");
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
      unsent.push({ mutationId: input.mutationId, reason: settlement.reason ?? "", approvalId: input.approvalId });
    },
    read: async () => {
      steps.push("read");
      const read = options.read === undefined ? null : options.read;
      return read === null || read === "unavailable" ? read : ({ dispatched: 0, state: "unresolved", ...read } as MutationOutcomeRow);
    },
  };
  const run: PipelineRun = { run_id: "run-1", channel_id: "C1", delivery_id: null, cancel_requested: false };
  const pipeline = new DispatchPipeline({
    ledger,
    run: () => run,
    send: async (call) => {
      steps.push("send");
      sent.push(call);
      return options.outcome ?? OK;
    },
  });
  return { pipeline, steps, unsent, settled, sent, run };
}

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
    mutation_id: "mut-1",
    ...over,
  };
}

describe("the write-ahead steps", () => {
  it("records the intent, checks prior outcomes, checkpoints, sends, then settles completed", async () => {
    const f = fakes();
    const decision = await f.pipeline.execute(mutation());
    expect(f.steps).toEqual(["intent", "prior", "checkpoint", "send", "settle"]);
    expect(decision).toEqual({ kind: "settle", outcome: OK, settlementLate: false });
    expect(f.sent.map((c) => c.arguments)).toEqual([{ title: "t" }]);
    expect(f.settled).toEqual([
      {
        mutationId: "mut-1",
        settlement: { state: "completed", result: { is_error: false, content_bytes: 2, summary: "ok" }, settledAt: expect.any(String) },
      },
    ]);
    expect(f.unsent).toEqual([]);
  });

  it("awaits the intent started at approval instead of writing another", async () => {
    const f = fakes();
    f.pipeline.recordIntent({
      tool_call_id: "call-1",
      tool_name: "t",
      arguments_digest: "d",
      mutation_id: "mut-1",
      approval_id: "approval-1",
    });
    await f.pipeline.execute(mutation());
    expect(f.steps.filter((s) => s === "intent")).toHaveLength(1);
  });

  it("refuses without sending when the intent could not be recorded, and settles its row unsent", async () => {
    const f = fakes({ intent: "unavailable" });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "storage_unavailable" });
    expect(f.steps).toEqual(["intent", "unsent"]);
    expect(f.unsent).toEqual([{ mutationId: "mut-1", reason: "storage_unavailable", approvalId: "approval-1" }]);
  });

  it("refuses replay_blocked and leaves the row that is not its own untouched", async () => {
    const f = fakes({ intent: "replay_blocked" });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "replay_blocked" });
    expect(f.steps).toEqual(["intent"]);
  });

  it.each([
    [true, "prior_outcome_unknown"],
    ["unavailable", "storage_unavailable"],
  ] as const)("refuses when the prior-outcome check answers %s", async (prior, reason) => {
    const f = fakes({ prior });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason });
    expect(f.steps).toEqual(["intent", "prior", "unsent"]);
    expect(f.unsent).toEqual([{ mutationId: "mut-1", reason, approvalId: "approval-1" }]);
  });

  it("refuses when the checkpoint fails or is late: nothing is sent", async () => {
    const f = fakes({ checkpoint: "unavailable" });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "storage_unavailable" });
    expect(f.steps).toEqual(["intent", "prior", "checkpoint", "unsent"]);
    expect(f.sent).toEqual([]);
  });

  it("lets a cancel that arrives during the checkpoint win: nothing is sent", async () => {
    const f = fakes({ duringCheckpoint: () => (f.run.cancel_requested = true) });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "cancelled" });
    expect(f.steps).toEqual(["intent", "prior", "checkpoint", "unsent"]);
    expect(f.unsent).toEqual([{ mutationId: "mut-1", reason: "cancelled", approvalId: "approval-1" }]);
  });

  it("refuses a cancelled run before the checkpoint", async () => {
    const f = fakes();
    f.run.cancel_requested = true;
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "refuse", reason: "cancelled" });
    expect(f.steps).toEqual(["intent", "prior", "unsent"]);
  });

  it("settles a failed send outcome_unknown and carries `sent` through", async () => {
    const failed: DispatchOutcome = { kind: "failed", code: "transport_timeout", message: "timed out", sent: true };
    const f = fakes({ outcome: failed });
    expect(await f.pipeline.execute(mutation())).toEqual({ kind: "settle", outcome: failed, settlementLate: false });
    expect(f.settled).toEqual([
      {
        mutationId: "mut-1",
        settlement: { state: "outcome_unknown", error: { code: "transport_timeout", message: "timed out" }, settledAt: expect.any(String) },
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
    expect(f.steps).toEqual(["send"]);
    f.run.cancel_requested = true;
    expect(await f.pipeline.execute(read)).toEqual({ kind: "refuse", reason: "cancelled" });
    expect(f.steps).toEqual(["send"]);
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
    expect(f.settled[0]).toMatchObject({ mutationId: "mut-1", settlement: { state: "outcome_unknown" } });
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
