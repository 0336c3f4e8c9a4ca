// Helpers shared by the end-to-end suites: the engine client (src/client)
// pointed at the Worker the global setup serves, the demo MCP server's control
// API, and `Scenario`, a run with one subscriber attached from sequence 1
// (the client's resuming event iterator) whose events a test can wait for and
// compare as an ordered shape.
import { expect, inject } from "vitest";
import { type ApprovalDecision, EngineClient, type ScriptTurn, type TriggerRequest } from "../../src/client";
import { RawSseClient } from "./sse-client";

export const url = inject("workerUrl");
export const token = inject("workerToken");
export const demo = inject("demoMcpBaseUrl");
export const auth = { authorization: `Bearer ${token}` };
export const engine = new EngineClient({ baseUrl: url, token });

export const CREATE = "mcp__demo__create_dashboard";
export const UPDATE = "mcp__demo__update_dashboard";
export const KPI = "mcp__demo__create_kpi";
export const ALERT = "mcp__demo__create_alert_from_chart";
export const LIST = "mcp__demo__list_dashboards";

/** An event as tests read it: the envelope plus whatever fields its type has. */
export interface Event {
  sequence: number;
  type: string;
  run_id: string;
  tool_name?: string;
  tool_call_id?: string;
  approval_id?: string;
  [k: string]: unknown;
}

export interface DemoCall {
  tool: string;
  arguments: Record<string, unknown>;
}

export async function demoCalls(): Promise<{ total: number; by_tool: Record<string, number>; calls: DemoCall[] }> {
  return (await fetch(`${demo}/control/calls`)).json() as never;
}

export async function demoReset(): Promise<void> {
  expect((await fetch(`${demo}/control/reset`, { method: "POST" })).status).toBe(200);
}

export async function armFault(tool: string, mode: "delay" | "error" | "commit_then_drop", delayMs?: number) {
  const res = await fetch(`${demo}/control/faults`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool, mode, ...(delayMs !== undefined ? { delay_ms: delayMs } : {}) }),
  });
  expect(res.status).toBe(200);
}

/** A raw SSE reader of the events route, for tests about the exact bytes sent. */
export const rawEvents = (runId: string, query = "") => RawSseClient.open(`${url}/api/runs/${runId}/events${query}`, auth);

/** Resolves as `promise` does, or rejects after `timeoutMs` naming what was awaited. */
function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A run and its one subscriber (the engine client's event iterator), attached from sequence 1. */
export class Scenario {
  readonly events: Event[] = [];
  ended = false;
  #failure: unknown;
  #wakers: (() => void)[] = [];
  readonly #done: Promise<void>;

  constructor(readonly runId: string) {
    this.#done = this.#consume();
  }

  /** Triggers a scripted run (channel C1 unless `extra` says otherwise) and attaches its subscriber. */
  static async start(script: ScriptTurn[], extra: Partial<TriggerRequest> = {}): Promise<Scenario> {
    const receipt = await engine.trigger({ message: "scenario", channel_id: "C1", script, ...extra });
    expect(receipt.status).toBe("accepted");
    return new Scenario(receipt.run_id);
  }

  async #consume(): Promise<void> {
    try {
      for await (const event of engine.events(this.runId)) {
        this.events.push(event as unknown as Event);
        this.#wake();
      }
    } catch (err) {
      this.#failure = err;
    } finally {
      this.ended = true;
      this.#wake();
    }
  }

  #wake(): void {
    for (const wake of this.#wakers.splice(0)) wake();
  }

  #next(): Promise<void> {
    return new Promise((resolve) => this.#wakers.push(resolve));
  }

  /** Waits for the first event of `type` (optionally for one tool call) and returns it. */
  async waitFor(type: string, toolCallId?: string, timeoutMs = 20_000): Promise<Event> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find((e) => e.type === type && (toolCallId === undefined || e.tool_call_id === toolCallId));
      if (found) return found;
      if (this.ended) throw new Error(`stream ended without ${type}: ${this.shape().join(", ")}`, { cause: this.#failure });
      await within(this.#next(), Math.max(1, deadline - Date.now()), `${type} ${toolCallId ?? ""} in ${this.runId}`);
    }
  }

  decide(approvalId: string, body: Partial<ApprovalDecision> & Pick<ApprovalDecision, "decision">) {
    return engine.decideApproval(this.runId, approvalId, body);
  }

  async approve(toolCallId: string, extra: Partial<ApprovalDecision> = {}) {
    const requested = await this.waitFor("approval_requested", toolCallId);
    const answer = await this.decide(requested.approval_id!, { decision: "approve", ...extra });
    expect(answer).toEqual({ approval_id: requested.approval_id, decision: "approved", status: "resolved" });
    return requested;
  }

  /** Waits for the terminal event; every sequence from 1 arrived exactly once. */
  async toEnd(timeoutMs = 30_000): Promise<Event[]> {
    await within(this.#done, timeoutMs, `the end of ${this.runId}`);
    if (this.#failure) throw this.#failure;
    const all = this.events;
    expect(all.map((e) => e.sequence)).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)?.type).toMatch(/^run_(completed|failed)$/);
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
export const ASK_THEN_WRITE: ScriptTurn[] = [
  {
    tool_calls: [
      { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which dashboard?" } },
      { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "x" } },
    ],
  },
];

/** Turns that keep a run going for a few seconds: a message every `gapMs`. */
export function slowScript(turns: number, gapMs: number) {
  return Array.from({ length: turns }, (_, i) => ({ text: `step ${i + 1}`, delay_ms: gapMs }));
}

/** Signs in to the console (POST /console/session) with `token` on `baseUrl`: the session cookie, `name=value`. */
export async function consoleCookie(baseUrl: string, token: string): Promise<string> {
  const response = await fetch(`${baseUrl}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: baseUrl },
    body: JSON.stringify({ token }),
  });
  expect(response.status).toBe(204);
  return response.headers.get("set-cookie")!.split(";")[0]!;
}
