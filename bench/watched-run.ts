// What phases 5 and 6 share: their host config, and a run with one tool call
// watched by one subscriber (node:http, timed at the socket) from sequence 1.
import { performance } from "node:perf_hooks";
import { ApiError } from "../src/client";
import type { Client, Subscription, Waiter } from "./http-client";
import { CREATE_DASHBOARD, LIST_DASHBOARDS } from "./settings";

/** Host config of the servers of phases 5 and 6: the demo MCP server, one create_dashboard per run, list_dashboards behind an approval. */
export function approvalVars(mcpUrl: string): Record<string, string> {
  return {
    MCP_SERVERS: JSON.stringify({ demo: { url: mcpUrl, trust_annotations: true } }),
    MUTATION_BUDGET: JSON.stringify({ [CREATE_DASHBOARD]: 1 }),
    TOOL_POLICY: JSON.stringify({ [LIST_DASHBOARDS]: { level: "approve" } }),
  };
}

/** The first frame of one type, with the time its chunk reached this process (performance.now(), ms). */
export interface Seen {
  at: number;
  data: Record<string, unknown>;
}

/** One run whose script is one tool call then a closing text, watched by one subscriber from sequence 1. */
export class WatchedRun {
  readonly first = new Map<string, Seen>();
  sub: Subscription | undefined;
  /** When this benchmark sent the approval (performance.now(), ms). */
  approvalSentAt = NaN;
  constructor(
    readonly runId: string,
    /** The call's `title` argument, unique per run: how the demo server's call log tells the calls apart. */
    readonly title: string,
  ) {}

  get approvalId(): string | undefined {
    return this.first.get("approval_requested")?.data.approval_id as string | undefined;
  }

  get terminal(): Seen | undefined {
    return this.first.get("run_completed") ?? this.first.get("run_failed");
  }

  /** The error message of an executed call that failed, if any. */
  get executionError(): string | undefined {
    return (this.first.get("tool_execution")?.data.error as { message?: string } | undefined)?.message;
  }

  /** tool_execution as one word: "executed", "executed/<error code>" or "not_executed/<reason>"; "none" before it. */
  get execution(): string {
    const data = this.first.get("tool_execution")?.data;
    if (!data) return "none";
    const error = (data.error as { code?: string } | undefined)?.code;
    const detail = data.execution_status === "executed" ? error : (data.reason as string | undefined);
    return detail === undefined ? String(data.execution_status) : `${String(data.execution_status)}/${detail}`;
  }
}

export async function watchRun(client: Client, tool: string, title: string, waiter: Waiter): Promise<WatchedRun> {
  // list_dashboards takes no arguments; the title is ignored by it (and only logged by the demo server).
  const { run_id } = await client.engine.trigger({
    message: "bench: approved execution",
    script: [
      { tool_calls: [{ tool_name: tool, tool_call_id: "call-1", arguments: tool === CREATE_DASHBOARD ? { title } : {} }] },
      { text: "done" },
    ],
  });
  const run = new WatchedRun(run_id, title);
  run.sub = await client.subscribe(`/api/runs/${run_id}/events?after=0`, (frame, at) => {
    if (!run.first.has(frame.event)) run.first.set(frame.event, { at, data: JSON.parse(frame.data) as Record<string, unknown> });
    waiter.notify();
  });
  return run;
}

/** Sends the approval; "200", or the refusal as "<status> <error code>". */
export async function approve(client: Client, run: WatchedRun): Promise<string> {
  run.approvalSentAt = performance.now();
  try {
    await client.engine.decideApproval(run.runId, run.approvalId ?? "", { decision: "approve" });
    return "200";
  } catch (err) {
    if (err instanceof ApiError) return `${err.status} ${err.code}`;
    throw err;
  }
}
