// Retention by the Cron Trigger (contract section 22): the Worker's real
// `scheduled` handler fired in workerd (createScheduledController) over the
// real D1 of miniflare. Rows are written old and new on purpose; the firing
// must delete exactly the old ones: receipts past RECEIPT_RETENTION_DAYS,
// ended runs (with their approvals, questions and metric row) past
// INDEX_RETENTION_DAYS, ended console sessions, audit entries past
// AUDIT_RETENTION_DAYS up to a checkpoint (section 25), Home tab openers quiet for 7 days, expired MCP OAuth
// connect states, and settled
// mutation rows only with MUTATION_RETENTION_DAYS set. Running runs, pending entries, live
// sessions, unresolved and outcome_unknown rows stay whatever their age.
// Batches are bounded: a small bound leaves the rest for the next firing.
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { runRetention } from "../../src/operate/retention";

const DAY_MS = 86_400_000;
const NOW = Date.parse("2027-06-01T00:00:00.000Z");
const ago = (days: number) => new Date(NOW - days * DAY_MS).toISOString();

let tag = "";
const id = (what: string) => `${what}-${tag}`;

async function count(sql: string, ...values: unknown[]): Promise<number> {
  return (
    (
      await env.DB.prepare(sql)
        .bind(...values)
        .first<{ n: number }>()
    )?.n ?? 0
  );
}
const exists = async (table: string, column: string, value: string) =>
  (await count(`SELECT COUNT(*) AS n FROM ${table} WHERE ${column} = ?`, value)) === 1;

async function seed(): Promise<void> {
  tag = crypto.randomUUID().slice(0, 8);
  const receipt = (name: string, at: string) =>
    env.DB.prepare(`INSERT INTO deliveries (delivery_id, run_id, channel_id, accepted_at) VALUES (?, ?, 'C-ret', ?)`).bind(
      id(name),
      id(`run-of-${name}`),
      at,
    );
  const run = (name: string, status: string, created: string, ended: string | null) =>
    env.DB.prepare(
      `INSERT INTO runs (run_id, channel_id, user_id, delivery_id, source, status, created_at, ended_at) VALUES (?, 'C-ret', 'U', NULL, 'api', ?, ?, ?)`,
    ).bind(id(name), status, created, ended);
  const approval = (name: string, runName: string, status: string) =>
    env.DB.prepare(
      `INSERT INTO approvals (approval_id, run_id, channel_id, tool_call_id, tool_name, level, description, arguments_json, requested_at, expires_at, status)
       VALUES (?, ?, 'C-ret', 't1', 'mcp__demo__create_dashboard', 'approve', 'd', '{}', ?, ?, ?)`,
    ).bind(id(name), id(runName), ago(200), ago(199), status);
  const input = (runName: string, status: string) =>
    env.DB.prepare(
      `INSERT INTO inputs (run_id, input_key, tool_call_id, channel_id, question, requested_at, expires_at, status) VALUES (?, 'q1', 'q1', 'C-ret', 'Which?', ?, ?, ?)`,
    ).bind(id(runName), ago(200), ago(199), status);
  const session = (name: string, expires: string, revoked: number) =>
    env.DB.prepare(`INSERT INTO console_sessions (id, name, created_at, expires_at, revoked) VALUES (?, 'op', ?, ?, ?)`).bind(
      id(name),
      ago(300),
      expires,
      revoked,
    );
  const mutation = (name: string, state: string, settled: string | null) =>
    env.DB.prepare(
      `INSERT INTO mutation_outcomes (mutation_id, run_id, channel_id, tool_call_id, approval_id, tool_name, arguments_digest, state, dispatched, reason, created_at, settled_at)
       VALUES (?, ?, 'C-ret', ?, '', 'mcp__demo__create_dashboard', ?, ?, ?, ?, ?, ?)`,
    ).bind(
      id(name),
      id("run-old-ended"),
      id(name),
      `sha256:${"ab".repeat(32)}`,
      state,
      state === "not_executed" || state === "unresolved" ? 0 : 1,
      state === "not_executed" ? "denied" : null,
      ago(500),
      settled,
    );
  const audit = (name: string, at: string) =>
    env.DB.prepare(
      `INSERT INTO audit_log (id, at, principal, action, target, result) VALUES (?, ?, 'token:root', 'run.trigger', 'r', 'ok')`,
    ).bind(id(name), at);
  const opener = (name: string, opened: string) =>
    env.DB.prepare(`INSERT INTO slack_home_openers (user_id, principal, team, opened_at) VALUES (?, ?, 'T1', ?)`).bind(
      id(name),
      `slack:T1:${id(name)}`,
      opened,
    );
  const oauthState = (name: string, expires: string) =>
    env.DB.prepare(
      `INSERT INTO mcp_oauth_states (state_digest, server, principal, sealed, expires_at) VALUES (?, 'hosted', 'token:root', 'v1.x.y', ?)`,
    ).bind(id(name), expires);
  await env.DB.batch([
    receipt("receipt-old", ago(31)),
    receipt("receipt-new", ago(29)),
    run("run-old-ended", "completed", ago(100), ago(91)),
    run("run-new-ended", "failed", ago(100), ago(89)),
    run("run-old-running", "running", ago(400), null),
    approval("approval-of-old", "run-old-ended", "approved"),
    approval("approval-of-new", "run-new-ended", "denied"),
    input("run-old-ended", "answered"),
    input("run-new-ended", "expired"),
    env.DB.prepare(`INSERT INTO metric_sources (source, seq, deltas, updated_at) VALUES (?, 1, '[]', ?)`).bind(id("run-old-ended"), ago(1)),
    session("session-expired", ago(1), 0),
    session("session-revoked", ago(-1), 1),
    session("session-live", ago(-1), 0),
    mutation("m-completed", "completed", ago(400)),
    mutation("m-not-executed", "not_executed", ago(400)),
    mutation("m-recent", "completed", ago(1)),
    mutation("m-unresolved", "unresolved", null),
    mutation("m-unknown", "outcome_unknown", ago(400)),
    audit("audit-old", ago(401)),
    audit("audit-new", ago(399)),
    opener("opener-quiet", ago(8)),
    opener("opener-recent", ago(6)),
    // A connect state lives 10 minutes: one expired a minute ago, one still live for five.
    oauthState("state-expired", new Date(NOW - 60_000).toISOString()),
    oauthState("state-live", new Date(NOW + 5 * 60_000).toISOString()),
  ]);
}

async function fire(vars: Record<string, string> = {}): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: NOW, cron: "17 * * * *" }), { ...env, ...vars } as typeof env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("retention (the Cron Trigger)", () => {
  it("deletes what is old and nothing else; mutation rows stay without MUTATION_RETENTION_DAYS", async () => {
    await seed();
    // Contract section 25: audit entries go only up to a checkpoint older than AUDIT_RETENTION_DAYS (the runtime
    // tests sign with AUDIT_SIGNING_KEY): the seeded entries are sealed, and a checkpoint of 401 days ago signs audit-old.
    await env.AUDIT_SEALER.get(env.AUDIT_SEALER.idFromName("audit")).seal();
    const oldSeq = (await env.DB.prepare("SELECT seq FROM audit_log WHERE id = ?").bind(id("audit-old")).first<{ seq: number }>())!.seq;
    await env.DB.prepare("INSERT INTO audit_checkpoints (seq, hash, at, kid, signature) VALUES (?, 'sha256:x', ?, 'kid', 'sig')")
      .bind(oldSeq, ago(401))
      .run();
    const startedBefore = await count(`SELECT value AS n FROM metric_counters WHERE name = 'aee_runs_started_total'`);
    await fire();
    expect(await exists("deliveries", "delivery_id", id("receipt-old"))).toBe(false);
    expect(await exists("deliveries", "delivery_id", id("receipt-new"))).toBe(true);
    expect(await exists("runs", "run_id", id("run-old-ended"))).toBe(false);
    expect(await exists("runs", "run_id", id("run-new-ended"))).toBe(true);
    expect(await exists("runs", "run_id", id("run-old-running"))).toBe(true);
    expect(await exists("approvals", "approval_id", id("approval-of-old"))).toBe(false);
    expect(await exists("approvals", "approval_id", id("approval-of-new"))).toBe(true);
    expect(await exists("inputs", "run_id", id("run-old-ended"))).toBe(false);
    expect(await exists("inputs", "run_id", id("run-new-ended"))).toBe(true);
    expect(await exists("metric_sources", "source", id("run-old-ended"))).toBe(false);
    expect(await exists("console_sessions", "id", id("session-expired"))).toBe(false);
    expect(await exists("console_sessions", "id", id("session-revoked"))).toBe(false);
    expect(await exists("console_sessions", "id", id("session-live"))).toBe(true);
    // Audit entries past AUDIT_RETENTION_DAYS (default 400), Home tab openers quiet for 7 days.
    expect(await exists("audit_log", "id", id("audit-old"))).toBe(false);
    expect(await exists("audit_log", "id", id("audit-new"))).toBe(true);
    expect(await exists("audit_checkpoints", "seq", String(oldSeq))).toBe(true);
    expect(await exists("slack_home_openers", "user_id", id("opener-quiet"))).toBe(false);
    expect(await exists("slack_home_openers", "user_id", id("opener-recent"))).toBe(true);
    expect(await exists("mcp_oauth_states", "state_digest", id("state-expired"))).toBe(false);
    expect(await exists("mcp_oauth_states", "state_digest", id("state-live"))).toBe(true);
    for (const m of ["m-completed", "m-not-executed", "m-recent", "m-unresolved", "m-unknown"]) {
      expect(await exists("mutation_outcomes", "mutation_id", id(m)), m).toBe(true);
    }
    // The counter never falls with the rows.
    expect(await count(`SELECT value AS n FROM metric_counters WHERE name = 'aee_runs_started_total'`)).toBe(startedBefore);
  });

  it("with MUTATION_RETENTION_DAYS, deletes old settled rows, never unresolved or outcome_unknown ones", async () => {
    await seed();
    await fire({ MUTATION_RETENTION_DAYS: "365" });
    expect(await exists("mutation_outcomes", "mutation_id", id("m-completed"))).toBe(false);
    expect(await exists("mutation_outcomes", "mutation_id", id("m-not-executed"))).toBe(false);
    expect(await exists("mutation_outcomes", "mutation_id", id("m-recent"))).toBe(true);
    expect(await exists("mutation_outcomes", "mutation_id", id("m-unresolved"))).toBe(true);
    expect(await exists("mutation_outcomes", "mutation_id", id("m-unknown"))).toBe(true);
  });

  it("takes decimal days", async () => {
    await seed();
    // 29 days old: kept at 30, gone at 28.5.
    await fire({ RECEIPT_RETENTION_DAYS: "28.5" });
    expect(await exists("deliveries", "delivery_id", id("receipt-new"))).toBe(false);
  });

  it("deletes in bounded batches: a small bound leaves the rest for the next firing", async () => {
    const prefix = `bulk-${crypto.randomUUID().slice(0, 8)}`;
    await env.DB.prepare(
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 25)
       INSERT INTO deliveries (delivery_id, run_id, channel_id, accepted_at) SELECT ? || i, 'r', 'C-ret', ? FROM k`,
    )
      .bind(prefix, ago(60))
      .run();
    const left = () => count(`SELECT COUNT(*) AS n FROM deliveries WHERE delivery_id LIKE ? || '%'`, prefix);
    const settings = {
      RECEIPT_RETENTION_DAYS: 30,
      INDEX_RETENTION_DAYS: 90,
      AUDIT_RETENTION_DAYS: 400,
      MUTATION_RETENTION_DAYS: undefined,
    };
    const first = await runRetention(env.DB, settings, NOW, { batchRows: 4, maxBatches: 3 });
    expect(first.more).toContain("receipts");
    expect(await left()).toBeGreaterThanOrEqual(25 - 12);
    expect(await left()).toBeLessThan(25);
    for (let firing = 0; firing < 10 && (await left()) > 0; firing++)
      await runRetention(env.DB, settings, NOW, { batchRows: 4, maxBatches: 3 });
    expect(await left()).toBe(0);
  });
});
