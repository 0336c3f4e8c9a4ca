// Phase 5, approval decision → tool_execution_started: runs with one call,
// one at a time, one subscriber each, the paths alternating; the mutation
// (create_dashboard) and its control (list_dashboards behind an approval: no
// durable row, no storage pool).
import { performance } from "node:perf_hooks";
import { type Client, log, range, tally, Waiter } from "../http-client";
import { withServer } from "../servers";
import { APPROVAL_CONTROL_SAMPLES, APPROVAL_SAMPLES, APPROVAL_WARMUP, CREATE_DASHBOARD, LIST_DASHBOARDS } from "../settings";
import { approve, watchRun, type WatchedRun } from "../watched-run";

export interface ApprovalLatency {
  label: string;
  tool: string;
  /** Approval request sent → the subscriber has tool_execution_started, ms. */
  started: number[];
  /** Approval request sent → the subscriber has approval_resolved, ms. */
  resolved: number[];
  /** The approval request's own round trip, ms. */
  rtts: number[];
  /** tool_execution of the timed runs, by outcome. */
  executions: Map<string, number>;
}

/**
 * `samples` (after APPROVAL_WARMUP) approvals of `tool` per path, one run at
 * a time, the paths alternating (the order flips every round): a fresh run
 * whose one call is `tool`, one subscriber from sequence 1, wait for
 * approval_requested, then time from just before the approval request is
 * written to the moment the subscriber's socket hands this process the
 * tool_execution_started frame. Nothing else runs in a timed section: the
 * previous run has ended (its dispatch and settlement are done) and the next
 * one is prepared (triggered, subscribed, tools listed) only once the timed
 * frame has arrived, overlapping the end of the timed run.
 */
async function measureApprovals(clients: Client[], tool: string, samples: number): Promise<ApprovalLatency[]> {
  const waiter = new Waiter();
  const results: ApprovalLatency[] = clients.map((c) => ({
    label: c.label,
    tool,
    started: [],
    resolved: [],
    rtts: [],
    executions: new Map(),
  }));
  const order: number[] = range(APPROVAL_WARMUP + samples).flatMap((i) =>
    i % 2 === 0 ? range(clients.length) : range(clients.length).reverse(),
  );
  const prepare = (step: number): Promise<WatchedRun> => {
    const client = clients[order[step]!]!;
    const prepared = watchRun(client, tool, `approval ${client.label} ${step}`, waiter);
    prepared.catch(() => undefined); // awaited (and its failure reported) when its turn comes
    return prepared;
  };
  let next: Promise<WatchedRun> | undefined = prepare(0);
  let previous: WatchedRun | undefined;
  /** The timed runs and their paths, for their tool_execution once ended. */
  const timed: [WatchedRun, ApprovalLatency][] = [];
  try {
    for (let step = 0; step < order.length; step++) {
      const index = order[step]!;
      const client = clients[index]!;
      const result = results[index]!;
      const run: WatchedRun = await next!;
      next = undefined;
      const sample = Math.floor(step / clients.length);
      await waiter.until(() => run.approvalId !== undefined || run.terminal !== undefined, `approval_requested in ${run.runId}`);
      if (run.approvalId === undefined)
        throw new Error(`run ${run.runId} ended without approval_requested (${[...run.first.keys()].join(", ")})`);
      if (previous) {
        const done = previous;
        await waiter.until(() => done.terminal !== undefined, `the end of ${done.runId}`);
        done.sub?.close();
      }
      previous = run;
      const answer = await approve(client, run);
      const rtt = performance.now() - run.approvalSentAt;
      if (answer !== "200") throw new Error(`approving ${run.runId}: ${answer}`);
      await waiter.until(
        () => run.first.has("tool_execution_started") || run.terminal !== undefined,
        `tool_execution_started in ${run.runId}`,
      );
      const started = run.first.get("tool_execution_started");
      if (!started) throw new Error(`run ${run.runId} ended without tool_execution_started (${[...run.first.keys()].join(", ")})`);
      if (step + 1 < order.length) next = prepare(step + 1);
      if (sample < APPROVAL_WARMUP) continue;
      result.started.push(started.at - run.approvalSentAt);
      result.resolved.push(run.first.get("approval_resolved")!.at - run.approvalSentAt);
      result.rtts.push(rtt);
      timed.push([run, result]);
    }
    if (previous) {
      const done = previous;
      await waiter.until(() => done.terminal !== undefined, `the end of ${done.runId}`);
    }
  } finally {
    previous?.sub?.close();
    void next?.then(
      (r) => r.sub?.close(),
      () => undefined,
    );
  }
  for (const [run, result] of timed) tally(result.executions, run.execution);
  return results;
}

/** Phase 5 on its own server: the mutation, then the read-only control, both paths. */
export function approvalPhase(vars: Record<string, string>): Promise<ApprovalLatency[]> {
  return withServer(async (_server, client, direct) => {
    const clients = direct ? [client, direct] : [client];
    log(`5. approval → tool_execution_started: ${CREATE_DASHBOARD}, ${APPROVAL_WARMUP} + ${APPROVAL_SAMPLES} runs per path, one at a time`);
    const mutation = await measureApprovals(clients, CREATE_DASHBOARD, APPROVAL_SAMPLES);
    log(`5. control: ${LIST_DASHBOARDS}, ${APPROVAL_WARMUP} + ${APPROVAL_CONTROL_SAMPLES} runs per path`);
    const control = await measureApprovals(clients, LIST_DASHBOARDS, APPROVAL_CONTROL_SAMPLES);
    return [...mutation, ...control];
  }, vars);
}
