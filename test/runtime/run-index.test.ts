// The write side of the indexes across runs (contract section 15): pending
// marks in a real Durable Object's SQLite, flushed into the real D1 of
// miniflare (migrations/0003). Proves: marks become rows, statuses only move
// forward (locally and in D1), a flush that fails halfway loses nothing and
// its retry finishes the job without duplicates, a mark made while a flush is
// in flight is kept for the next one, and events map to the right marks.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newApprovalId, newRunId } from "../../src/ids";
import { REQUEST_PREVIEW_CHARS } from "../../src/wire/listing-schemas";
import {
  nextFlushDelayMs,
  RunIndex,
  requestPreview,
  type IndexDb,
  type IndexStatement,
  type RunIndexContext,
} from "../../src/listings/run-index";
import type { ApprovalListItem, InputListItem, RunListItem } from "../../src/wire/listing-schemas";
import { markEvent } from "./run-events";
import { runTablesOf } from "./helpers";

const T0 = "2026-11-20T10:00:00.000Z";
const T1 = "2026-11-20T10:00:05.000Z";
const T2 = "2026-11-20T10:05:00.000Z";

/** Runs `body` with a RunIndex over a fresh Durable Object's own SQLite storage. */
function withIndex<T>(body: (index: RunIndex, sql: SqlStorage) => Promise<T>, objectName = newRunId()): Promise<T> {
  const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(objectName));
  return runInDurableObject(stub, (_instance, state) => body(new RunIndex(runTablesOf(state)), runTablesOf(state)));
}

function runRow(runId: string, overrides: Partial<RunListItem> = {}): RunListItem {
  return {
    run_id: runId,
    channel_id: "C-index",
    user_id: "U1",
    delivery_id: null,
    source: "api",
    status: "running",
    created_at: T0,
    ...overrides,
  };
}

function approvalRow(runId: string, overrides: Partial<ApprovalListItem> = {}): ApprovalListItem {
  return {
    approval_id: newApprovalId(),
    run_id: runId,
    channel_id: "C-index",
    tool_call_id: "write-1",
    tool_name: "mcp__demo__create_dashboard",
    level: "approve",
    description: "Create a dashboard",
    arguments: { title: "Q4", api_key: "[redacted]" },
    requested_at: T1,
    expires_at: T2,
    status: "pending",
    ...overrides,
  };
}

function inputRow(runId: string, overrides: Partial<InputListItem> = {}): InputListItem {
  return {
    tool_call_id: "ask-1",
    run_id: runId,
    channel_id: "C-index",
    question: "Which team owns it?",
    requested_at: T1,
    expires_at: T2,
    status: "pending",
    ...overrides,
  };
}

const d1Run = (runId: string) => env.DB.prepare(`SELECT * FROM runs WHERE run_id = ?`).bind(runId).first<Record<string, unknown>>();
const d1Approval = (id: string) =>
  env.DB.prepare(`SELECT * FROM approvals WHERE approval_id = ?`).bind(id).first<Record<string, unknown>>();
const d1Input = (runId: string, toolCallId: string) =>
  env.DB.prepare(`SELECT * FROM inputs WHERE run_id = ? AND tool_call_id = ? AND input_id IS NULL`)
    .bind(runId, toolCallId)
    .first<Record<string, unknown>>();
const d1Question = (runId: string, inputId: string) =>
  env.DB.prepare(`SELECT * FROM inputs WHERE run_id = ? AND input_id = ?`).bind(runId, inputId).first<Record<string, unknown>>();

/** D1 in front of the real one: statement number `failAt` (1-based) throws, before or after it reached D1. */
function failingDb(failAt: number, when: "before" | "after" = "before"): IndexDb & { calls: number } {
  const seam = {
    calls: 0,
    prepare(query: string): IndexStatement {
      let bound = env.DB.prepare(query);
      const statement: IndexStatement = {
        bind(...values: unknown[]) {
          bound = bound.bind(...values);
          return statement;
        },
        async run() {
          seam.calls += 1;
          if (seam.calls === failAt && when === "before") throw new Error("D1_ERROR: simulated network failure");
          const result = await bound.run();
          if (seam.calls === failAt) throw new Error("D1_ERROR: the answer was lost after the write");
          return result;
        },
      };
      return statement;
    },
  };
  return seam;
}

describe("run index: marks and flush", () => {
  it("writes a run, an approval and a question when marked, then their resolutions, and a second flush writes nothing", async () => {
    const runId = newRunId();
    const approval = approvalRow(runId);
    await withIndex(async (index) => {
      index.markRun(runRow(runId));
      index.markApprovalRequested(approval);
      index.markInputAsked(inputRow(runId));
      expect(index.pending).toBe(3);
      expect(await d1Run(runId)).toBeNull();

      expect(await index.flush(env.DB)).toEqual({ status: "ok", written: 3, remaining: 0 });
      expect(index.pending).toBe(0);
      expect(await d1Run(runId)).toMatchObject({ status: "running", ended_at: null, source: "api", channel_id: "C-index" });
      const stored = await d1Approval(approval.approval_id);
      expect(stored).toMatchObject({ status: "pending", level: "approve", decided_by: null });
      expect(JSON.parse(String(stored?.arguments_json))).toEqual({ title: "Q4", api_key: "[redacted]" });
      expect(await d1Input(runId, "ask-1")).toMatchObject({ status: "pending", question: "Which team owns it?" });

      // The resolutions alone: their requests are already in D1.
      index.markApprovalResolved({ approval_id: approval.approval_id, run_id: runId, status: "approved", decided_by: "U-approver" });
      index.markInputResolved({ run_id: runId, tool_call_id: "ask-1", status: "answered" });
      index.markRun(runRow(runId, { status: "completed", ended_at: T2 }));
      expect(await index.flush(env.DB)).toEqual({ status: "ok", written: 3, remaining: 0 });
      expect(await d1Run(runId)).toMatchObject({ status: "completed", ended_at: T2 });
      expect(await d1Approval(approval.approval_id)).toMatchObject({ status: "approved", decided_by: "U-approver" });
      expect(await d1Input(runId, "ask-1")).toMatchObject({ status: "answered" });

      expect(await index.flush(env.DB)).toEqual({ status: "ok", written: 0, remaining: 0 });
    });
  });

  it("merges a request and its resolution made between two flushes into one write of the final state", async () => {
    const runId = newRunId();
    const approval = approvalRow(runId, { level: "confirm" });
    await withIndex(async (index) => {
      index.markApprovalRequested(approval);
      index.markApprovalResolved({ approval_id: approval.approval_id, run_id: runId, status: "denied", decided_by: "U2" });
      index.markInputAsked(inputRow(runId, { tool_call_id: "ask-2" }));
      index.markInputResolved({ run_id: runId, tool_call_id: "ask-2", status: "expired" });
      expect(index.pending).toBe(2);
      expect(await index.flush(env.DB)).toEqual({ status: "ok", written: 2, remaining: 0 });
    });
    expect(await d1Approval(approval.approval_id)).toMatchObject({
      status: "denied",
      decided_by: "U2",
      level: "confirm",
      description: "Create a dashboard",
      requested_at: T1,
    });
    expect(await d1Input(runId, "ask-2")).toMatchObject({ status: "expired", question: "Which team owns it?" });
  });

  it("never takes a resolved entry back to pending, neither in the pending mark nor in D1", async () => {
    const runId = newRunId();
    const approval = approvalRow(runId);
    await withIndex(async (index) => {
      // Locally: a late pending mark after the resolution changes nothing.
      index.markApprovalRequested(approval);
      index.markApprovalResolved({ approval_id: approval.approval_id, run_id: runId, status: "cancelled" });
      index.markApprovalRequested(approval);
      index.markRun(runRow(runId, { status: "failed", ended_at: T2 }));
      index.markRun(runRow(runId));
      await index.flush(env.DB);
      expect(await d1Approval(approval.approval_id)).toMatchObject({ status: "cancelled" });
      expect(await d1Run(runId)).toMatchObject({ status: "failed", ended_at: T2 });

      // In D1: a full pending row flushed after the resolved one (a replayed mark) is a no-op.
      index.markApprovalRequested(approval);
      index.markRun(runRow(runId));
      index.markInputAsked(inputRow(runId, { status: "cancelled" }));
      await index.flush(env.DB);
      index.markInputAsked(inputRow(runId));
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 1 });
    });
    expect(await d1Approval(approval.approval_id)).toMatchObject({ status: "cancelled" });
    expect(await d1Run(runId)).toMatchObject({ status: "failed", ended_at: T2 });
    expect(await d1Input(runId, "ask-1")).toMatchObject({ status: "cancelled" });
  });

  it("a flush that fails halfway keeps the unwritten marks, and its retry writes them without duplicates", async () => {
    const runIds = [newRunId(), newRunId(), newRunId(), newRunId()];
    await withIndex(async (index) => {
      for (const [i, runId] of runIds.entries()) index.markRun(runRow(runId, { created_at: `2026-11-20T10:00:0${i}.000Z` }));

      const broken = failingDb(3);
      const first = await index.flush(broken);
      expect(first).toMatchObject({ status: "failed", written: 2, remaining: 2 });
      expect(first.status === "failed" && first.error).toContain("simulated network failure");
      let inD1 = 0;
      for (const runId of runIds) if (await d1Run(runId)) inD1 += 1;
      expect(inD1).toBe(2);

      // The retry: the rest is written, nothing twice.
      expect(await index.flush(env.DB)).toEqual({ status: "ok", written: 2, remaining: 0 });
      const { results } = await env.DB.prepare(`SELECT run_id FROM runs WHERE run_id IN (?, ?, ?, ?)`)
        .bind(...runIds)
        .all<{ run_id: string }>();
      expect(results.map((r) => r.run_id).sort()).toEqual([...runIds].sort());
    });
  });

  it("a write whose answer was lost keeps its mark; writing it again is idempotent", async () => {
    const runId = newRunId();
    const approval = approvalRow(runId);
    await withIndex(async (index) => {
      index.markRun(runRow(runId, { status: "completed", ended_at: T2 }));
      index.markApprovalRequested(approval);
      index.markApprovalResolved({ approval_id: approval.approval_id, run_id: runId, status: "approved", decided_by: "U1" });
      const lost = await index.flush(failingDb(1, "after"));
      expect(lost).toMatchObject({ status: "failed", written: 0, remaining: 2 });
      expect(await index.flush(env.DB)).toEqual({ status: "ok", written: 2, remaining: 0 });
    });
    const { results } = await env.DB.prepare(`SELECT COUNT(*) AS n FROM approvals WHERE run_id = ?`).bind(runId).all<{ n: number }>();
    expect(results[0]?.n).toBe(1);
    expect(await d1Approval(approval.approval_id)).toMatchObject({ status: "approved", decided_by: "U1" });
    expect(await d1Run(runId)).toMatchObject({ status: "completed" });
  });

  it("a mark made while its older version is being written stays pending for the next flush", async () => {
    const runId = newRunId();
    const approval = approvalRow(runId);
    await withIndex(async (index) => {
      index.markApprovalRequested(approval);
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let reached!: () => void;
      const writing = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const slow: IndexDb = {
        prepare(query) {
          let bound = env.DB.prepare(query);
          const statement: IndexStatement = {
            bind(...values) {
              bound = bound.bind(...values);
              return statement;
            },
            async run() {
              const result = await bound.run();
              reached();
              await held;
              return result;
            },
          };
          return statement;
        },
      };
      const flushing = index.flush(slow);
      await writing;
      // The person decides while the request is being written.
      index.markApprovalResolved({ approval_id: approval.approval_id, run_id: runId, status: "approved", decided_by: "U1" });
      // A second flush meanwhile shares the one in flight.
      const same = index.flush(env.DB);
      release();
      expect(await flushing).toEqual({ status: "ok", written: 1, remaining: 1 });
      expect(await same).toEqual({ status: "ok", written: 1, remaining: 1 });
      expect(await d1Approval(approval.approval_id)).toMatchObject({ status: "pending" });
      expect(await index.flush(env.DB)).toEqual({ status: "ok", written: 1, remaining: 0 });
    });
    expect(await d1Approval(approval.approval_id)).toMatchObject({ status: "approved", decided_by: "U1" });
  });

  it("flushes at most a batch at a time and reports what remains", async () => {
    await withIndex(async (index) => {
      const runIds = [newRunId(), newRunId(), newRunId()];
      for (const runId of runIds) index.markRun(runRow(runId));
      expect(await index.flush(env.DB, 2)).toEqual({ status: "ok", written: 2, remaining: 1 });
      expect(await index.flush(env.DB, 2)).toEqual({ status: "ok", written: 1, remaining: 0 });
    });
  });

  it("the marks survive the object going away: a new RunIndex over the same storage flushes them", async () => {
    const name = newRunId();
    const runId = newRunId();
    await withIndex(async (index) => {
      index.markRun(runRow(runId));
    }, name);
    await withIndex(async (index) => {
      expect(index.pending).toBe(1);
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 1 });
    }, name);
    expect(await d1Run(runId)).toMatchObject({ status: "running" });
  });
});

describe("run index: marks derived from events", () => {
  it("maps a run's lifecycle events to its run, approval and question entries", async () => {
    const runId = newRunId();
    const approvalId = newApprovalId();
    const context: RunIndexContext = {
      run_id: runId,
      channel_id: "C-events",
      user_id: "U7",
      delivery_id: "Ev-1",
      source: "slack",
      created_at: T0,
      request: "Set up billing monitoring",
    };
    const tool = { tool_name: "mcp__demo__create_dashboard", tool_call_id: "write-1" };
    await withIndex(async (index) => {
      expect(markEvent(index, context, "run_started", { user_id: "U7" }, T0)).toBe(true);
      expect(markEvent(index, context, "assistant_message", { text: "hi" }, T0)).toBe(false);
      expect(markEvent(index, context, "tool_started", { ...tool, approval_required: true }, T1)).toBe(false);
      markEvent(
        index,
        context,
        "approval_requested",
        {
          ...tool,
          approval_id: approvalId,
          level: "confirm",
          description: "Create",
          arguments: { password: "[redacted]" },
          expires_at: T2,
        },
        T1,
      );
      markEvent(index, context, "human_input_requested", { tool_call_id: "ask-1", question: "Who?", expires_at: T2 }, T1);
      markEvent(index, context, "human_input_requested", { tool_call_id: "ask-2", question: "Why?", expires_at: T2 }, T1);
      markEvent(index, context, "human_input_requested", { tool_call_id: "ask-3", question: "When?", expires_at: T2 }, T1);
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 5 });
      expect(await d1Run(runId)).toMatchObject({ status: "running", source: "slack", delivery_id: "Ev-1", user_id: "U7" });
      expect(await d1Approval(approvalId)).toMatchObject({ status: "pending", level: "confirm", requested_at: T1, expires_at: T2 });

      markEvent(index, context, "approval_resolved", { ...tool, approval_id: approvalId, decision: "approved", decided_by: "U9" }, T2);
      markEvent(index, context, "human_input_received", { tool_call_id: "ask-1", answered_by: "U9" }, T2);
      const ask = { tool_name: "human__ask", execution_status: "not_executed" };
      markEvent(index, context, "tool_execution", { ...ask, tool_call_id: "ask-2", reason: "expired" }, T2);
      markEvent(index, context, "tool_execution", { ...ask, tool_call_id: "ask-3", reason: "cancelled" }, T2);
      expect(markEvent(index, context, "tool_execution", { ...tool, execution_status: "not_executed", reason: "expired" }, T2)).toBe(false);
      expect(markEvent(index, context, "heartbeat", {}, T2)).toBe(false);
      markEvent(index, context, "run_failed", { error: { code: "cancelled", message: "The run was cancelled." } }, T2);
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 5 });
    });
    expect(await d1Run(runId)).toMatchObject({
      status: "failed",
      ended_at: T2,
      error_code: "cancelled",
      request: "Set up billing monitoring",
    });
    expect(await d1Approval(approvalId)).toMatchObject({ status: "approved", decided_by: "U9" });
    expect(await d1Input(runId, "ask-1")).toMatchObject({ status: "answered" });
    expect(await d1Input(runId, "ask-2")).toMatchObject({ status: "expired" });
    expect(await d1Input(runId, "ask-3")).toMatchObject({ status: "cancelled" });
  });
});

describe("run index: MCP questions mid-call (contract section 21)", () => {
  it("indexes each question by its input_id with its form and tool, and resolves only the one answered or ended", async () => {
    const runId = newRunId();
    const context: RunIndexContext = {
      run_id: runId,
      channel_id: "C-mcp",
      user_id: "U7",
      delivery_id: null,
      source: "api",
      created_at: T0,
    };
    const schema = { type: "object", properties: { team: { type: "string" } } };
    const asked = (key: string, round = 1) => ({
      tool_call_id: "call-1",
      question: `Which ${key}?`,
      expires_at: T2,
      input_id: `call-1:${round}:${key}`,
      requested_schema: schema,
    });
    const toolNameOf = (id: string) => (id === "call-1" ? "mcp__demo__ask_owner" : undefined);
    await withIndex(async (index) => {
      expect(markEvent(index, context, "human_input_requested", asked("team"), T1, toolNameOf)).toBe(true);
      markEvent(index, context, "human_input_requested", asked("owner"), T1, toolNameOf);
      markEvent(index, context, "human_input_requested", asked("budget"), T1, toolNameOf);
      // A human__ask of the same run, keyed by its tool_call_id as before.
      markEvent(index, context, "human_input_requested", { tool_call_id: "ask-1", question: "Who?", expires_at: T2 }, T1, toolNameOf);
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 4 });
      const team = await d1Question(runId, "call-1:1:team");
      expect(team).toMatchObject({
        input_key: "call-1:1:team",
        tool_call_id: "call-1",
        question: "Which team?",
        tool_name: "mcp__demo__ask_owner",
        status: "pending",
      });
      expect(JSON.parse(String(team?.requested_schema))).toEqual(schema);
      expect(await d1Input(runId, "ask-1")).toMatchObject({ input_key: "ask-1", requested_schema: null, tool_name: null });

      expect(
        markEvent(
          index,
          context,
          "human_input_received",
          { tool_call_id: "call-1", answered_by: "token:root", input_id: "call-1:1:team", action: "decline" },
          T2,
        ),
      ).toBe(true);
      // What the run's object marks when a round expires or the run is cancelled (no event says so).
      index.markInputResolved({ run_id: runId, tool_call_id: "call-1", input_id: "call-1:1:owner", status: "expired" });
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 2 });
    });
    expect(await d1Question(runId, "call-1:1:team")).toMatchObject({ status: "answered" });
    expect(await d1Question(runId, "call-1:1:owner")).toMatchObject({ status: "expired" });
    expect(await d1Question(runId, "call-1:1:budget")).toMatchObject({ status: "pending" });
    expect(await d1Input(runId, "ask-1")).toMatchObject({ status: "pending" });
  });
});

describe("run index: migration 0021 (one row per question)", () => {
  it("keeps every human__ask row written before it, status and gauge included, and then holds MCP questions beside them", async () => {
    const migration = (name: string) => {
      const found = env.TEST_MIGRATIONS.find((m) => m.name.startsWith(name));
      if (!found) throw new Error(`no migration ${name}`);
      return found.queries;
    };
    const aboutInputs = (q: string) => /\b(TABLE|ON) inputs\b/.test(q);
    const gauge = () => env.DB.prepare(`SELECT value FROM metric_counters WHERE name = 'aee_inputs_pending'`).first<{ value: number }>();
    // The table as migrations 0004 and 0011 made it, from their own files, with rows of the old shape.
    await env.DB.batch([env.DB.prepare(`DROP TABLE inputs`)]);
    await env.DB.batch([...migration("0004"), ...migration("0011")].filter(aboutInputs).map((q) => env.DB.prepare(q)));
    await env.DB.prepare(`UPDATE metric_counters SET value = 0 WHERE name = 'aee_inputs_pending'`).run();
    const runId = newRunId();
    const old = ["pending", "answered", "expired", "cancelled"].map((status, i) =>
      env.DB.prepare(
        `INSERT INTO inputs (run_id, tool_call_id, channel_id, question, requested_at, expires_at, status) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).bind(runId, `ask-${i}`, "C-old", `Q${i}?`, T1, T2, status),
    );
    await env.DB.batch(old);
    expect(await gauge()).toEqual({ value: 1 });

    await env.DB.batch(migration("0021").map((q) => env.DB.prepare(q)));

    const { results } = await env.DB.prepare(`SELECT * FROM inputs WHERE run_id = ? ORDER BY tool_call_id`).bind(runId).all();
    expect(results).toEqual(
      ["pending", "answered", "expired", "cancelled"].map((status, i) => ({
        run_id: runId,
        input_key: `ask-${i}`,
        tool_call_id: `ask-${i}`,
        input_id: null,
        channel_id: "C-old",
        question: `Q${i}?`,
        requested_schema: null,
        tool_name: null,
        requested_at: T1,
        expires_at: T2,
        status,
      })),
    );
    expect(await gauge()).toEqual({ value: 1 });
    // The gauge's triggers came back with the table, and the old rows resolve through the index as before.
    await withIndex(async (index) => {
      index.markInputResolved({ run_id: runId, tool_call_id: "ask-0", status: "answered" });
      index.markInputAsked(
        inputRow(runId, { tool_call_id: "call-9", input_id: "call-9:1:team", requested_schema: { type: "object", properties: {} } }),
      );
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 2 });
    });
    expect(await d1Input(runId, "ask-0")).toMatchObject({ status: "answered" });
    expect(await d1Question(runId, "call-9:1:team")).toMatchObject({ status: "pending", input_key: "call-9:1:team" });
    expect(await gauge()).toEqual({ value: 1 });
  });
});

describe("run index: the request's first words", () => {
  it("redacts before it cuts, so a secret split by the cut is still hidden, and cuts by characters with an ellipsis", () => {
    const secret = "sk-live-0123456789abcdefghijklmnop";
    const long = `${"a".repeat(REQUEST_PREVIEW_CHARS - 10)} ${secret} tail`;
    const preview = requestPreview(long);
    expect(preview).not.toContain("sk-live-0");
    expect(Array.from(preview).length).toBeLessThanOrEqual(REQUEST_PREVIEW_CHARS + 1);
    expect(requestPreview("  short  ")).toBe("short");
    const emoji = "😀".repeat(REQUEST_PREVIEW_CHARS + 5);
    expect(requestPreview(emoji)).toBe(`${"😀".repeat(REQUEST_PREVIEW_CHARS)}…`);
  });

  it("keeps the request a run was indexed with when it ends, and a completed run has no error code", async () => {
    const runId = newRunId();
    const context: RunIndexContext = {
      run_id: runId,
      channel_id: "C-events",
      user_id: "U7",
      delivery_id: null,
      source: "api",
      created_at: T0,
      request: "first words",
    };
    await withIndex(async (index) => {
      markEvent(index, context, "run_started", { user_id: "U7" }, T0);
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 1 });
      const { request: _dropped, ...without } = context;
      markEvent(index, without, "run_completed", { tool_calls: 0 }, T2);
      expect(await index.flush(env.DB)).toMatchObject({ status: "ok", written: 1 });
    });
    expect(await d1Run(runId)).toMatchObject({ status: "completed", request: "first words", error_code: null });
  });
});

describe("run index: when the object flushes again", () => {
  it("never while nothing is pending, at once after a full batch, with a growing bounded delay after failures", () => {
    expect(nextFlushDelayMs({ status: "ok", written: 3, remaining: 0 })).toBeNull();
    expect(nextFlushDelayMs({ status: "ok", written: 100, remaining: 4 })).toBe(0);
    const failed = { status: "failed" as const, written: 1, remaining: 2, error: "D1 down" };
    expect(nextFlushDelayMs(failed, 1)).toBe(1_000);
    expect(nextFlushDelayMs(failed, 3)).toBe(4_000);
    expect(nextFlushDelayMs(failed, 30)).toBe(60_000);
  });
});
