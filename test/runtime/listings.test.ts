// The listings across runs (contract section 15) over SELF.fetch, against
// the real D1 of miniflare. Index rows go in through the run index's own
// marks and flush (the write path the run objects use); mutation rows through
// the outcome ledger's functions. Proves the filters, newest-first order,
// cursors across pages with no item lost or repeated, the limit bounds, 400
// for bad input (tampered cursors included, never 500), the envelopes exactly
// as the contract lists them, and 503 storage_timeout for a stalled read.
import { env, runInDurableObject } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { handleListRuns } from "../../src/http/handlers/listings";
import { newApprovalId, newRunId } from "../../src/ids";
import { encodeCursor } from "../../src/listings/cursor";
import type { ListingDb } from "../../src/listings/listing-reads";
import { RunIndex } from "../../src/listings/run-index";
import { insertIntent, settle, toProjection } from "../../src/outcomes/mutation-outcomes";
import { markEvent } from "./run-events";
import { api, runTablesOf } from "./helpers";
import { checkpointRow } from "./outcome-rows";

/** Marks through a RunIndex in a fresh object's SQLite, then flushes them into D1, as a run object does. */
async function indexed(mark: (index: RunIndex) => void): Promise<void> {
  const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(newRunId()));
  await runInDurableObject(stub, async (_i, state) => {
    const index = new RunIndex(runTablesOf(state));
    mark(index);
    const flushed = await index.flush(env.DB);
    if (flushed.status !== "ok" || flushed.remaining !== 0) throw new Error(`flush did not finish: ${JSON.stringify(flushed)}`);
  });
}

const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 10, minute)).toISOString();

async function getJson(path: string): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await api(path);
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** Follows next_cursor from the first page to the last, with a bound. */
async function allPages(path: string, key: string): Promise<{ items: any[]; pages: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  for (let pages = 1; pages <= 50; pages++) {
    const sep = path.includes("?") ? "&" : "?";
    const { status, body } = await getJson(cursor === null ? path : `${path}${sep}cursor=${encodeURIComponent(cursor)}`);
    expect(status).toBe(200);
    items.push(...body[key]);
    if (body.next_cursor === null) return { items, pages };
    cursor = body.next_cursor;
  }
  throw new Error("more than 50 pages");
}

beforeEach(async () => {
  await env.DB.batch([
    env.DB.prepare(`DELETE FROM runs`),
    env.DB.prepare(`DELETE FROM approvals`),
    env.DB.prepare(`DELETE FROM inputs`),
    env.DB.prepare(`DELETE FROM mutation_outcomes`),
  ]);
});

describe("GET /api/runs", () => {
  it("lists newest first with channel and status filters, across pages, with the contract's envelope", async () => {
    const runs: { run_id: string; channel: string; status: "running" | "completed" | "failed"; minute: number }[] = [];
    for (let i = 0; i < 7; i++) {
      runs.push({
        run_id: newRunId(),
        channel: i % 2 === 0 ? "C-even" : "C-odd",
        status: i % 3 === 0 ? "running" : "completed",
        minute: i,
      });
    }
    // Two runs created in the same millisecond: the id breaks the tie, and paging must not lose either.
    runs.push({ run_id: newRunId(), channel: "C-even", status: "failed", minute: 3 });
    await indexed((index) => {
      for (const r of runs) {
        index.markRun({
          run_id: r.run_id,
          channel_id: r.channel,
          user_id: "U1",
          delivery_id: r.minute === 0 ? "Ev-0" : null,
          source: "api",
          status: r.status,
          created_at: at(r.minute),
          ...(r.status === "running" ? {} : { ended_at: at(r.minute + 1) }),
        });
      }
    });
    const newestFirst = [...runs].sort((a, b) => b.minute - a.minute || (a.run_id < b.run_id ? 1 : -1)).map((r) => r.run_id);

    const first = await getJson("/api/runs");
    expect(first.status).toBe(200);
    expect(Object.keys(first.body)).toEqual(["runs", "next_cursor"]);
    expect(first.body.next_cursor).toBeNull();
    expect(first.body.runs.map((r: any) => r.run_id)).toEqual(newestFirst);
    const oldest = first.body.runs.at(-1);
    expect(oldest).toEqual({
      run_id: runs[0]!.run_id,
      channel_id: "C-even",
      user_id: "U1",
      delivery_id: "Ev-0",
      source: "api",
      status: "running",
      created_at: at(0),
    });
    expect(first.body.runs.find((r: any) => r.status === "completed")).toHaveProperty("ended_at");

    for (const limit of [1, 2, 3]) {
      const paged = await allPages(`/api/runs?limit=${limit}`, "runs");
      expect(paged.items.map((r) => r.run_id)).toEqual(newestFirst);
      expect(paged.pages).toBe(Math.ceil(runs.length / limit));
    }

    const even = await allPages("/api/runs?channel_id=C-even&limit=2", "runs");
    expect(even.items.map((r) => r.run_id)).toEqual(newestFirst.filter((id) => runs.find((r) => r.run_id === id)!.channel === "C-even"));
    const running = await getJson("/api/runs?status=running");
    expect(running.body.runs.map((r: any) => r.run_id)).toEqual(
      newestFirst.filter((id) => runs.find((r) => r.run_id === id)!.status === "running"),
    );
    const both = await getJson("/api/runs?status=completed&channel_id=C-odd");
    expect(both.body.runs.length).toBeGreaterThan(0);
    expect(both.body.runs.every((r: any) => r.status === "completed" && r.channel_id === "C-odd")).toBe(true);
    expect((await getJson("/api/runs?channel_id=C-none")).body).toEqual({ runs: [], next_cursor: null });
  });

  it("carries the request's first words and a failed run's error code, and filters by requester", async () => {
    const [asked, cancelled, other] = [newRunId(), newRunId(), newRunId()];
    await indexed((index) => {
      const base = { channel_id: "C1", delivery_id: null, source: "api" as const };
      index.markRun({ ...base, run_id: asked, user_id: "U-ada", status: "running", created_at: at(1), request: "Set up billing" });
      index.markRun({
        ...base,
        run_id: cancelled,
        user_id: "U-ada",
        status: "failed",
        created_at: at(2),
        ended_at: at(3),
        error_code: "cancelled",
      });
      index.markRun({ ...base, run_id: other, user_id: "U-bob", status: "completed", created_at: at(4), ended_at: at(5) });
    });
    const ada = await getJson("/api/runs?user_id=U-ada");
    expect(ada.status).toBe(200);
    expect(ada.body.runs.map((r: any) => r.run_id)).toEqual([cancelled, asked]);
    expect(ada.body.runs[1]).toMatchObject({ request: "Set up billing" });
    expect(ada.body.runs[0]).toMatchObject({ status: "failed", error_code: "cancelled" });
    expect(ada.body.runs[0]).not.toHaveProperty("request");
    const bob = await getJson("/api/runs?user_id=U-bob&status=completed");
    expect(bob.body.runs.map((r: any) => r.run_id)).toEqual([other]);
    expect(bob.body.runs[0]).not.toHaveProperty("error_code");
    expect((await getJson("/api/runs?user_id=")).status).toBe(400);
  });

  it("answers 400 for a limit out of 1..200, a bad filter, an unknown or repeated parameter, and a cursor it did not make", async () => {
    await indexed((index) => {
      for (let i = 0; i < 3; i++) {
        index.markRun({
          run_id: newRunId(),
          channel_id: "C1",
          user_id: "U1",
          delivery_id: null,
          source: "api",
          status: "running",
          created_at: at(i),
        });
      }
    });
    expect((await getJson("/api/runs?limit=200")).status).toBe(200);
    expect((await getJson("/api/runs?limit=1")).status).toBe(200);
    const tampered = [
      "not base64!",
      "AAAA",
      encodeCursor(["only-one-part"]),
      encodeCursor(["a", "b", "c"]),
      btoa("{not json").replace(/=+$/, ""),
      btoa(JSON.stringify({ created_at: "x" })).replace(/=+$/, ""),
      btoa(JSON.stringify([1, 2])).replace(/=+$/, ""),
      "%FF%FE",
      "x".repeat(2_000),
    ];
    for (const query of [
      "limit=0",
      "limit=201",
      "limit=abc",
      "limit=1.5",
      "limit=",
      "status=pending",
      "channel_id=",
      "state=completed",
      "status=running&status=failed",
      ...tampered.map((c) => `cursor=${encodeURIComponent(c)}`),
    ]) {
      const res = await getJson(`/api/runs?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toBe("invalid_request");
      expect(typeof res.body.message, query).toBe("string");
    }
    const bad = await getJson(`/api/runs?cursor=${encodeCursor(["only-one-part"])}`);
    expect(bad.body.details).toEqual([expect.objectContaining({ path: "cursor", code: "invalid_cursor" })]);
    // The same cursor on another listing is still only a position: a well-formed key of the wrong listing is not a 500.
    const page = await getJson("/api/runs?limit=1");
    expect((await getJson(`/api/inputs?cursor=${page.body.next_cursor}`)).status).toBe(400);
    expect((await getJson(`/api/approvals?cursor=${page.body.next_cursor}`)).status).toBe(200);
  });

  it("needs the bearer token", async () => {
    const res = await api("/api/runs", { headers: { authorization: "Bearer wrong" } });
    expect(res.status).toBe(401);
  });

  it("answers 503 storage_timeout with Retry-After when D1 does not answer within STORAGE_WAIT_MS", async () => {
    const stalled: ListingDb = {
      prepare: () => {
        const statement = { bind: () => statement, all: () => new Promise<never>(() => {}) };
        return statement;
      },
    };
    const started = Date.now();
    const res = await handleListRuns(new URL("https://engine.test/api/runs"), stalled, 50);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await res.json()).toMatchObject({ error: "storage_timeout" });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("GET /api/approvals", () => {
  it("lists pending and resolved approvals newest first, redacted arguments and decided_by included", async () => {
    const runId = newRunId();
    const ids = [newApprovalId(), newApprovalId(), newApprovalId(), newApprovalId()];
    await indexed((index) => {
      ids.forEach((approvalId, i) => {
        index.markApprovalRequested({
          approval_id: approvalId,
          run_id: runId,
          channel_id: "C1",
          tool_call_id: `write-${i}`,
          tool_name: "mcp__demo__create_dashboard",
          level: i === 0 ? "confirm" : "approve",
          description: `Create dashboard ${i}`,
          arguments: { title: `D${i}`, token: "[redacted]" },
          requested_at: at(i),
          expires_at: at(i + 5),
          status: "pending",
        });
      });
      index.markApprovalResolved({ approval_id: ids[1]!, run_id: runId, status: "approved", decided_by: "U-approver" });
      index.markApprovalResolved({ approval_id: ids[2]!, run_id: runId, status: "expired" });
    });
    const all = await getJson("/api/approvals");
    expect(Object.keys(all.body)).toEqual(["approvals", "next_cursor"]);
    expect(all.body.approvals.map((a: any) => a.approval_id)).toEqual([...ids].reverse());
    expect(all.body.approvals.at(-1)).toEqual({
      approval_id: ids[0],
      run_id: runId,
      channel_id: "C1",
      tool_call_id: "write-0",
      tool_name: "mcp__demo__create_dashboard",
      level: "confirm",
      description: "Create dashboard 0",
      arguments: { title: "D0", token: "[redacted]" },
      requested_at: at(0),
      expires_at: at(5),
      status: "pending",
      // Marked without section 19's fields: one vote under the default rule, none counted yet; `hidden` unknown, so absent.
      required: 1,
      approvers: null,
      approvals: [],
    });

    const pending = await allPages("/api/approvals?status=pending&limit=1", "approvals");
    expect(pending.items.map((a) => a.approval_id)).toEqual([ids[3], ids[0]]);
    const resolved = await allPages("/api/approvals?status=resolved&limit=1", "approvals");
    expect(resolved.items.map((a) => [a.approval_id, a.status, a.decided_by])).toEqual([
      [ids[2], "expired", undefined],
      [ids[1], "approved", "U-approver"],
    ]);
    expect((await getJson("/api/approvals?status=approved")).status).toBe(400);
  });

  it("carries who asked and what for from the runs index, and a destructiveHint tool's mark, on approvals and questions", async () => {
    const runId = newRunId();
    const approvalId = newApprovalId();
    const context = {
      run_id: runId,
      channel_id: "C-asked",
      user_id: "U-ada",
      requested_by: "token:slack-app",
      on_behalf_of: "slack:T1:U-ada",
      delivery_id: null,
      source: "slack" as const,
      created_at: at(0),
      request: "please delete the old dashboard",
    };
    await indexed((index) => {
      markEvent(index, context, "run_started", {}, at(0));
      markEvent(
        index,
        context,
        "approval_requested",
        {
          approval_id: approvalId,
          tool_call_id: "del-1",
          tool_name: "mcp__demo__delete_dashboard",
          level: "confirm",
          description: "Delete a dashboard",
          arguments: { dashboard_id: "dash-1" },
          expires_at: at(9),
          annotations: { destructiveHint: true },
        },
        at(1),
      );
      markEvent(index, context, "human_input_requested", { tool_call_id: "ask-1", question: "Sure?", expires_at: at(9) }, at(2));
    });
    const asked = {
      user_id: "U-ada",
      requested_by: "token:slack-app",
      on_behalf_of: "slack:T1:U-ada",
      request: "please delete the old dashboard",
    };
    const [approval] = (await getJson("/api/approvals?status=pending")).body.approvals;
    expect(approval).toMatchObject({ approval_id: approvalId, destructive: true, ...asked });
    const [input] = (await getJson("/api/inputs?status=pending")).body.inputs;
    expect(input).toMatchObject({ tool_call_id: "ask-1", tool_name: "human__ask", ...asked });
  });
});

describe("GET /api/inputs", () => {
  it("lists questions newest first, filtered by pending or answered", async () => {
    const runA = newRunId();
    const runB = newRunId();
    await indexed((index) => {
      // The same model-chosen tool_call_id in two runs: two questions.
      for (const [i, runId] of [runA, runB].entries()) {
        index.markInputAsked({
          tool_call_id: "ask-1",
          run_id: runId,
          channel_id: "C1",
          question: `Q${i}`,
          requested_at: at(i),
          expires_at: at(9),
          status: "pending",
        });
      }
      index.markInputAsked({
        tool_call_id: "ask-2",
        run_id: runB,
        channel_id: "C1",
        question: "Q2",
        requested_at: at(2),
        expires_at: at(9),
        status: "pending",
      });
      index.markInputResolved({ run_id: runA, tool_call_id: "ask-1", status: "answered" });
      index.markInputResolved({ run_id: runB, tool_call_id: "ask-2", status: "cancelled" });
    });
    const all = await allPages("/api/inputs?limit=2", "inputs");
    expect(all.items.map((q) => [q.question, q.status])).toEqual([
      ["Q2", "cancelled"],
      ["Q1", "pending"],
      ["Q0", "answered"],
    ]);
    expect(all.items[1]).toEqual({
      tool_call_id: "ask-1",
      run_id: runB,
      channel_id: "C1",
      question: "Q1",
      // The tool that asks, named for every question (contract section 16).
      tool_name: "human__ask",
      requested_at: at(1),
      expires_at: at(9),
      status: "pending",
    });
    expect((await getJson("/api/inputs?status=pending")).body.inputs.map((q: any) => q.question)).toEqual(["Q1"]);
    expect((await getJson("/api/inputs?status=answered")).body.inputs.map((q: any) => q.question)).toEqual(["Q0"]);
    expect((await getJson("/api/inputs?status=expired")).status).toBe(400);
  });

  it("lists each MCP question of a call as its own item, with its input_id and form, beside the run's human__ask", async () => {
    const runId = newRunId();
    const schema = { type: "object", properties: { team: { type: "string" } }, required: ["team"] };
    const question = (key: string, minute: number) => ({
      tool_call_id: "call-1",
      run_id: runId,
      channel_id: "C1",
      question: `Which ${key}?`,
      input_id: `call-1:1:${key}`,
      requested_schema: schema,
      requested_at: at(minute),
      expires_at: at(9),
      status: "pending" as const,
      tool_name: "mcp__demo__ask_owner",
    });
    await indexed((index) => {
      index.markInputAsked(question("team", 1));
      index.markInputAsked(question("owner", 2));
      index.markInputAsked({
        tool_call_id: "call-1",
        run_id: runId,
        channel_id: "C1",
        question: "And you?",
        requested_at: at(3),
        expires_at: at(9),
        status: "pending",
      });
      index.markInputResolved({ run_id: runId, tool_call_id: "call-1", input_id: "call-1:1:team", status: "answered" });
    });
    const all = await allPages("/api/inputs?limit=1", "inputs");
    expect(all.items.map((q) => [q.input_id, q.status])).toEqual([
      [undefined, "pending"],
      ["call-1:1:owner", "pending"],
      ["call-1:1:team", "answered"],
    ]);
    // The item as the contract lists it, with the MCP tool that asks.
    expect(all.items[1]).toEqual({
      tool_call_id: "call-1",
      run_id: runId,
      channel_id: "C1",
      question: "Which owner?",
      input_id: "call-1:1:owner",
      requested_schema: schema,
      tool_name: "mcp__demo__ask_owner",
      requested_at: at(2),
      expires_at: at(9),
      status: "pending",
    });
    expect((await getJson("/api/inputs?status=pending")).body.inputs.map((q: any) => q.question)).toEqual(["And you?", "Which owner?"]);
  });
});

describe("GET /api/mutations", () => {
  it("lists durable outcomes by state and channel, in the projection GET /api/mutations/{id} answers", async () => {
    const DIGEST = `sha256:${"ab".repeat(32)}`;
    const made: { id: string; state: string; channel: string }[] = [];
    for (let i = 0; i < 5; i++) {
      const channel = i < 3 ? "C-a" : "C-b";
      const { row } = await insertIntent(env.DB, {
        runId: newRunId(),
        channelId: channel,
        deliveryId: null,
        toolCallId: `write-${i}`,
        approvalId: i === 4 ? null : newApprovalId(),
        toolName: "mcp__demo__create_dashboard",
        argumentsDigest: DIGEST,
        approvedBy: i === 4 ? "automatic" : "U-listing",
        approvedAt: at(i),
        createdAt: at(i),
      });
      let state = "unresolved";
      if (i % 2 === 1) {
        await checkpointRow(env.DB, row.mutation_id);
        await settle(env.DB, row.mutation_id, { state: "outcome_unknown", error: { code: "transport_timeout" }, settledAt: at(i + 1) });
        state = "outcome_unknown";
      }
      made.push({ id: row.mutation_id, state, channel });
    }
    const newestFirst = [...made].reverse();
    const all = await allPages("/api/mutations?limit=2", "mutations");
    expect(all.items.map((m) => m.mutation_id)).toEqual(newestFirst.map((m) => m.id));
    for (const item of all.items) {
      const one = await getJson(`/api/mutations/${item.mutation_id}`);
      expect(item).toEqual(one.body);
    }
    const unknown = await getJson("/api/mutations?state=outcome_unknown");
    expect(Object.keys(unknown.body)).toEqual(["mutations", "next_cursor"]);
    expect(unknown.body.mutations.map((m: any) => m.mutation_id)).toEqual(
      newestFirst.filter((m) => m.state === "outcome_unknown").map((m) => m.id),
    );
    const row = await env.DB.prepare(`SELECT * FROM mutation_outcomes WHERE mutation_id = ?`).bind(made[3]!.id).first();
    expect(unknown.body.mutations[0]).toEqual(toProjection(row as any));
    const channelB = await getJson("/api/mutations?channel_id=C-b&state=unresolved");
    expect(channelB.body.mutations.map((m: any) => m.mutation_id)).toEqual([made[4]!.id]);
    expect(channelB.body.mutations[0].approval_id).toBeNull();
    expect((await getJson("/api/mutations?state=settled")).status).toBe(400);
    expect((await getJson("/api/mutations?limit=500")).status).toBe(400);
  });
});

describe("GET /api/openapi.json", () => {
  it("serves an OpenAPI 3.1 document that includes the listings", async () => {
    const { status, body } = await getJson("/api/openapi.json");
    expect(status).toBe(200);
    expect(body.openapi).toBe("3.1.0");
    for (const path of ["/api/runs", "/api/approvals", "/api/inputs", "/api/mutations"]) expect(body.paths[path]?.get).toBeDefined();
  });
});
