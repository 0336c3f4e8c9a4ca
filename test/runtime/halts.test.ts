// Halts (contract section 23) in the real D1 of miniflare and through the
// real Worker and RunObject: the checkpoint's one statement refuses under an
// active halt in scope (every scope kind) and stamps dispatched_at from D1's
// clock; release votes are counted exactly once and release exactly once
// under concurrency; the routes' shapes, roles and refusals (400
// invalid_scope with details, 404, 403); a run's approve while halted is 409
// halted and changes nothing, a deny is 200; a mutation proposed while halted
// ends not_executed(halted) right after tool_started with no approval and no
// row; a trigger under `all` is 409, a known delivery identity still gets its
// receipt; halt.engage / halt.release are audited; aee_halts_active counts.
import { env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { insertIntent, markDispatchedUnlessPrior, newMutationId, getOutcome } from "../../src/outcomes/mutation-outcomes";
import { engageHalt, voteRelease } from "../../src/outcomes/halts";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";
import type { HaltScope } from "../../src/policy/halt-scope";
import { api, apiAs, namedToken, openEvents, SseReader, trigger } from "./helpers";

const CREATE = "mcp__demo__create_dashboard";
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Every halt released, so no test's halt reaches another (D1 is shared within the file). */
afterEach(async () => {
  await env.DB.prepare(`UPDATE halts SET status = 'released', released_at = '2000-01-01T00:00:00.000Z' WHERE status = 'active'`).run();
});

interface RowFacts {
  tool?: string;
  server?: string | null;
  requestedBy?: string;
  onBehalfOf?: string | null;
  requesterPerson?: string | null;
}

async function intentRow(facts: RowFacts = {}): Promise<string> {
  const mutationId = newMutationId();
  await insertIntent(env.DB, {
    mutationId,
    runId: newRunId(),
    channelId: "C-halts",
    deliveryId: null,
    toolCallId: newToolCallId(),
    approvalId: newApprovalId(),
    toolName: facts.tool ?? CREATE,
    argumentsDigest: `sha256:${crypto.randomUUID().replaceAll("-", "").repeat(2)}`,
    approvedBy: "token:root",
    approvedAt: new Date().toISOString(),
    server: facts.server === undefined ? "demo" : facts.server,
    requestedBy: facts.requestedBy ?? "token:root",
    onBehalfOf: facts.onBehalfOf ?? null,
    requesterPerson: facts.requesterPerson ?? null,
  });
  return mutationId;
}

async function halt(scope: HaltScope, scopePerson: string | null = null, required = 1) {
  return engageHalt(env.DB, { scope, scopePerson, reason: "test", engagedBy: "token:root", required, cancelRuns: false });
}

async function release(haltId: string): Promise<void> {
  await voteRelease(env.DB, haltId, "token:root", "token:root");
}

async function json(res: Response): Promise<any> {
  return res.json();
}

describe("the checkpoint's halt clause", () => {
  it("refuses a row under an active halt of any scope kind that covers it, naming the halt; leaves it undispatched", async () => {
    const cases: { scope: HaltScope; person?: string; row: RowFacts }[] = [
      { scope: { kind: "all" }, row: {} },
      { scope: { kind: "server", value: "demo" }, row: {} },
      { scope: { kind: "tool", value: CREATE }, row: {} },
      { scope: { kind: "principal", value: "token:agent-1" }, row: { requestedBy: "token:agent-1" } },
      {
        scope: { kind: "principal", value: "access:ann@example.com" },
        row: { requestedBy: "token:adapter", onBehalfOf: "access:ann@example.com" },
      },
      // The same person's other credential: a halt on access:bob also covers a row whose person is bob.
      {
        scope: { kind: "principal", value: "access:bob@example.com" },
        person: "access:bob@example.com",
        row: { requestedBy: "token:bobs-own", requesterPerson: "access:bob@example.com" },
      },
    ];
    for (const { scope, person, row } of cases) {
      const mutationId = await intentRow(row);
      const engaged = await halt(scope, person ?? null);
      const refused = await markDispatchedUnlessPrior(env.DB, mutationId);
      expect(refused, JSON.stringify(scope)).toMatchObject({ ok: false, error: "halted", halt_id: engaged.halt_id });
      const stored = await getOutcome(env.DB, mutationId);
      expect(stored).toMatchObject({ state: "unresolved", dispatched: 0, dispatched_at: null });
      await release(engaged.halt_id);
      // Released: the same row's checkpoint commits, stamped by D1's clock after the release.
      const committed = await markDispatchedUnlessPrior(env.DB, mutationId);
      expect(committed.ok).toBe(true);
      const after = await getOutcome(env.DB, mutationId);
      expect(after?.dispatched).toBe(1);
      expect(after?.dispatched_at).toMatch(ISO_MS);
      const released = await env.DB.prepare(`SELECT released_at FROM halts WHERE halt_id = ?`)
        .bind(engaged.halt_id)
        .first<{ released_at: string }>();
      expect(after!.dispatched_at! >= released!.released_at).toBe(true);
    }
  });

  it("does not refuse a row outside the halt's scope", async () => {
    const cases: { scope: HaltScope; person?: string; row: RowFacts }[] = [
      { scope: { kind: "server", value: "other" }, row: {} },
      { scope: { kind: "tool", value: "mcp__demo__update_dashboard" }, row: {} },
      { scope: { kind: "principal", value: "token:someone-else" }, row: { requestedBy: "token:agent-2" } },
      {
        scope: { kind: "principal", value: "token:nobody" },
        person: null as never,
        row: { requestedBy: "token:agent-3", requesterPerson: null },
      },
    ];
    for (const { scope, person, row } of cases) {
      const mutationId = await intentRow(row);
      const engaged = await halt(scope, person ?? null);
      const result = await markDispatchedUnlessPrior(env.DB, mutationId);
      expect(result.ok, JSON.stringify(scope)).toBe(true);
      expect((await getOutcome(env.DB, mutationId))?.dispatched_at).toMatch(ISO_MS);
      await release(engaged.halt_id);
    }
  });

  it("a halt committed after a checkpoint finds the row dispatched before its engaged_at; one committed before refuses it", async () => {
    const early = await intentRow();
    expect((await markDispatchedUnlessPrior(env.DB, early)).ok).toBe(true);
    const engaged = await halt({ kind: "all" });
    const late = await intentRow();
    expect(await markDispatchedUnlessPrior(env.DB, late)).toMatchObject({ ok: false, error: "halted" });
    const earlyRow = await getOutcome(env.DB, early);
    expect(earlyRow!.dispatched_at! <= engaged.engaged_at).toBe(true);
    expect(engaged.engaged_at).toMatch(ISO_MS);
  });
});

describe("release votes", () => {
  it("count each person once and release exactly once, at the required-th distinct person, under concurrency", async () => {
    for (const required of [1, 2, 3, 5]) {
      const engaged = await halt({ kind: "tool", value: CREATE }, null, required);
      const voters = Array.from({ length: 8 }, (_, i) => `access:voter${i}@example.com`);
      // Every voter twice, all at once.
      const votes = await Promise.all([...voters, ...voters].map((v) => voteRelease(env.DB, engaged.halt_id, v, v)));
      const counted = votes.filter((v) => v.kind === "voted" && v.counted).length;
      expect(counted, `required ${required}`).toBe(required);
      const row = await env.DB.prepare(
        `SELECT status, released_by, released_at, (SELECT COUNT(*) FROM halt_releases r WHERE r.halt_id = halts.halt_id) AS n FROM halts WHERE halt_id = ?`,
      )
        .bind(engaged.halt_id)
        .first<{ status: string; released_by: string; released_at: string; n: number }>();
      expect(row).toMatchObject({ status: "released", n: required });
      expect(voters).toContain(row!.released_by);
      expect(row!.released_at).toMatch(ISO_MS);
    }
  });

  it("below the quorum the halt stays active, and a repeated vote by the same person is not counted", async () => {
    const engaged = await halt({ kind: "all" }, null, 2);
    const first = await voteRelease(env.DB, engaged.halt_id, "access:a@example.com", "access:a@example.com");
    const again = await voteRelease(env.DB, engaged.halt_id, "access:a@example.com", "token:a-other");
    expect(first).toMatchObject({ kind: "voted", counted: true, row: { status: "active", releases: 1 } });
    expect(again).toMatchObject({ kind: "voted", counted: false, row: { status: "active", releases: 1 } });
  });
});

describe("the halt routes", () => {
  it("engage answers 201 with the contract's fields; bad input is 400 invalid_scope or invalid_request with details", async () => {
    const bad: [unknown, string][] = [
      [{ scope: "everything", reason: "r" }, "invalid_scope"],
      [{ scope: "server:nope", reason: "r" }, "invalid_scope"],
      [{ scope: "tool:mcp__nope__x", reason: "r" }, "invalid_scope"],
      [{ scope: "tool:not-a-tool", reason: "r" }, "invalid_scope"],
      [{ scope: "principal:someone", reason: "r" }, "invalid_scope"],
      [{ scope: "server:", reason: "r" }, "invalid_scope"],
      [{ scope: "tool:mcp__demo__create_dashboard", reason: "r", cancel_runs: true }, "invalid_scope"],
      [{ scope: "server:demo", reason: "r", cancel_runs: true }, "invalid_scope"],
      [{ scope: "all", reason: "r", cancel_runs: "yes" }, "invalid_request"],
      [{ scope: "all", reason: "" }, "invalid_request"],
      [{ scope: "all", reason: "x".repeat(501) }, "invalid_request"],
      [{ scope: "all" }, "invalid_request"],
      [{ scope: "all", reason: "r", extra: 1 }, "invalid_request"],
    ];
    for (const [body, code] of bad) {
      const res = await api("/api/halts", { method: "POST", body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const error = await json(res);
      expect(error.error, JSON.stringify(body)).toBe(code);
      expect(error.details, JSON.stringify(body)).toBeDefined();
    }
    expect(await env.DB.prepare(`SELECT COUNT(*) AS n FROM halts WHERE status = 'active'`).first("n")).toBe(0);

    const res = await api("/api/halts", {
      method: "POST",
      body: JSON.stringify({ scope: "server:demo", reason: "dashboards look wrong; key sk_live_0123456789abcdefghijklmn" }),
    });
    expect(res.status).toBe(201);
    const engaged = await json(res);
    expect(Object.keys(engaged).sort()).toEqual(["engaged_at", "engaged_by", "halt_id", "reason", "scope", "status"]);
    expect(engaged).toMatchObject({ scope: "server:demo", engaged_by: "token:root", status: "active" });
    expect(engaged.engaged_at).toMatch(ISO_MS);
    expect(engaged.reason).not.toContain("sk_live_0123456789abcdefghijklmn");

    const one = await json(await api(`/api/halts/${engaged.halt_id}`));
    expect(one).toMatchObject({ ...engaged, releases: 0, required: 1 });
    const listed = await json(await api("/api/halts?status=active"));
    expect(listed).toMatchObject({ halts: [{ halt_id: engaged.halt_id }], next_cursor: null });
    expect((await api("/api/halts/halt_01ARZ3NDEKTSV4RRFFQ69G5FAV")).status).toBe(404);
    expect((await api("/api/halts/halt_01ARZ3NDEKTSV4RRFFQ69G5FAV", { method: "DELETE" })).status).toBe(404);
    expect((await api("/api/halts?status=paused")).status).toBe(400);

    const metrics = await (await api("/api/metrics")).text();
    expect(metrics).toMatch(/^aee_halts_active 1$/m);

    const released = await api(`/api/halts/${engaged.halt_id}`, { method: "DELETE" });
    expect(released.status).toBe(200);
    const body = await json(released);
    expect(body).toMatchObject({ halt_id: engaged.halt_id, status: "released", released_by: "token:root" });
    expect(body.released_at).toMatch(ISO_MS);
    // A vote on a released halt answers the same.
    expect(await json(await api(`/api/halts/${engaged.halt_id}`, { method: "DELETE" }))).toEqual(body);
    expect(await json(await api("/api/halts?status=active"))).toMatchObject({ halts: [] });
    expect(await (await api("/api/metrics")).text()).toMatch(/^aee_halts_active 0$/m);

    const entries = [
      ...(await json(await api("/api/audit?action=halt.engage&limit=200"))).entries,
      ...(await json(await api("/api/audit?action=halt.release&limit=200"))).entries,
    ].filter((e: { target: string }) => e.target === engaged.halt_id);
    expect(entries.map((e: { action: string }) => e.action).sort()).toEqual(["halt.engage", "halt.release"]);
    const releaseEntry = entries.find((e: { action: string }) => e.action === "halt.release");
    expect(releaseEntry.details).toEqual({ releases: 1, required: 1 });
  });

  it("roles: an approver engages, only an admin releases, a viewer lists; a principal: halt's own principal may not release it", async () => {
    const approver = await namedToken(["approver"], "halter");
    const viewer = await namedToken(["viewer"], "watcher");
    const admin = await namedToken(["admin"], "boss");
    const post = (token: string, body: unknown) => apiAs(token, "/api/halts", { method: "POST", body: JSON.stringify(body) });
    expect((await post(viewer.token, { scope: "all", reason: "r" })).status).toBe(403);
    const engaged = await json(await post(approver.token, { scope: `principal:${admin.principal}`, reason: "r" }));
    expect(engaged.engaged_by).toBe(approver.principal);
    expect((await apiAs(viewer.token, "/api/halts")).status).toBe(200);
    expect((await apiAs(approver.token, `/api/halts/${engaged.halt_id}`, { method: "DELETE" })).status).toBe(403);
    const self = await apiAs(admin.token, `/api/halts/${engaged.halt_id}`, { method: "DELETE" });
    expect(self.status).toBe(403);
    expect((await json(self)).error).toBe("self_release_forbidden");
    expect((await api(`/api/halts/${engaged.halt_id}`, { method: "DELETE" })).status).toBe(200);
  });
});

/** Reads until `found` holds for the events read so far, with a bound. */
async function readUntilFound(reader: SseReader, found: (events: any[]) => boolean, bound = 400): Promise<any[]> {
  for (let i = 0; i < bound; i++) {
    const events = reader.events.map((e) => JSON.parse(e.data));
    if (found(events) || reader.done) return events;
    await reader.readUntil(reader.events.length + 1);
  }
  throw new Error("the awaited events did not arrive");
}

describe("a run under a halt", () => {
  it("approve is 409 halted and changes nothing, deny is taken; released, a new approval runs", async () => {
    const { json: receipt } = await trigger({
      message: "halted approvals",
      channel_id: "C-halted",
      script: [
        {
          tool_calls: [
            { tool_name: CREATE, tool_call_id: "w-1", arguments: { title: "Halted one" } },
            { tool_name: CREATE, tool_call_id: "w-2", arguments: { title: "Denied one" } },
          ],
        },
        { text: "Done." },
      ],
    });
    const runId: string = receipt.run_id;
    const reader = new SseReader(await openEvents(runId));
    const asked = (await readUntilFound(reader, (es) => es.filter((e) => e.type === "approval_requested").length === 2)).filter(
      (e) => e.type === "approval_requested",
    );
    const engaged = await json(await api("/api/halts", { method: "POST", body: JSON.stringify({ scope: `tool:${CREATE}`, reason: "r" }) }));
    const pending = async () => (await json(await api(`/api/runs/${runId}`))).pending_approvals.length;
    const approve = await api(`/api/runs/${runId}/approvals/${asked[0].approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(approve.status).toBe(409);
    expect(await json(approve)).toMatchObject({ error: "halted", halt_id: engaged.halt_id });
    expect(await pending()).toBe(2);
    // Order of refusals: an unknown approval is still 404 under a halt.
    expect(
      (await api(`/api/runs/${runId}/approvals/approval_unknown`, { method: "POST", body: JSON.stringify({ decision: "approve" }) }))
        .status,
    ).toBe(404);
    // Nothing changed: no approval event was written for the refused approve.
    expect(
      reader.events.map((e) => JSON.parse(e.data)).filter((e) => e.type === "approval_resolved" || e.type === "approval_vote"),
    ).toEqual([]);
    const deny = await api(`/api/runs/${runId}/approvals/${asked[1].approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny" }),
    });
    expect(deny.status).toBe(200);
    // Released: the waiting approval can be approved and runs.
    expect((await api(`/api/halts/${engaged.halt_id}`, { method: "DELETE" })).status).toBe(200);
    const ok = await api(`/api/runs/${runId}/approvals/${asked[0].approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(ok.status).toBe(200);
    const events = await readUntilFound(reader, (es) => es.some((e) => e.type === "run_completed"));
    const executions = events.filter((e) => e.type === "tool_execution");
    expect(executions.map((e) => [e.tool_call_id, e.execution_status, e.reason])).toEqual([
      ["w-2", "not_executed", "denied"],
      ["w-1", "executed", undefined],
    ]);
  });

  it("a mutation proposed while halted ends not_executed(halted) right after tool_started: no approval, no row; a read-only call goes on", async () => {
    const engaged = await json(await api("/api/halts", { method: "POST", body: JSON.stringify({ scope: "server:demo", reason: "r" }) }));
    const { json: receipt } = await trigger({
      message: "proposed while halted",
      channel_id: "C-halted-2",
      script: [
        {
          tool_calls: [
            { tool_name: CREATE, tool_call_id: "w-1", arguments: { title: "Never asked" } },
            { tool_name: "mcp__demo__list_dashboards", tool_call_id: "r-1", arguments: {} },
          ],
        },
        { text: "Done." },
      ],
    });
    const runId: string = receipt.run_id;
    const reader = new SseReader(await openEvents(runId));
    const events = await readUntilFound(reader, (es) => es.some((e) => e.type === "run_completed" || e.type === "run_failed"));
    const ofWrite = events.filter((e) => e.tool_call_id === "w-1").map((e) => e.type);
    expect(ofWrite).toEqual(["tool_started", "tool_execution", "tool_completed"]);
    const execution = events.find((e) => e.type === "tool_execution" && e.tool_call_id === "w-1");
    expect(execution).toMatchObject({ execution_status: "not_executed", reason: "halted", halt_id: engaged.halt_id });
    expect(execution.mutation_id).toBeUndefined();
    expect(events.find((e) => e.type === "tool_execution" && e.tool_call_id === "r-1")).toMatchObject({ execution_status: "executed" });
    expect(await json(await api(`/api/runs/${runId}/mutations`))).toMatchObject({ mutations: [] });
  });

  it("a trigger under `all` is 409 halted; a known delivery identity still gets its receipt", async () => {
    const first = await trigger({ message: "before", delivery_id: "halt-delivery-1", script: [{ text: "hi" }] });
    expect(first.status).toBe(202);
    const engaged = await json(await api("/api/halts", { method: "POST", body: JSON.stringify({ scope: "all", reason: "stop" }) }));
    const refused = await trigger({ message: "during", script: [{ text: "hi" }] });
    expect(refused.status).toBe(409);
    expect(refused.json).toMatchObject({ error: "halted", halt_id: engaged.halt_id });
    const again = await trigger({ message: "before", delivery_id: "halt-delivery-1", script: [{ text: "hi" }] });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ status: "duplicate", run_id: first.json.run_id });
    // A halt of another principal does not refuse this one.
    await api(`/api/halts/${engaged.halt_id}`, { method: "DELETE" });
    await api("/api/halts", { method: "POST", body: JSON.stringify({ scope: "principal:token:someone-else", reason: "r" }) });
    expect((await trigger({ message: "other", script: [{ text: "hi" }] })).status).toBe(202);
  });
});
