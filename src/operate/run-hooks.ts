// Where the run's metrics and spans hear about work the event log does not
// time (contract section 22): each tools/call as it leaves and when it
// answers (aee_approval_to_dispatch_seconds, the `mcp.send` span), each model
// turn (`model.turn`), each Slack Web API post (`slack.post`). Thin wrappers
// around the existing openers, sources and clients: nothing else changes,
// and a hook never throws into the run.
import type { SlackAPIClient } from "slack-web-api-client";
import type { ModelSource } from "../providers/turn-source";
import type { CallSession } from "../execution/dispatch-pipeline";
import type { DispatchOutcome } from "../execution/tool-calls";
import { logger } from "./logger";

export interface SendHooks {
  sent(toolCallId: string): void;
  answered(toolCallId: string, outcome: DispatchOutcome | null): void;
}

/** Wraps a call opener so `hooks` hear each tools/call right before it leaves and when it answers. */
export function observeSends<C extends { tool_call_id: string }>(
  open: (call: C) => Promise<CallSession>,
  hooks: SendHooks,
): (call: C) => Promise<CallSession> {
  return async (call) => {
    const session = await open(call);
    if (session.kind !== "open") return session;
    return {
      ...session,
      send: async (followUp) => {
        // A follow-up after input_required (contract section 21) is not a new dispatch: only the first send is timed.
        if (followUp !== undefined) return session.send(followUp);
        quietly(() => hooks.sent(call.tool_call_id));
        let outcome: DispatchOutcome | null = null;
        try {
          const answer = await session.send();
          if (answer.kind !== "input_required") outcome = answer;
          return answer;
        } finally {
          quietly(() => hooks.answered(call.tool_call_id, outcome));
        }
      },
    };
  };
}

export interface TurnHooks {
  started(index: number): void;
  ended(index: number, ok: boolean): void;
}

/** The same model source, its `next` (one model turn) timed by `hooks`. */
export function observeTurns(source: ModelSource, hooks: TurnHooks): ModelSource {
  return {
    delayMs: (index) => source.delayMs(index),
    begin: (message) => source.begin(message),
    toolResults: (calls) => source.toolResults(calls),
    next: async (index, signal) => {
      quietly(() => hooks.started(index));
      let ok = false;
      try {
        const step = await source.next(index, signal);
        ok = true;
        return step;
      } finally {
        quietly(() => hooks.ended(index, ok));
      }
    },
  };
}

export interface PostHooks {
  /** Returns a token handed back to `ended`. */
  started(method: string): string;
  ended(token: string, ok: boolean): void;
}

/** The same Slack client, its chat.postMessage / chat.update calls timed by `hooks`. */
export function observePosts(client: SlackAPIClient, hooks: PostHooks): SlackAPIClient {
  const chat = client.chat;
  const timed =
    <A extends unknown[], R>(method: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      let token: string | null = null;
      quietly(() => {
        token = hooks.started(method);
      });
      let ok = false;
      try {
        const answer = await call(...args);
        ok = true;
        return answer;
      } finally {
        const started = token;
        if (started !== null) quietly(() => hooks.ended(started, ok));
      }
    };
  const wrappedChat = Object.create(chat) as typeof chat;
  wrappedChat.postMessage = timed("chat.postMessage", chat.postMessage.bind(chat));
  wrappedChat.update = timed("chat.update", chat.update.bind(chat));
  const wrapped = Object.create(client) as SlackAPIClient;
  Object.defineProperty(wrapped, "chat", { value: wrappedChat });
  return wrapped;
}

/** A hook that throws is logged and stops nothing: observability never fails a run. */
function quietly(hook: () => void): void {
  try {
    hook();
  } catch (err) {
    logger.warn("a metrics or trace hook failed; the run goes on", { error: String(err) });
  }
}
