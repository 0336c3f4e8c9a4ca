// Contract section 25's two rules at the door, through the real Worker and
// RunObject in miniflare:
//  - `via` and `client_ip` on the entries a run writes itself: an approve, a
//    human__ask answer and a cancel made through a console session are `via`
//    `console`, the same through a token `api`, each with the client's
//    CF-Connecting-IP; so does the trigger's run.trigger; a halt's engage and
//    release votes record theirs too.
//  - Text that is not valid Unicode is 400 where it enters (a decision's
//    `reason`, a reconcile's `evidence`, a halt's `reason`): a lone surrogate
//    (JSON's `\ud800` escape) and bytes that are not UTF-8 at all; nothing
//    is stored.
import { env, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";
import { insertIntent, settle } from "../../src/outcomes/mutation-outcomes";
import { api, apiAs, namedToken, TOKEN } from "./helpers";
import { checkpointRow } from "./outcome-rows";

const ORIGIN = "https://engine.test";
const CREATE = "mcp__demo__create_dashboard";
const UNKNOWN_RUN = "run_01ARZ3NDEKTSV4RRFFQ69G5FAV";
const UNKNOWN_MUTATION = "mut_01ARZ3NDEKTSV4RRFFQ69G5FAV";

afterEach(async () => {
  await env.DB.prepare(`UPDATE halts SET status = 'released', released_at = '2000-01-01T00:00:00.000Z' WHERE status = 'active'`).run();
});

/** The rows of audit_log for `target`, as stored (sealed or not). */
async function rowsOf(target: string): Promise<{ action: string; principal: string; via: string; client_ip: string | null }[]> {
  let rows: { action: string; principal: string; via: string; client_ip: string | null }[] = [];
  // The run's entries reach D1 through its pending marks, flushed from its alarm a moment later.
  await expect
    .poll(
      async () => {
        rows = (
          await env.DB.prepare("SELECT action, principal, via, client_ip FROM audit_log WHERE target = ? OR target LIKE ? ORDER BY rowid")
            .bind(target, `${target}/%`)
            .all<any>()
        ).results;
        return rows.map((r) => r.action);
      },
      { timeout: 5_000, interval: 25 },
    )
    .toEqual(expect.arrayContaining(["approval.decide", "input.answer", "run.cancel"]));
  return rows;
}

async function pending(runId: string, key: "pending_approvals" | "pending_inputs"): Promise<any> {
  let item: any;
  await expect
    .poll(async () => {
      item = (await (await api(`/api/runs/${runId}`)).json<any>())[key][0];
      return item !== undefined;
    })
    .toBe(true);
  return item;
}

/** A console session signed in with `token`: its cookie. */
async function consoleCookie(token: string): Promise<string> {
  const res = await SELF.fetch(`${ORIGIN}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  expect(res.status).toBe(204);
  return res.headers.get("set-cookie")!.split(";")[0]!;
}

/** One run waiting on an approval of CREATE, then a human__ask; triggered by the root token with `headers`. */
async function waitingRun(headers: Record<string, string> = {}): Promise<string> {
  const res = await api("/api/trigger", {
    method: "POST",
    headers,
    body: JSON.stringify({
      message: "origins",
      script: [
        { tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: { title: "origin" } }] },
        { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "?" } }] },
        { text: "done", delay_ms: 60_000 },
      ],
    }),
  });
  expect(res.status).toBe(202);
  return (await res.json<any>()).run_id;
}

describe("via and client_ip on a run's own audit entries", () => {
  it("an approve, an answer and a cancel through the console are via console with the client's address", async () => {
    const approver = await namedToken(["approver"], "via-console");
    const cookie = await consoleCookie(approver.token);
    const runId = await waitingRun();
    const headers = { cookie, origin: ORIGIN, "content-type": "application/json", "cf-connecting-ip": "198.51.100.20" };
    const approval = await pending(runId, "pending_approvals");
    const decided = await SELF.fetch(`${ORIGIN}/api/runs/${runId}/approvals/${approval.approval_id}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ decision: "deny" }),
    });
    expect(decided.status).toBe(200);
    await pending(runId, "pending_inputs");
    const answered = await SELF.fetch(`${ORIGIN}/api/runs/${runId}/inputs/ask-1`, { method: "POST", headers, body: '{"answer":"x"}' });
    expect(answered.status).toBe(200);
    expect((await SELF.fetch(`${ORIGIN}/api/runs/${runId}/cancel`, { method: "POST", headers })).status).toBe(202);
    const rows = await rowsOf(runId);
    for (const action of ["approval.decide", "input.answer", "run.cancel"])
      expect(rows.find((r) => r.action === action)).toEqual({
        action,
        principal: approver.principal,
        via: "console",
        client_ip: "198.51.100.20",
      });
    // The trigger came through the API (the root token).
    expect(rows.find((r) => r.action === "run.trigger")).toMatchObject({ via: "api" });
  });

  it("the same through a token are via api with the client's address", async () => {
    const approver = await namedToken(["approver"], "via-api");
    const headers = { "cf-connecting-ip": "203.0.113.30" };
    const runId = await waitingRun({ ...headers, "content-type": "application/json" });
    const approval = await pending(runId, "pending_approvals");
    const path = `/api/runs/${runId}/approvals/${approval.approval_id}`;
    expect((await apiAs(approver.token, path, { method: "POST", headers, body: JSON.stringify({ decision: "deny" }) })).status).toBe(200);
    await pending(runId, "pending_inputs");
    expect(
      (await apiAs(approver.token, `/api/runs/${runId}/inputs/ask-1`, { method: "POST", headers, body: '{"answer":"x"}' })).status,
    ).toBe(200);
    expect((await apiAs(approver.token, `/api/runs/${runId}/cancel`, { method: "POST", headers })).status).toBe(202);
    const rows = await rowsOf(runId);
    for (const action of ["approval.decide", "input.answer", "run.cancel"])
      expect(rows.find((r) => r.action === action)).toEqual({
        action,
        principal: approver.principal,
        via: "api",
        client_ip: "203.0.113.30",
      });
    // The trigger's entry records its own origin too (contract section 25).
    expect(rows.find((r) => r.action === "run.trigger")).toEqual({
      action: "run.trigger",
      principal: "token:root",
      via: "api",
      client_ip: "203.0.113.30",
    });
  });

  it("a halt engaged from the console and released through the API record where each came from", async () => {
    const cookie = await consoleCookie(TOKEN);
    const engaged = await SELF.fetch(`${ORIGIN}/api/halts`, {
      method: "POST",
      headers: { cookie, origin: ORIGIN, "content-type": "application/json", "cf-connecting-ip": "198.51.100.21" },
      body: JSON.stringify({ scope: "server:demo", reason: "from the console" }),
    });
    expect(engaged.status).toBe(201);
    const { halt_id } = await engaged.json<any>();
    expect((await api(`/api/halts/${halt_id}`, { method: "DELETE", headers: { "cf-connecting-ip": "203.0.113.31" } })).status).toBe(200);
    const rows = (
      await env.DB.prepare("SELECT action, via, client_ip FROM audit_log WHERE target = ? ORDER BY rowid").bind(halt_id).all<any>()
    ).results;
    expect(rows).toEqual([
      { action: "halt.engage", via: "console", client_ip: "198.51.100.21" },
      { action: "halt.release", via: "api", client_ip: "203.0.113.31" },
    ]);
  });
});

describe("via and client_ip on a reconciliation", () => {
  it("a reconcile through the console is via console with the client's address", async () => {
    const reconciler = await namedToken(["reconciler"], "via-rec");
    const { row } = await insertIntent(env.DB, {
      runId: newRunId(),
      channelId: "C-origin",
      deliveryId: null,
      toolCallId: newToolCallId(),
      approvalId: newApprovalId(),
      toolName: CREATE,
      argumentsDigest: `sha256:${crypto.randomUUID().replaceAll("-", "").repeat(2)}`,
      approvedBy: "token:root",
      approvedAt: new Date().toISOString(),
    });
    await checkpointRow(env.DB, row.mutation_id);
    await settle(env.DB, row.mutation_id, {
      state: "outcome_unknown",
      reason: "transport_timeout",
      error: { code: "transport_timeout", message: "no answer" },
      settledAt: new Date().toISOString(),
    });
    const cookie = await consoleCookie(reconciler.token);
    const res = await SELF.fetch(`${ORIGIN}/api/mutations/${row.mutation_id}/reconcile`, {
      method: "POST",
      headers: { cookie, origin: ORIGIN, "content-type": "application/json", "cf-connecting-ip": "198.51.100.22" },
      body: JSON.stringify({ outcome: "completed", evidence: "seen it" }),
    });
    expect(res.status).toBe(200);
    const entry = await env.DB.prepare("SELECT principal, via, client_ip FROM audit_log WHERE action = 'mutation.reconcile' AND target = ?")
      .bind(row.mutation_id)
      .first();
    expect(entry).toEqual({ principal: reconciler.principal, via: "console", client_ip: "198.51.100.22" });
  });
});

/** A JSON body as bytes, with `raw` (bytes) spliced in where the text has `@@`. */
function bytesWith(json: string, raw: number[]): Uint8Array {
  const [before, after] = json.split("@@") as [string, string];
  const enc = new TextEncoder();
  return new Uint8Array([...enc.encode(before), ...raw, ...enc.encode(after)]);
}

describe("text that is not valid Unicode is 400 where it enters", () => {
  const entries: [string, string, string][] = [
    ["a halt's reason", "/api/halts", '{"scope":"all","reason":"halt @@"}'],
    ["a decision's reason", `/api/runs/${UNKNOWN_RUN}/approvals/appr_1`, '{"decision":"deny","reason":"no @@"}'],
    ["a reconcile's evidence", `/api/mutations/${UNKNOWN_MUTATION}/reconcile`, '{"outcome":"completed","evidence":"seen @@"}'],
  ];

  it.each(entries)("%s: a lone surrogate is 400 unstorable_text naming the field", async (_what, path, body) => {
    const res = await api(path, { method: "POST", body: body.replace("@@", "\\ud800") });
    expect(res.status).toBe(400);
    const error = await res.json<any>();
    expect(error.error).toBe("invalid_request");
    expect(error.details[0]).toMatchObject({
      code: "unstorable_text",
      path: path === "/api/halts" ? "reason" : body.includes("evidence") ? "evidence" : "reason",
    });
  });

  it.each(entries)("%s: bytes that are not UTF-8 are 400 invalid_utf8, never stored as replaced", async (_what, path, body) => {
    // 0xff never occurs in UTF-8; 0xc3 0x28 is a lead byte without its continuation; 0xed 0xa0 0x80 a surrogate's encoding.
    for (const raw of [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80]]) {
      const res = await api(path, { method: "POST", body: bytesWith(body, raw) });
      expect(res.status, `${path} ${raw}`).toBe(400);
      const error = await res.json<any>();
      expect(error).toMatchObject({ error: "invalid_request", details: [{ code: "invalid_utf8" }] });
    }
  });

  it("nothing is stored: no halt is engaged by any of them", async () => {
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM halts").first<number>("n");
    await api("/api/halts", { method: "POST", body: bytesWith('{"scope":"all","reason":"@@"}', [0xff]) });
    await api("/api/halts", { method: "POST", body: '{"scope":"all","reason":"\\udc00"}' });
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM halts").first<number>("n")).toBe(before);
    // Well-formed text, a pair included, is taken.
    expect(
      (await api("/api/halts", { method: "POST", body: JSON.stringify({ scope: "all", reason: "pair \ud83d\ude00 ok" }) })).status,
    ).toBe(201);
  });
});
