// Shared inputs of the provider tests: a dummy key (never a real one), a
// retry policy small enough to keep the tests fast, and a small tool-using
// conversation in the engine's neutral shape.
import type { ModelRequest, ModelToolSpec, RetryPolicy } from "../../src/providers/model-provider";

export const DUMMY_KEY = "dummy-test-key-0000";
/** Retries without waiting long: 3 attempts, at most a few ms apart (retry-after tests set their own). */
export const FAST_RETRY: RetryPolicy = { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 };

export const SYSTEM = "You are an operations assistant.";

export const TOOLS: ModelToolSpec[] = [
  {
    name: "mcp__demo__list_dashboards",
    description: "List dashboards",
    input_schema: { type: "object", properties: { limit: { type: "integer" } } },
  },
  {
    name: "mcp__demo__create_dashboard",
    description: "Create a dashboard",
    input_schema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
  },
];

export function firstRequest(text = "Show me the dashboards"): ModelRequest {
  return { system: SYSTEM, tools: TOOLS, conversation: [{ role: "user", text }] };
}

/** A conversation after one round of two tool calls, the second of which failed. */
export function afterToolRound(): ModelRequest {
  return {
    system: SYSTEM,
    tools: TOOLS,
    conversation: [
      { role: "user", text: "Make a dashboard called Revenue" },
      {
        role: "assistant",
        text: "I'll check first.",
        tool_calls: [
          { tool_call_id: "call_a", tool_name: "mcp__demo__list_dashboards", arguments: { limit: 5 } },
          { tool_call_id: "call_b", tool_name: "mcp__demo__create_dashboard", arguments: { title: "Revenue" } },
        ],
      },
      {
        role: "tool_results",
        results: [
          { tool_call_id: "call_a", content: "[]", is_error: false },
          { tool_call_id: "call_b", content: "denied by a person", is_error: true },
        ],
      },
    ],
  };
}

/** A conversation whose last assistant turn was cut off by max_tokens: its call has no result. */
export function withDanglingCall(followUp?: string): ModelRequest {
  return {
    system: SYSTEM,
    tools: TOOLS,
    conversation: [
      { role: "user", text: "Make a dashboard called Revenue" },
      {
        role: "assistant",
        text: "Creating it now",
        tool_calls: [{ tool_call_id: "call_cut", tool_name: "mcp__demo__create_dashboard", arguments: {} }],
      },
      ...(followUp !== undefined ? [{ role: "user" as const, text: followUp }] : []),
    ],
  };
}

export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject, but it resolved");
}
