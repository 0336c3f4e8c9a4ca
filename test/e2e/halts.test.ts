// Halts end to end (contract section 23), over loopback against `wrangler dev`
// and the real demo MCP server process, on a Worker of its own with
// HALT_RELEASE_APPROVALS=2 and two Cloudflare Access admins (a JWKS stand-in
// signs their assertions), so the release needs two distinct persons:
//  - RUNS runs, each with one approved mutation, race a halt of `all`: the
//    approvals are sent spread out and the halt lands among them. No
//    tools/call reaches the demo server for a row whose checkpoint would have
//    committed after the halt: every row has a dispatched_at at or before the
//    halt's engaged_at, or is not_executed(halted) with nothing sent; the
//    demo server saw exactly the dispatched rows. Approvals refused 409 stay
//    pending; a deny is taken (200) during the halt.
//  - A limit of 3 per hour under 10 concurrent approvals: exactly 3 are
//    sent, the others end not_executed(rate_limited) with retry_after_s; a
//    run proposing the tool afterwards ends rate_limited before anyone is asked.
//  - The release: the first person's vote is 202 (and again 202 when the same
//    person repeats it), token:root (no person) is 403 second_person_required,
//    the second person's vote releases (200); then the waiting approvals run.
//  - Across a SIGKILL of wrangler and workerd: a halt engaged (and one release
//    vote cast) before the kill still holds after the restart (approve 409, a
//    new proposal not_executed(halted), the vote not counted twice); the
//    release completed after the restart holds across a second SIGKILL, and
//    the approval that waited then runs, dispatched after released_at.
//  - One person holding two credentials is one vote: an Access user, the
//    tokens she made for herself, and a token an admin made naming her as
//    owner (no person: 403) never release a two-person halt alone.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type AccessIssuer, startAccessIssuer } from "../support/jwks-server";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";
import { demoCalls, demoReset } from "../support/e2e-client";
import { e2eVars } from "./global-setup";

const demo = inject("demoMcpBaseUrl");
const CREATE = "mcp__demo__create_dashboard";
const KPI = "mcp__demo__create_kpi";
/** The limit on KPI here: 3 per hour, and LIMIT_RUNS approvals racing it. */
const LIMIT_MAX = 3;
const LIMIT_RUNS = 10;
const AUD = "aud-halts";
/** Runs racing the halt (the issue asks for 50). */
const RUNS = 50;
/** Between two approvals sent; the halt goes out halfway through them. */
const SPREAD_MS = 16;

let server: WorkerServer;
let access: AccessIssuer;

beforeAll(async () => {
  access = await startAccessIssuer("k-halts", AUD);
  server = await startWorkerServer({
    ...e2eVars(`${demo}/mcp`),
    APPROVAL_TIMEOUT_MS: "120000",
    ADMISSION_TIMEOUT_MS: "60000",
    MCP_CALL_TIMEOUT_MS: "10000",
    // Fifty sessions opened at once on a busy machine: room to connect.
    MCP_CONNECT_TIMEOUT_MS: "20000",
    TRIGGER_RATE_PER_MINUTE: "1000",
    HALT_RELEASE_APPROVALS: "2",
    ACCESS_TEAM_DOMAIN: access.url,
    ACCESS_AUD: AUD,
    ACCESS_ROLES: JSON.stringify({ "ann@example.com": ["admin"], "bob@example.com": ["admin"] }),
    TOOL_POLICY: JSON.stringify({
      mcp__demo__create_alert_from_chart: { level: "confirm" },
      [KPI]: { limits: [{ max: LIMIT_MAX, per: "1h", by: "all" }] },
    }),
  });
  await demoReset();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await access?.stop();
});

async function json(res: Response): Promise<any> {
  return res.json();
}

/** A request as an Access user (a person): the assertion Access adds, and this origin (a browser-held credential's rule). */
async function asPerson(email: string, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("cf-access-jwt-assertion", await access.assertion(email));
  headers.set("origin", server.url);
  return fetch(`${server.url}${path}`, { ...init, headers });
}

function decide(runId: string, approvalId: string, decision: "approve" | "deny"): Promise<Response> {
  return server.api(`/api/runs/${runId}/approvals/${approvalId}`, { method: "POST", body: JSON.stringify({ decision }) });
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Row {
  mutation_id: string;
  state: string;
  dispatched: boolean;
  dispatched_at?: string;
  reason?: string;
  requested_by?: string;
  server?: string;
}

describe("a halt racing approved mutations", () => {
  it(`${RUNS} runs: nothing is sent after the halt, refused approvals wait, a deny is taken, and two persons release it`, async () => {
    const titles = new Map<string, number>();
    const runs = await Promise.all(
      Array.from({ length: RUNS }, async (_, i) => {
        const title = `race-${i}-${Date.now()}`;
        titles.set(title, i);
        const res = await server.api("/api/trigger", {
          method: "POST",
          body: JSON.stringify({
            message: `race ${i}`,
            channel_id: `C-race-${i}`,
            script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "w-1", arguments: { title } }] }, { text: "Done." }],
          }),
        });
        expect(res.status).toBe(202);
        return { runId: (await json(res)).run_id as string, title };
      }),
    );
    const pending = await until(
      async () =>
        (await json(await server.api("/api/approvals?status=pending&limit=200"))).approvals as { run_id: string; approval_id: string }[],
      (list) => list.length === RUNS,
      "every approval to be asked",
    );
    const approvalOf = new Map(pending.map((a) => [a.run_id, a.approval_id]));

    // The approvals go out spread over time; the halt is engaged among them.
    const decisions = runs.map(
      ({ runId }, i) =>
        new Promise<{ runId: string; status: number; body: any }>((resolve) =>
          setTimeout(async () => {
            const res = await decide(runId, approvalOf.get(runId)!, "approve");
            resolve({ runId, status: res.status, body: await json(res) });
          }, i * SPREAD_MS),
        ),
    );
    const engagedRes = await new Promise<Response>((resolve) =>
      setTimeout(
        () => resolve(server.api("/api/halts", { method: "POST", body: JSON.stringify({ scope: "all", reason: "race test" }) })),
        (RUNS * SPREAD_MS) / 2,
      ),
    );
    expect(engagedRes.status).toBe(201);
    const halt = await json(engagedRes);
    const answers = await Promise.all(decisions);
    for (const a of answers) expect([200, 409], JSON.stringify(a)).toContain(a.status);
    const refused = answers.filter((a) => a.status === 409);
    for (const a of refused) expect(a.body).toMatchObject({ error: "halted", halt_id: halt.halt_id });
    // The halt landed among them: the later approvals were refused.
    expect(refused.length).toBeGreaterThan(0);

    // Every run settles: its call ended (executed, or not_executed at a refused checkpoint), or its approval still waits.
    const summaries = await until(
      () => Promise.all(runs.map(async ({ runId }) => json(await server.api(`/api/runs/${runId}`)))),
      (list) => list.every((s) => s.status !== "running" || s.pending_approvals.length === 1),
      "every run to settle under the halt",
    );
    const waiting = new Set(summaries.filter((s) => s.status === "running").map((s) => s.run_id as string));
    expect(new Set(refused.map((a) => a.runId))).toEqual(waiting);

    const rows: Row[] = (
      await Promise.all(runs.map(async ({ runId }) => (await json(await server.api(`/api/runs/${runId}/mutations`))).mutations as Row[]))
    ).flat();
    const dispatched = rows.filter((r) => r.dispatched);
    for (const row of rows) {
      if (row.dispatched) expect(row.dispatched_at! <= halt.engaged_at, JSON.stringify({ row, halt })).toBe(true);
      // Never sent: refused at the checkpoint by the halt (or, on a machine too busy to connect in time, before it).
      else {
        expect(row.state, JSON.stringify(row)).toBe("not_executed");
        expect(["halted", "transport_unavailable"], JSON.stringify(row)).toContain(row.reason);
      }
      expect(row).toMatchObject({ requested_by: "token:root", server: "demo" });
    }
    // The demo server saw exactly the dispatched rows' calls, none after the halt.
    const sent = (await demoCalls()).calls.filter((c) => c.tool === "create_dashboard" && titles.has(String(c.arguments.title)));
    expect(sent.length).toBe(dispatched.length);
    expect(rows.length + waiting.size).toBe(RUNS);

    // During the halt: an approve is 409 and changes nothing; a deny is taken.
    const [first, second] = [...waiting];
    if (first !== undefined) {
      expect((await decide(first, approvalOf.get(first)!, "approve")).status).toBe(409);
      expect((await json(await server.api(`/api/runs/${first}`))).pending_approvals).toHaveLength(1);
    }
    if (second !== undefined) expect((await decide(second, approvalOf.get(second)!, "deny")).status).toBe(200);
    // A trigger under `all` is refused too.
    const trigger = await server.api("/api/trigger", {
      method: "POST",
      body: JSON.stringify({ message: "during", script: [{ text: "x" }] }),
    });
    expect(trigger.status).toBe(409);

    // The release takes two distinct persons.
    const path = `/api/halts/${halt.halt_id}`;
    const root = await server.api(path, { method: "DELETE" });
    expect(root.status).toBe(403);
    expect((await json(root)).error).toBe("second_person_required");
    const ann = await asPerson("ann@example.com", path, { method: "DELETE" });
    expect(ann.status).toBe(202);
    expect(await json(ann)).toEqual({ halt_id: halt.halt_id, status: "active", releases: 1, required: 2 });
    const annAgain = await asPerson("ann@example.com", path, { method: "DELETE" });
    expect(await json(annAgain)).toEqual({ halt_id: halt.halt_id, status: "active", releases: 1, required: 2 });
    const bob = await asPerson("bob@example.com", path, { method: "DELETE" });
    expect(bob.status).toBe(200);
    const released = await json(bob);
    expect(released).toMatchObject({ halt_id: halt.halt_id, status: "released", released_by: "access:bob@example.com" });
    expect(released.released_at > halt.engaged_at).toBe(true);

    // After the release, the approvals that waited run.
    const rest = [...waiting].filter((r) => r !== second);
    for (const runId of rest) expect((await decide(runId, approvalOf.get(runId)!, "approve")).status).toBe(200);
    await until(
      () => Promise.all(runs.map(async ({ runId }) => (await json(await server.api(`/api/runs/${runId}`))).status)),
      (list) => list.every((s) => s !== "running"),
      "every run to end after the release",
    );
    const after = (await demoCalls()).calls.filter((c) => c.tool === "create_dashboard" && titles.has(String(c.arguments.title)));
    expect(after.length).toBe(dispatched.length + rest.length);
    const late: Row[] = (
      await Promise.all(rest.map(async (runId) => (await json(await server.api(`/api/runs/${runId}/mutations`))).mutations as Row[]))
    ).flat();
    for (const row of late) {
      expect(row).toMatchObject({ state: "completed", dispatched: true });
      expect(row.dispatched_at! > released.released_at).toBe(true);
    }
  }, 110_000);
});

describe("a mutation limit under concurrent approvals", () => {
  it(`${LIMIT_RUNS} concurrent approvals under a limit of ${LIMIT_MAX} per hour: exactly ${LIMIT_MAX} are sent`, async () => {
    const stamp = Date.now();
    const runs = await Promise.all(
      Array.from({ length: LIMIT_RUNS }, async (_, i) => {
        const res = await server.api("/api/trigger", {
          method: "POST",
          body: JSON.stringify({
            message: `limit ${i}`,
            channel_id: `C-limit-${i}`,
            script: [
              { tool_calls: [{ tool_name: KPI, tool_call_id: "k-1", arguments: { name: `kpi-${stamp}-${i}`, query: "q" } }] },
              { text: "Done." },
            ],
          }),
        });
        expect(res.status).toBe(202);
        return (await json(res)).run_id as string;
      }),
    );
    const pending = await until(
      async () =>
        (
          (await json(await server.api("/api/approvals?status=pending&limit=200"))).approvals as { run_id: string; approval_id: string }[]
        ).filter((a) => runs.includes(a.run_id)),
      (list) => list.length === LIMIT_RUNS,
      "every limited approval to be asked",
    );
    const answers = await Promise.all(pending.map((a) => decide(a.run_id, a.approval_id, "approve")));
    for (const a of answers) expect(a.status).toBe(200);
    await until(
      () => Promise.all(runs.map(async (runId) => (await json(await server.api(`/api/runs/${runId}`))).status)),
      (list) => list.every((s) => s !== "running"),
      "every limited run to end",
    );
    const sent = (await demoCalls()).calls.filter((c) => c.tool === "create_kpi" && String(c.arguments.name).startsWith(`kpi-${stamp}-`));
    expect(sent).toHaveLength(LIMIT_MAX);
    const rows: Row[] = (
      await Promise.all(runs.map(async (runId) => (await json(await server.api(`/api/runs/${runId}/mutations`))).mutations as Row[]))
    ).flat();
    expect(rows.filter((r) => r.dispatched)).toHaveLength(LIMIT_MAX);
    expect(rows.filter((r) => !r.dispatched).map((r) => [r.state, r.reason])).toEqual(
      Array.from({ length: LIMIT_RUNS - LIMIT_MAX }, () => ["not_executed", "rate_limited"]),
    );

    // Proposed now, it is refused before anyone is asked: no approval, no row, and a hint.
    const res = await server.api("/api/trigger", {
      method: "POST",
      body: JSON.stringify({
        message: "over the limit",
        script: [
          { tool_calls: [{ tool_name: KPI, tool_call_id: "k-1", arguments: { name: `kpi-${stamp}-late`, query: "q" } }] },
          { text: "Done." },
        ],
      }),
    });
    const runId = (await json(res)).run_id as string;
    await until(
      async () => (await json(await server.api(`/api/runs/${runId}`))).status,
      (s) => s !== "running",
      "the late run to end",
    );
    const text = await (await server.api(`/api/runs/${runId}/events`)).text();
    const events = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, any>);
    const ofCall = events.filter((e) => e.tool_call_id === "k-1");
    expect(ofCall.map((e) => e.type)).toEqual(["tool_started", "tool_execution", "tool_completed"]);
    expect(ofCall[1]).toMatchObject({ execution_status: "not_executed", reason: "rate_limited" });
    expect(ofCall[1]!.retry_after_s).toBeGreaterThan(3500);
    expect((await json(await server.api(`/api/runs/${runId}/mutations`))).mutations).toEqual([]);
  }, 60_000);
});

/** One run proposing CREATE with `title`; answers its id once its approval is asked, with the approval's id. */
async function proposed(title: string): Promise<{ runId: string; approvalId: string }> {
  const res = await server.api("/api/trigger", {
    method: "POST",
    body: JSON.stringify({
      message: title,
      script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "w-1", arguments: { title } }] }, { text: "Done." }],
    }),
  });
  expect(res.status).toBe(202);
  const runId = (await json(res)).run_id as string;
  const summary = await until(
    async () => json(await server.api(`/api/runs/${runId}`)),
    (s) => s.pending_approvals?.length === 1,
    `the approval of ${title}`,
  );
  return { runId, approvalId: summary.pending_approvals[0].approval_id };
}

async function callEvents(runId: string): Promise<Record<string, any>[]> {
  const text = await (await server.api(`/api/runs/${runId}/events`)).text();
  return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, any>).filter((e) => e.tool_call_id === "w-1");
}

describe("a halt and its release across a SIGKILL of the runtime", () => {
  it("the halt holds after a restart, votes are not lost or counted twice, and the release holds after another", async () => {
    const stamp = Date.now();
    const waiting = await proposed(`kill-wait-${stamp}`);
    const engaged = await server.api("/api/halts", {
      method: "POST",
      body: JSON.stringify({ scope: `tool:${CREATE}`, reason: "held across a crash" }),
    });
    expect(engaged.status).toBe(201);
    const halt = await json(engaged);
    const path = `/api/halts/${halt.halt_id}`;
    expect(await json(await asPerson("ann@example.com", path, { method: "DELETE" }))).toEqual({
      halt_id: halt.halt_id,
      status: "active",
      releases: 1,
      required: 2,
    });

    server = await server.crashAndRestart();

    // The halt is read from D1 as it was: listed active with its one vote, and it refuses.
    const active = (await json(await server.api("/api/halts?status=active"))).halts as any[];
    expect(active.find((h) => h.halt_id === halt.halt_id)).toMatchObject({
      halt_id: halt.halt_id,
      status: "active",
      engaged_at: halt.engaged_at,
      releases: 1,
      required: 2,
    });
    const refused = await decide(waiting.runId, waiting.approvalId, "approve");
    expect(refused.status).toBe(409);
    expect(await json(refused)).toMatchObject({ error: "halted", halt_id: halt.halt_id });
    expect((await json(await server.api(`/api/runs/${waiting.runId}`))).pending_approvals).toHaveLength(1);
    // A call proposed after the restart ends not_executed(halted) right after tool_started: no approval, no row.
    const res = await server.api("/api/trigger", {
      method: "POST",
      body: JSON.stringify({
        message: "after the crash",
        script: [
          { tool_calls: [{ tool_name: CREATE, tool_call_id: "w-1", arguments: { title: `kill-new-${stamp}` } }] },
          { text: "Done." },
        ],
      }),
    });
    expect(res.status).toBe(202);
    const fresh = (await json(res)).run_id as string;
    await until(
      async () => (await json(await server.api(`/api/runs/${fresh}`))).status,
      (s) => s !== "running",
      "the halted proposal to end",
    );
    const ofCall = await callEvents(fresh);
    expect(ofCall.map((e) => e.type)).toEqual(["tool_started", "tool_execution", "tool_completed"]);
    expect(ofCall[1]).toMatchObject({ execution_status: "not_executed", reason: "halted", halt_id: halt.halt_id });
    expect((await json(await server.api(`/api/runs/${fresh}/mutations`))).mutations).toEqual([]);

    // The vote cast before the crash still counts, once: the same person again is 202 with 1 of 2; the second person releases.
    const annAgain = await asPerson("ann@example.com", path, { method: "DELETE" });
    expect(annAgain.status).toBe(202);
    expect(await json(annAgain)).toMatchObject({ status: "active", releases: 1, required: 2 });
    const bob = await asPerson("bob@example.com", path, { method: "DELETE" });
    expect(bob.status).toBe(200);
    const released = await json(bob);
    expect(released).toMatchObject({ halt_id: halt.halt_id, status: "released", released_by: "access:bob@example.com" });

    server = await server.crashAndRestart();

    // Released before the crash, released after it: the approval that waited runs.
    expect(await json(await server.api(path))).toMatchObject({ status: "released", released_at: released.released_at });
    expect((await decide(waiting.runId, waiting.approvalId, "approve")).status).toBe(200);
    await until(
      async () => (await json(await server.api(`/api/runs/${waiting.runId}`))).status,
      (s) => s !== "running",
      "the released run to end",
    );
    const [row] = (await json(await server.api(`/api/runs/${waiting.runId}/mutations`))).mutations as Row[];
    expect(row).toMatchObject({ state: "completed", dispatched: true });
    expect(row!.dispatched_at! > released.released_at).toBe(true);
    const sent = (await demoCalls()).calls.filter((c) => c.tool === "create_dashboard" && String(c.arguments.title).startsWith("kill-"));
    expect(sent.map((c) => c.arguments.title)).toEqual([`kill-wait-${stamp}`]);
  }, 180_000);
});

describe("a two-person release and one person's credentials", () => {
  it("an Access user and the tokens she made for herself are one person; a token an admin made naming her is no person", async () => {
    const engaged = await server.api("/api/halts", {
      method: "POST",
      body: JSON.stringify({ scope: `tool:${CREATE}`, reason: "one person, many credentials" }),
    });
    expect(engaged.status).toBe(201);
    const halt = await json(engaged);
    const path = `/api/halts/${halt.halt_id}`;
    const stamp = Date.now().toString(36);

    // Ann's own tokens: made by her with herself as owner (owned_by_creator), so each is her person (contract section 19).
    const own = async (name: string) => {
      const res = await asPerson("ann@example.com", "/api/tokens", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name, roles: ["admin"], owner: "access:ann@example.com" }),
      });
      expect(res.status, await res.clone().text()).toBe(201);
      return (await json(res)).token as string;
    };
    const first = await own(`ann-a-${stamp}`);
    const second = await own(`ann-b-${stamp}`);
    // A token root made naming Ann as owner: the owner is recorded, proves nothing, and the token is no person.
    const named = await server.api("/api/tokens", {
      method: "POST",
      body: JSON.stringify({ name: `ann-named-${stamp}`, roles: ["admin"], owner: "access:ann@example.com" }),
    });
    expect(named.status).toBe(201);
    const namedToken = (await json(named)).token as string;
    const asToken = (token: string) => fetch(`${server.url}${path}`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });

    const vote = async (res: Response) => ({ status: res.status, body: await json(res) });
    const pending = { status: 202, body: { halt_id: halt.halt_id, status: "active", releases: 1, required: 2 } };
    expect(await vote(await asToken(first))).toEqual(pending);
    expect(await vote(await asPerson("ann@example.com", path, { method: "DELETE" }))).toEqual(pending);
    expect(await vote(await asToken(second))).toEqual(pending);
    const noPerson = await asToken(namedToken);
    expect(noPerson.status).toBe(403);
    expect((await json(noPerson)).error).toBe("second_person_required");
    expect(await json(await server.api(path))).toMatchObject({ status: "active", releases: 1, required: 2 });

    // Each counted vote is audited once (halt.release per vote): one, by the first credential Ann used.
    const audit = (await json(await server.api("/api/audit?action=halt.release&limit=200"))).entries as any[];
    expect(audit.filter((e) => e.target === halt.halt_id).map((e) => [e.principal, e.details])).toEqual([
      [`token:ann-a-${stamp}`, { releases: 1, required: 2 }],
    ]);

    const bob = await asPerson("bob@example.com", path, { method: "DELETE" });
    expect(bob.status).toBe(200);
    expect(await json(bob)).toMatchObject({ status: "released", released_by: "access:bob@example.com" });
  }, 60_000);
});
