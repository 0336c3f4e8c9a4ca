// Policy replay end to end (contract section 24), over loopback against one
// `wrangler dev` of its own and the real demo MCP server process. A history is
// seeded with real runs, in order: approvals by two Access persons (ann, bob)
// and by token:root (no person), a two-person approval, an automatic
// read-only call, a call refused before asking (not in the budget), a second
// two-person KPI within the hour, and a deny. Then POST /api/policy/replay
// with a candidate that changes some outcomes lists exactly the changed
// checks, in proposal order; the same replay in pages of 2 lists the same
// checks; an unchanged candidate (the settings) lists none; and the 400s.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type AccessIssuer, startAccessIssuer } from "../support/jwks-server";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const CREATE = "mcp__demo__create_dashboard";
const KPI = "mcp__demo__create_kpi";
const LIST = "mcp__demo__list_dashboards";
const REPORT = "mcp__demo__schedule_report";
const AUD = "aud-replay";
const ANN = "access:ann@example.com";
const BOB = "access:bob@example.com";

const vars = e2eVars(`${demo}/mcp`);
/** The settings: version 0 of the policy. KPIs need two persons; the report tool is in no budget. */
const TOOL_POLICY = { mcp__demo__create_alert_from_chart: { level: "confirm" }, [KPI]: { approvals_required: 2 } };
const SETTINGS = { tools: TOOL_POLICY, groups: {}, budget: JSON.parse(vars.MUTATION_BUDGET!) as Record<string, number> };

let server: WorkerServer;
let access: AccessIssuer;
let since: string;
/** The seeded runs, in the order their calls were proposed. */
const runs: Record<string, string> = {};

async function json(res: Response): Promise<any> {
  return res.json();
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A decision as an Access user (a person), from this origin. */
async function asPerson(email: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: {
      "cf-access-jwt-assertion": await access.assertion(email),
      origin: server.url,
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
  });
}

const summary = async (runId: string) => json(await server.api(`/api/runs/${runId}`));

/** Starts a run whose one call is `tool` and waits until it asks (or, with no approval, until it ends). */
async function start(name: string, tool: string, args: Record<string, unknown>): Promise<string> {
  const res = await server.api("/api/trigger", {
    method: "POST",
    body: JSON.stringify({
      message: name,
      channel_id: "C-replay",
      script: [{ tool_calls: [{ tool_name: tool, tool_call_id: `${name}-call`, arguments: args }] }, { text: "Done." }],
    }),
  });
  expect(res.status).toBe(202);
  const runId = (await json(res)).run_id as string;
  runs[name] = runId;
  return runId;
}

async function approvalOf(runId: string): Promise<string> {
  const s = await until(
    () => summary(runId),
    (v) => v.pending_approvals?.length === 1,
    `run ${runId} to ask`,
  );
  return s.pending_approvals[0].approval_id;
}

async function ended(runId: string): Promise<void> {
  await until(
    () => summary(runId),
    (v) => v.status !== "running",
    `run ${runId} to end`,
  );
}

/** One run, one call, decided by `deciders` in order (email: an Access person; "root": the API token). */
async function seed(name: string, tool: string, args: Record<string, unknown>, deciders: string[], decision = "approve"): Promise<void> {
  const runId = await start(name, tool, args);
  if (deciders.length > 0) {
    const approvalId = await approvalOf(runId);
    for (const who of deciders) {
      const path = `/api/runs/${runId}/approvals/${approvalId}`;
      const res =
        who === "root"
          ? await server.api(path, { method: "POST", body: JSON.stringify({ decision }) })
          : await asPerson(who, path, { decision });
      expect(res.status, `${who} on ${name}: ${await res.clone().text()}`).toBe(200);
    }
  }
  await ended(runId);
}

function replay(body: Record<string, unknown>): Promise<Response> {
  return server.api("/api/policy/replay", { method: "POST", body: JSON.stringify(body) });
}

/** Every page of a replay, followed to the end. */
async function replayAll(body: Record<string, unknown>): Promise<{ examined: number; skipped: number; changed: any[]; pages: number }> {
  const all = { examined: 0, skipped: 0, changed: [] as any[], pages: 0 };
  let cursor: string | undefined;
  for (;;) {
    const res = await replay(cursor === undefined ? body : { ...body, cursor });
    expect(res.status, await res.clone().text()).toBe(200);
    const page = await json(res);
    all.examined += page.examined;
    all.skipped += page.skipped;
    all.changed.push(...page.changed);
    all.pages += 1;
    if (page.next_cursor === null) return all;
    cursor = page.next_cursor;
  }
}

beforeAll(async () => {
  access = await startAccessIssuer("k-replay", AUD);
  server = await startWorkerServer({
    ...vars,
    APPROVAL_TIMEOUT_MS: "60000",
    ADMISSION_TIMEOUT_MS: "30000",
    MCP_CALL_TIMEOUT_MS: "10000",
    INDEX_RETENTION_DAYS: "30",
    ACCESS_TEAM_DOMAIN: access.url,
    ACCESS_AUD: AUD,
    ACCESS_ROLES: JSON.stringify({ "ann@example.com": ["approver"], "bob@example.com": ["approver"] }),
    TOOL_POLICY: JSON.stringify(TOOL_POLICY),
  });
  since = new Date(Date.now() - 1_000).toISOString();
  const stamp = Date.now();
  await seed("r1", CREATE, { title: `ann-${stamp}` }, ["ann@example.com"]);
  await seed("r2", KPI, { name: `kpi-a-${stamp}`, query: "q" }, ["ann@example.com", "bob@example.com"]);
  await seed("r3", CREATE, { title: `root-${stamp}` }, ["root"]);
  await seed("r4", LIST, {}, []);
  await seed("r5", REPORT, { dashboard_id: "dash-1" }, []);
  await seed("r6", KPI, { name: `kpi-b-${stamp}`, query: "q" }, ["ann@example.com", "bob@example.com"]);
  await seed("r7", CREATE, { title: `denied-${stamp}` }, ["bob@example.com"], "deny");
  // The index is written off the append path: wait until the replay sees every call.
  await until(
    async () => json(await replay({ policy: SETTINGS, since })),
    (page) => page.examined === 7,
    "the seven calls to be indexed",
  );
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await access?.stop();
});

/**
 * The candidate: only bob may approve dashboards; KPIs are limited to one an
 * hour; the report tool gets a budget.
 */
const CANDIDATE = {
  tools: { ...TOOL_POLICY, [CREATE]: { approvers: [BOB] }, [KPI]: { approvals_required: 2, limits: [{ max: 1, per: "1h", by: "all" }] } },
  groups: {},
  budget: { ...SETTINGS.budget, [REPORT]: 1 },
};

/** What section 24's checks say of each seeded call under CANDIDATE, in proposal order (derived from the contract by hand). */
function expectedChanges() {
  const call = (run: string, tool: string) => ({ run_id: runs[run], tool_call_id: `${run}-call`, tool_name: tool });
  return [
    // r1: ann is no approver of dashboards any more, so her approve would not count: nothing resolves it.
    { ...call("r1", CREATE), check: "decider", recorded: "eligible", candidate: "not_an_approver", principal: ANN },
    { ...call("r1", CREATE), check: "quorum", recorded: "resolved", candidate: "pending:0" },
    // r2: the first KPI in the hour: unchanged. r3: token:root matches no pattern.
    { ...call("r3", CREATE), check: "decider", recorded: "eligible", candidate: "not_an_approver", principal: "token:root" },
    { ...call("r3", CREATE), check: "quorum", recorded: "resolved", candidate: "pending:0" },
    // r4: read-only, automatic either way. r5: in the candidate's budget, so a person is asked (approve).
    { ...call("r5", REPORT), check: "ask", recorded: "not_in_budget", candidate: "approve" },
    // r6: r2's KPI was dispatched within the hour: refused before asking, and at its checkpoint.
    { ...call("r6", KPI), check: "ask", recorded: "approve", candidate: "rate_limited" },
    { ...call("r6", KPI), check: "checkpoint", recorded: "allowed", candidate: "rate_limited" },
    // r7: bob's deny stays eligible; nothing was approved either way.
  ];
}

describe("POST /api/policy/replay over a seeded history", () => {
  it("lists exactly the checks the candidate decides otherwise, in proposal order", async () => {
    const res = await replay({ policy: CANDIDATE, since });
    expect(res.status).toBe(200);
    const page = await json(res);
    expect(page).toEqual({ examined: 7, skipped: 0, changed: expectedChanges(), next_cursor: null });
  });

  it("the settings themselves as the candidate change nothing", async () => {
    const page = await json(await replay({ policy: SETTINGS, since, until: new Date().toISOString() }));
    expect(page).toEqual({ examined: 7, skipped: 0, changed: [], next_cursor: null });
  });

  it("pages of two calls list the same checks, and each page stays within its window", async () => {
    const all = await replayAll({ policy: CANDIDATE, since, limit: 2 });
    expect(all.pages).toBe(4);
    expect(all.examined).toBe(7);
    expect(all.changed).toEqual(expectedChanges());
    // A window that ends before r5 was proposed holds r1..r4 only.
    const r5 = await summary(runs.r5!);
    const before = new Date(Date.parse(r5.created_at) - 1).toISOString();
    const head = await replayAll({ policy: CANDIDATE, since, until: before });
    expect(head.examined).toBe(4);
    expect(head.changed).toEqual(expectedChanges().slice(0, 4));
  });

  it("refuses bad input with 400 and what is wrong", async () => {
    const later = new Date(Date.parse(since) + 60_000).toISOString();
    const order = await replay({ policy: CANDIDATE, since: later, until: since });
    expect(order.status).toBe(400);
    expect((await json(order)).error).toBe("invalid_request");

    for (const time of ["2026-12-01", "2026-12-01T00:00:00+02:00", "yesterday"]) {
      const res = await replay({ policy: CANDIDATE, since: time });
      expect(res.status, time).toBe(400);
      expect((await json(res)).error).toBe("invalid_request");
    }

    const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
    const retention = await replay({ policy: CANDIDATE, since: old });
    expect(retention.status).toBe(400);
    const retained = await json(retention);
    expect(retained.error).toBe("before_retention");
    expect(Date.parse(retained.earliest)).toBeGreaterThan(Date.parse(old));
    expect(Date.parse(retained.earliest)).toBeLessThanOrEqual(Date.now() - 30 * 86_400_000 + 60_000);

    const level = await replay({ policy: { ...CANDIDATE, tools: { [CREATE]: { level: "maybe" } } }, since });
    expect(level.status).toBe(400);
    const levelBody = await json(level);
    expect(levelBody.error).toBe("invalid_policy");
    expect(levelBody.details).toEqual([expect.objectContaining({ path: `TOOL_POLICY.${CREATE}.level` })]);

    const group = await replay({ policy: { ...CANDIDATE, tools: { [CREATE]: { approvers: ["group:sre"] } } }, since });
    expect(group.status).toBe(400);
    expect(await json(group)).toMatchObject({
      error: "invalid_policy",
      details: [{ path: `TOOL_POLICY.${CREATE}.approvers.0`, message: "group:sre is not defined in APPROVER_GROUPS" }],
    });

    // A member the policy does not have is refused by name (an absent one is its setting's default, as an unset setting is).
    const unknown = await replay({ policy: { ...CANDIDATE, budgets: {} }, since });
    expect(unknown.status).toBe(400);
    expect(await json(unknown)).toMatchObject({ error: "invalid_policy", details: [expect.objectContaining({ path: "policy.budgets" })] });

    const cursor = await replay({ policy: CANDIDATE, since, cursor: "not-a-cursor!" });
    expect(cursor.status).toBe(400);
  });

  it("is an admin's: an approver is refused", async () => {
    const res = await asPerson("ann@example.com", "/api/policy/replay", { policy: CANDIDATE, since });
    expect(res.status).toBe(403);
  });
});
