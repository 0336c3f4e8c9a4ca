// Phase 15, MCP 2026-07-28 against the earlier revision (issue 21, contract
// section 21): the same approved create_dashboard on the demo MCP server as it
// speaks 2026-07-28 (stateless: no initialize, no session) and as the older
// kind (initialize, Mcp-Session-Id, DELETE), one engine serving both, runs one
// at a time, alternating, in the same bench run. Counted at the server: every
// HTTP request to its MCP endpoint between the approval and the run's end,
// which is the dispatch alone (the tool listing and policy come before the
// approval). Timed: approval sent → the tools/call's arrival at the server
// (its call log's arrival time; both processes share this machine's clock).
import { startDemoMcpProcess, type DemoMcpProcess } from "../../test/support/demo-mcp-process";
import { GOAL_STATELESS_REQUESTS_PER_MUTATION } from "../goals";
import { type Client, log, percentile, range, sortedCopy, tally, Waiter } from "../http-client";
import { withServer } from "../servers";
import { APPROVAL_SAMPLES, APPROVAL_WARMUP } from "../settings";

const ERAS = [
  { server: "stateless", era: "2026-07-28" },
  { server: "older", era: "2025-11-25" },
] as const;
type Era = (typeof ERAS)[number]["era"];

export interface EraFigures {
  era: Era;
  samples: number;
  /** HTTP requests at the server per approved mutation (sorted). */
  requests: number[];
  /** Of which, by JSON-RPC method, summed over the samples. */
  byMethod: Map<string, number>;
  /** Approval sent → tools/call arrival at the server, ms (sorted). */
  latency: number[];
  /** tool_execution of the timed runs, by outcome. */
  executions: Map<string, number>;
}

interface Snapshot {
  total: number;
  by_method: Record<string, number>;
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return (await response.json()) as T;
}

/** One approved create_dashboard on `server`: the requests its dispatch cost and approval → arrival. */
async function oneRun(
  client: Client,
  demo: DemoMcpProcess,
  server: string,
  title: string,
): Promise<{ requests: Snapshot; latencyMs: number; execution: string }> {
  const waiter = new Waiter();
  const tool = `mcp__${server}__create_dashboard`;
  const { run_id: runId } = await client.engine.trigger({
    message: "bench: one approved call",
    script: [{ tool_calls: [{ tool_name: tool, tool_call_id: "call-1", arguments: { title } }] }, { text: "done" }],
  });
  let approvalId: string | undefined;
  let execution: string | undefined;
  let ended = false;
  const sub = await client.subscribe(`/api/runs/${runId}/events?after=0`, (frame) => {
    const data = JSON.parse(frame.data) as { approval_id?: string; execution_status?: string; reason?: string };
    if (frame.event === "approval_requested") approvalId = data.approval_id;
    if (frame.event === "tool_execution") execution = data.execution_status === "executed" ? "executed" : `not_executed(${data.reason})`;
    if (frame.event === "run_completed" || frame.event === "run_failed") ended = true;
    waiter.notify();
  });
  try {
    await waiter.until(() => approvalId !== undefined || ended, `approval_requested in ${runId}`);
    if (approvalId === undefined) throw new Error(`run ${runId} ended without approval_requested`);
    const before = await getJson<Snapshot>(`${demo.baseUrl}/control/requests`);
    // Wall clock, as the server's call log stamps the arrival (one machine, one clock).
    const sentAtWallMs = Date.now();
    await client.engine.decideApproval(runId, approvalId, { decision: "approve" });
    await waiter.until(() => ended, `the end of ${runId}`);
    const after = await getJson<Snapshot>(`${demo.baseUrl}/control/requests`);
    const calls = await getJson<{ calls: { tool: string; arguments: { title?: string }; at: string }[] }>(`${demo.baseUrl}/control/calls`);
    const arrival = calls.calls.find((c) => c.arguments.title === title);
    if (!arrival) throw new Error(`the tools/call of ${runId} never reached the ${server} server`);
    const byMethod: Record<string, number> = {};
    for (const [method, n] of Object.entries(after.by_method)) {
      const added = n - (before.by_method[method] ?? 0);
      if (added > 0) byMethod[method] = added;
    }
    return {
      requests: { total: after.total - before.total, by_method: byMethod },
      latencyMs: Date.parse(arrival.at) - sentAtWallMs,
      execution: execution ?? "none",
    };
  } finally {
    sub.close();
  }
}

/** Phase 15: both revisions, one engine, runs alternating between them. */
export async function mcpErasPhase(): Promise<EraFigures[]> {
  const demos = new Map<Era, DemoMcpProcess>();
  try {
    for (const { era } of ERAS) demos.set(era, await startDemoMcpProcess({ DEMO_MCP_ERA: era }));
    const servers = Object.fromEntries(ERAS.map(({ server, era }) => [server, { url: demos.get(era)!.url }]));
    const vars = {
      MCP_SERVERS: JSON.stringify(servers),
      MUTATION_BUDGET: JSON.stringify(Object.fromEntries(ERAS.map(({ server }) => [`mcp__${server}__create_dashboard`, 1]))),
      // Hundreds of runs one after another from one principal: past the default 120 a minute.
      TRIGGER_RATE_PER_MINUTE: "0",
    };
    return await withServer(async (_server, client) => {
      log(
        `15. MCP eras: create_dashboard on a 2026-07-28 and a 2025-11-25 server, ${APPROVAL_WARMUP} + ${APPROVAL_SAMPLES} runs each, alternating`,
      );
      const figures = ERAS.map(
        ({ era }): EraFigures => ({ era, samples: 0, requests: [], byMethod: new Map(), latency: [], executions: new Map() }),
      );
      for (const step of range(APPROVAL_WARMUP + APPROVAL_SAMPLES)) {
        for (const [i, { server, era }] of ERAS.entries()) {
          const measured = await oneRun(client, demos.get(era)!, server, `eras ${era} ${step} ${Date.now()}`);
          if (step < APPROVAL_WARMUP) continue;
          const f = figures[i]!;
          f.samples += 1;
          f.requests.push(measured.requests.total);
          for (const [method, n] of Object.entries(measured.requests.by_method)) f.byMethod.set(method, (f.byMethod.get(method) ?? 0) + n);
          f.latency.push(measured.latencyMs);
          tally(f.executions, measured.execution);
        }
      }
      for (const f of figures) {
        f.requests = sortedCopy(f.requests);
        f.latency = sortedCopy(f.latency);
      }
      return figures;
    }, vars);
  } finally {
    await Promise.all([...demos.values()].map((demo) => demo.stop()));
  }
}

/** The phase's lines for the report, with the goal: one HTTP request per approved mutation on a stateless server. */
export function mcpErasReport(results: EraFigures[]): string {
  const ms = (n: number) => `${n.toFixed(1)} ms`.padStart(9);
  const lines = results.map((r) => {
    const methods = [...r.byMethod].map(([m, n]) => `${m} ${(n / Math.max(1, r.samples)).toFixed(2)}`).join(", ");
    return (
      `  ${r.era}: ${r.samples} runs  requests per mutation p50 ${percentile(r.requests, 50)} max ${r.requests.at(-1) ?? NaN} (${methods})` +
      `  approval → tools/call p50 ${ms(percentile(r.latency, 50))} p99 ${ms(percentile(r.latency, 99))}` +
      `  executions ${[...r.executions].map(([k, v]) => `${k}=${v}`).join(" ")}`
    );
  });
  const stateless = results.find((r) => r.era === "2026-07-28");
  const met =
    stateless !== undefined && stateless.samples > 0 && stateless.requests.every((n) => n === GOAL_STATELESS_REQUESTS_PER_MUTATION);
  return [
    "",
    "MCP eras (issue 21; one engine, two demo servers, runs alternating; requests counted at the server from the approval to the run's end)",
    ...lines,
    `  goal: exactly ${GOAL_STATELESS_REQUESTS_PER_MUTATION} HTTP requests (the tools/list after the approval, contract section 23, and the tools/call; no handshake) per approved mutation on the stateless server: ${met ? "met" : "MISSED"}`,
    "",
  ].join("\n");
}
