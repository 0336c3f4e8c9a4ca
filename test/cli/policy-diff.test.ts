// `approved-exec policy diff --since 7d candidate.json` (contract section 24):
// the built CLI as a real process against a Worker of its own under wrangler
// dev and the shared demo MCP server. Two runs are recorded (a dashboard that
// token:root approved, a read-only listing); a candidate that lets only bob
// approve dashboards prints exactly that call's two changed checks, one per
// line (each a JSON object under --json); a window that ends before the runs
// prints none; a bad --since is bad usage (2); a candidate that fails
// validation is refused (1, invalid_policy).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { e2eVars } from "../e2e/global-setup";
import { runCli } from "../support/cli-process";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";

const demo = inject("demoMcpBaseUrl");
const CREATE = "mcp__demo__create_dashboard";
const LIST = "mcp__demo__list_dashboards";
const vars = e2eVars(`${demo}/mcp`);
const budget = JSON.parse(vars.MUTATION_BUDGET!) as Record<string, number>;

let server: WorkerServer;
let scratch: string;
let runId: string;
let before: string;

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

async function run(tool: string, callId: string, args: Record<string, unknown>, approve: boolean): Promise<string> {
  const res = await server.api("/api/trigger", {
    method: "POST",
    body: JSON.stringify({
      message: callId,
      script: [{ tool_calls: [{ tool_name: tool, tool_call_id: callId, arguments: args }] }, { text: "Done." }],
    }),
  });
  expect(res.status).toBe(202);
  const id = (await json(res)).run_id as string;
  if (approve) {
    const s = await until(
      async () => json(await server.api(`/api/runs/${id}`)),
      (v) => v.pending_approvals?.length === 1,
      "the approval",
    );
    const decided = await server.api(`/api/runs/${id}/approvals/${s.pending_approvals[0].approval_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBe(200);
  }
  await until(
    async () => json(await server.api(`/api/runs/${id}`)),
    (v) => v.status !== "running",
    "the run to end",
  );
  return id;
}

const candidate = { tools: { [CREATE]: { approvers: ["access:bob@example.com"] } }, groups: {}, budget };

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "aee-policy-diff-"));
  server = await startWorkerServer({ ...vars, APPROVAL_TIMEOUT_MS: "60000", ADMISSION_TIMEOUT_MS: "30000", MCP_CALL_TIMEOUT_MS: "10000" });
  before = new Date(Date.now() - 1_000).toISOString();
  runId = await run(CREATE, "d-1", { title: `diff-${Date.now()}` }, true);
  await run(LIST, "l-1", {}, false);
  await writeFile(join(scratch, "candidate.json"), JSON.stringify(candidate));
  // The index is written off the append path: wait until a replay sees both calls.
  await until(
    async () =>
      json(await server.api("/api/policy/replay", { method: "POST", body: JSON.stringify({ policy: candidate, since: before }) })),
    (page) => page.examined === 2,
    "both calls to be indexed",
  );
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("approved-exec policy diff", () => {
  it("prints each changed check of a recorded call on its own line", async () => {
    const out = await runCli(server, ["policy", "diff", "--since", "7d", join(scratch, "candidate.json")]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.trimEnd().split("\n")).toEqual([
      `${runId} d-1 ${CREATE} decider: eligible -> not_an_approver by=token:root`,
      `${runId} d-1 ${CREATE} quorum: resolved -> pending:0`,
    ]);
    expect(out.stderr).toContain("examined 2 calls");
  });

  it("--json prints each change as an object; --until bounds the window", async () => {
    const out = await runCli(server, [
      "--json",
      "policy",
      "diff",
      "--since",
      "1h",
      "--until",
      new Date().toISOString(),
      join(scratch, "candidate.json"),
    ]);
    expect(out.code, out.stderr).toBe(0);
    expect(
      out.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      {
        run_id: runId,
        tool_call_id: "d-1",
        tool_name: CREATE,
        check: "decider",
        recorded: "eligible",
        candidate: "not_an_approver",
        principal: "token:root",
      },
      { run_id: runId, tool_call_id: "d-1", tool_name: CREATE, check: "quorum", recorded: "resolved", candidate: "pending:0" },
    ]);
    const earlier = await runCli(server, ["policy", "diff", "--since", "1h", "--until", before, join(scratch, "candidate.json")]);
    expect(earlier.code, earlier.stderr).toBe(0);
    expect(earlier.stdout).toBe("");
    expect(earlier.stderr).toContain("examined 0 calls");
  });

  it("a bad --since is bad usage; a candidate that fails validation is refused", async () => {
    const usage = await runCli(server, ["policy", "diff", "--since", "7x", join(scratch, "candidate.json")]);
    expect(usage.code).toBe(2);
    await writeFile(join(scratch, "bad.json"), JSON.stringify({ ...candidate, tools: { [CREATE]: { level: "maybe" } } }));
    const refused = await runCli(server, ["policy", "diff", "--since", "7d", join(scratch, "bad.json")]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("invalid_policy");
  });
});
