// Adapter hooks (contract section 11). An adapter (Slack first) consumes the
// run's stream like any client; this module turns stream events into its hook
// calls, so every adapter gets the same semantics:
//  - onToolStart(toolName, input) at tool_started, for every call;
//  - onToolExecutionStarted(toolName), optional, only at tool_execution_started,
//    which only human-approved calls have (never automatic approval, denied or
//    expired approvals, or human__ask);
//  - onToolEnd(toolName, elapsedMs, approved) at tool_completed.
// The first and last keep these signatures for ever. Replayed events (same
// run_id and sequence) are ignored, so a reconnecting adapter calls no hook twice.

export interface AdapterHooks {
  onToolStart(toolName: string, input: Record<string, unknown>): void;
  onToolExecutionStarted?(toolName: string): void;
  onToolEnd(toolName: string, elapsedMs: number, approved: boolean): void;
}

interface StreamEvent {
  run_id: string;
  sequence: number;
  type: string;
  tool_name?: string;
  tool_call_id?: string;
  approval_required?: boolean;
  duration_ms?: number;
  approved?: boolean;
}

/** Returns a function to feed each event's JSON (the SSE `data` line) to. */
export function createHookDispatcher(hooks: AdapterHooks): (eventJson: string) => void {
  const seen = new Map<string, number>();
  return (eventJson) => {
    const event = JSON.parse(eventJson) as StreamEvent;
    const last = seen.get(event.run_id) ?? 0;
    if (event.sequence <= last) return; // a replayed event: its hooks already ran
    seen.set(event.run_id, event.sequence);
    if (event.tool_name === undefined) return;
    if (event.type === "tool_started") {
      // The stream carries no arguments before approval; adapters get the call's identity.
      hooks.onToolStart(event.tool_name, { tool_call_id: event.tool_call_id, approval_required: event.approval_required });
    } else if (event.type === "tool_execution_started") {
      hooks.onToolExecutionStarted?.(event.tool_name);
    } else if (event.type === "tool_completed") {
      hooks.onToolEnd(event.tool_name, event.duration_ms ?? 0, event.approved === true);
    }
  };
}
