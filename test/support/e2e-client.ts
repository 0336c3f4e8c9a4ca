// Helpers shared by the end-to-end suites: authorised calls to the Worker the
// global setup serves, the demo MCP server's control API, and `Scenario`, a
// run with one subscriber attached from sequence 1 whose events a test can
// wait for and compare as an ordered shape.
import { expect, inject } from "vitest";
import { eventIds, RawSseClient } from "./sse-client";

export const url = inject("workerUrl");
export const token = inject("workerToken");
export const demo = inject("demoMcpBaseUrl");
export const auth = { authorization: `Bearer ${token}` };

export const CREATE = "mcp__demo__create_dashboard";
export const UPDATE = "mcp__demo__update_dashboard";
export const KPI = "mcp__demo__create_kpi";
export const ALERT = "mcp__demo__create_alert_from_chart";
export const LIST = "mcp__demo__list_dashboards";

export interface Event {
  sequence: number;
  type: string;
  tool_name?: string;
  tool_call_id?: string;
  approval_id?: string;
  [k: string]: unknown;
}

export async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

export async function demoCalls(): Promise<{ total: number; by_tool: Record<string, number>; calls: { tool: string; arguments: any }[] }> {
  return (await fetch(`${demo}/control/calls`)).json() as never;
}

export async function armFault(tool: string, mode: "delay" | "error" | "commit_then_drop", delayMs?: number) {
  const res = await fetch(`${demo}/control/faults`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool, mode, ...(delayMs !== undefined ? { delay_ms: delayMs } : {}) }),
  });
  expect(res.status).toBe(200);
}

/** A run and its one subscriber, attached from sequence 1. */
export class Scenario {
  constructor(
    readonly runId: string,
    readonly client: RawSseClient,
  ) {}

  /** Triggers a scripted run (channel C1 unless `extra` says otherwise) and attaches its subscriber. */
  static async start(script: unknown[], extra: Record<string, unknown> = {}): Promise<Scenario> {
    const { status, json } = await post("/api/trigger", { message: "scenario", channel_id: "C1", script, ...extra });
    expect(status).toBe(202);
    return new Scenario(json.run_id, await RawSseClient.open(`${url}/api/runs/${json.run_id}/events`, auth));
  }

  get events(): Event[] {
    return this.client.events.map((e) => JSON.parse(e.data) as Event);
  }

  /** Waits for the first event of `type` (optionally for one tool call) and returns it. */
  async waitFor(type: string, toolCallId?: string): Promise<Event> {
    for (;;) {
      const found = this.events.find((e) => e.type === type && (toolCallId === undefined || e.tool_call_id === toolCallId));
      if (found) return found;
      if (this.client.ended) throw new Error(`stream ended without ${type}: ${this.shape().join(", ")}`);
      await this.client.waitFor(this.client.events.length + 1);
    }
  }

  async decide(approvalId: string, body: Record<string, unknown>) {
    return post(`/api/runs/${this.runId}/approvals/${approvalId}`, { decided_by: "U-approver", ...body });
  }

  async approve(toolCallId: string, extra: Record<string, unknown> = {}) {
    const requested = await this.waitFor("approval_requested", toolCallId);
    const answer = await this.decide(requested.approval_id!, { decision: "approve", ...extra });
    expect(answer.status).toBe(200);
    return requested;
  }

  async toEnd(): Promise<Event[]> {
    await this.client.toEnd(30_000);
    const all = this.events;
    expect(eventIds(this.client.events)).toEqual(all.map((_, i) => i + 1));
    return all;
  }

  /** Event types with the call they belong to, heartbeats left out. */
  shape(): string[] {
    return this.events.filter((e) => e.type !== "heartbeat").map((e) => (e.tool_call_id ? `${e.type}:${e.tool_call_id}` : e.type));
  }

  one(type: string, toolCallId?: string): Event {
    const found = this.events.filter((e) => e.type === type && (toolCallId === undefined || e.tool_call_id === toolCallId));
    expect(found).toHaveLength(1);
    return found[0]!;
  }
}

/** A question, then a write the model wants to run after it: the ordered-admission case. */
export const ASK_THEN_WRITE = [
  {
    tool_calls: [
      { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which dashboard?" } },
      { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } },
    ],
  },
];

export async function trigger(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/api/trigger`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

export async function summary(runId: string): Promise<any> {
  return (await fetch(`${url}/api/runs/${runId}`, { headers: auth })).json();
}

export const events = (runId: string, query = "") => RawSseClient.open(`${url}/api/runs/${runId}/events${query}`, auth);

/** Turns that keep a run going for a few seconds: a message every `gapMs`. */
export function slowScript(turns: number, gapMs: number) {
  return Array.from({ length: turns }, (_, i) => ({ text: `step ${i + 1}`, delay_ms: gapMs }));
}
