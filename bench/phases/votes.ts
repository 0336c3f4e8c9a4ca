// Phase 14, the two-person rule's cost (issue 19, contract section 19): runs
// whose one create_dashboard needs `approvals_required: 2`, two persons voting
// through the API with approver tokens each minted for themselves as an Access
// user (an Access stand-in in this process signs their assertions; a token an
// admin made naming an owner proves nothing and would not count, contract
// section 18), beside the same tool
// under one vote, on a server of its own each, in the same bench run. Timed
// from just before the deciding vote (the second, or the only one) is written
// to the moment the run's subscriber has tool_execution_started: the call
// leaving for the MCP server. Runs one at a time; every call must execute
// exactly once (each run's title is unique; the demo server counts them).
import { performance } from "node:perf_hooks";
import { type AccessIssuer, startAccessIssuer } from "../../test/support/jwks-server";
import { Client, log, percentile, range, sortedCopy, tally, Waiter } from "../http-client";
import { withServer } from "../servers";
import { APPROVAL_SAMPLES, APPROVAL_WARMUP, CREATE_DASHBOARD } from "../settings";
import { approvalVars, watchRun } from "../watched-run";

export interface VoteFigures {
  required: number;
  samples: number;
  /** Deciding vote sent → tool_execution_started at the subscriber, ms (sorted). */
  started: number[];
  /** tool_execution of the timed runs, by outcome. */
  executions: Map<string, number>;
  /** Calls the demo server received for the timed runs' titles (must equal `samples`). */
  calls: number;
}

/** The Access audience of the phase's servers (bench-only). */
const ACCESS_AUD = "bench-votes-aud";
/** The voters, Access users with the approver role on the phase's servers. */
const VOTERS = ["ann@bench.example", "bo@bench.example"] as const;

/**
 * A named approver token the Access user `email` minted for themselves (POST /api/tokens with their
 * assertion): that person, so two such voters are two persons (contract sections 18-19).
 */
async function approverClient(root: Client, access: AccessIssuer, name: string, email: string): Promise<Client> {
  const res = await fetch(`${root.url}/api/tokens`, {
    method: "POST",
    headers: { "cf-access-jwt-assertion": await access.assertion(email), origin: root.url, "content-type": "application/json" },
    body: JSON.stringify({ name, roles: ["approver"] }),
  });
  if (res.status !== 201) throw new Error(`POST /api/tokens ${name} as ${email}: ${res.status} ${await res.text()}`);
  const { token } = (await res.json()) as { token: string };
  return new Client(name, root.url, token, root.cpu);
}

async function measure(root: Client, access: AccessIssuer, required: number, demoBaseUrl: string): Promise<VoteFigures> {
  const voters: Client[] = [];
  for (const email of VOTERS.slice(0, required))
    voters.push(await approverClient(root, access, `bench-${email.split("@")[0]}-${required}`, email));
  const waiter = new Waiter();
  const figures: VoteFigures = { required, samples: 0, started: [], executions: new Map(), calls: 0 };
  const titles: string[] = [];
  for (const step of range(APPROVAL_WARMUP + APPROVAL_SAMPLES)) {
    const run = await watchRun(root, CREATE_DASHBOARD, `votes ${required} ${step} ${Date.now()}`, waiter);
    try {
      await waiter.until(() => run.approvalId !== undefined || run.terminal !== undefined, `approval_requested in ${run.runId}`);
      const approvalId = run.approvalId;
      if (approvalId === undefined) throw new Error(`run ${run.runId} ended without approval_requested`);
      for (const voter of voters.slice(0, -1)) {
        const answer = await voter.engine.decideApproval(run.runId, approvalId, { decision: "approve" });
        if (!("status" in answer) || answer.status !== "pending") throw new Error(`vote in ${run.runId}: ${JSON.stringify(answer)}`);
      }
      const sentAt = performance.now();
      await voters.at(-1)!.engine.decideApproval(run.runId, approvalId, { decision: "approve" });
      await waiter.until(
        () => run.first.has("tool_execution_started") || run.terminal !== undefined,
        `tool_execution_started in ${run.runId}`,
      );
      const started = run.first.get("tool_execution_started");
      if (!started) throw new Error(`run ${run.runId} ended without tool_execution_started`);
      await waiter.until(() => run.terminal !== undefined, `the end of ${run.runId}`);
      if (step < APPROVAL_WARMUP) continue;
      figures.started.push(started.at - sentAt);
      tally(figures.executions, run.execution);
      titles.push(run.title);
    } finally {
      run.sub?.close();
    }
  }
  const calls = (await (await fetch(`${demoBaseUrl}/control/calls`)).json()) as { calls?: { arguments?: { title?: string } }[] };
  const timed = new Set(titles);
  figures.calls = (calls.calls ?? []).filter((c) => timed.has(c.arguments?.title ?? "")).length;
  figures.samples = titles.length;
  figures.started = sortedCopy(figures.started);
  return figures;
}

/** Phase 14: one vote, then two, each on a server of its own with the same tool and MCP server. */
export async function votesPhase(mcpUrl: string, demoBaseUrl: string): Promise<VoteFigures[]> {
  const access = await startAccessIssuer("bench-votes", ACCESS_AUD);
  try {
    return await measureBoth(access, mcpUrl, demoBaseUrl);
  } finally {
    await access.stop();
  }
}

async function measureBoth(access: AccessIssuer, mcpUrl: string, demoBaseUrl: string): Promise<VoteFigures[]> {
  const results: VoteFigures[] = [];
  for (const required of [1, 2]) {
    const vars = {
      ...approvalVars(mcpUrl),
      ACCESS_TEAM_DOMAIN: access.url,
      ACCESS_AUD: ACCESS_AUD,
      ACCESS_ROLES: JSON.stringify(Object.fromEntries(VOTERS.map((email) => [email, ["approver"]]))),
      TOOL_POLICY: JSON.stringify({ [CREATE_DASHBOARD]: { approvals_required: required } }),
      // 210 runs one after another from one principal: past the default 120 a minute.
      TRIGGER_RATE_PER_MINUTE: "0",
    };
    results.push(
      await withServer(async (_server, client) => {
        log(
          `14. votes: ${CREATE_DASHBOARD} with approvals_required ${required}, ${APPROVAL_WARMUP} + ${APPROVAL_SAMPLES} runs, one at a time`,
        );
        return measure(client, access, required, demoBaseUrl);
      }, vars),
    );
  }
  return results;
}

/** The phase's lines for the report. */
export function votesReport(results: VoteFigures[]): string {
  const ms = (n: number) => `${n.toFixed(1)} ms`.padStart(9);
  return [
    "",
    "Deciding vote → tool_execution_started (issue 19; through wrangler dev's port, one run at a time; no goal set)",
    ...results.map(
      (r) =>
        `  approvals_required ${r.required}: ${r.samples} runs  p50 ${ms(percentile(r.started, 50))}  p99 ${ms(percentile(r.started, 99))}` +
        `  executions ${[...r.executions].map(([k, v]) => `${k}=${v}`).join(" ")}  calls at the MCP server ${r.calls}`,
    ),
    "",
  ].join("\n");
}
