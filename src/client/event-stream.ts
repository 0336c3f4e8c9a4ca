// The run's event stream as an async iterator (contract section 5): parses the
// SSE frames with eventsource-parser, resumes after a dropped connection from
// the last sequence it yielded (`?after=`), never yields a (run_id, sequence)
// twice, ends after the terminal event or on 204, and turns 410 replay_gap
// into a ReplayGapError. Only fetch, TextDecoder and AbortSignal: it runs in
// Node 20+, browsers and Workers alike.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { errorFromResponse, StreamRetriesExhaustedError } from "./errors.js";
import { TERMINAL_EVENT_TYPES, type EngineEvent } from "./types.js";

export interface EventStreamOptions {
  /** Yield events with a sequence above this one (default 0: from the first event). */
  after?: number;
  /** Aborting ends the iteration with the signal's reason. */
  signal?: AbortSignal;
  /** Reconnection attempts in a row that deliver no new event before giving up (default 10). */
  maxAttemptsWithoutProgress?: number;
  /** First reconnection delay; it doubles up to `maxDelayMs` while attempts make no progress (default 100). */
  retryDelayMs?: number;
  /** Longest pause between two reconnection attempts (default 5000). */
  maxDelayMs?: number;
}

/** Opens one HTTP response of the stream after `after`; the iterator calls it again to resume. */
export type OpenStream = (after: number, signal: AbortSignal) => Promise<Response>;

const DEFAULT_ATTEMPTS_WITHOUT_PROGRESS = 10;
const DEFAULT_RETRY_DELAY_MS = 100;
const DEFAULT_MAX_DELAY_MS = 5_000;
/** Retry-After above this is not worth holding a consumer's iterator for; it surfaces as the error. */
const MAX_HONOURED_RETRY_AFTER_SECONDS = 30;

/** What one connection ended with. */
type Ended = "terminal" | "no_more_events" | "dropped";

/**
 * Iterates the events of `runId`. `first`, when given, is an already open
 * response (the trigger's initial stream) used before any reconnection.
 */
export async function* streamEvents(
  runId: string,
  open: OpenStream,
  options: EventStreamOptions = {},
  first?: Response,
): AsyncGenerator<EngineEvent, void, undefined> {
  let last = options.after ?? 0;
  const maxAttempts = options.maxAttemptsWithoutProgress ?? DEFAULT_ATTEMPTS_WITHOUT_PROGRESS;
  const baseDelay = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
  const maxDelay = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  let pending = first;
  let failures = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const connection = new AbortController();
    const unlink = link(options.signal, connection);
    let lastError: unknown;
    let retryAfterMs: number | undefined;
    const before = last;
    try {
      let response: Response | undefined = pending;
      pending = undefined;
      try {
        response ??= await open(last, connection.signal);
      } catch (err) {
        options.signal?.throwIfAborted();
        lastError = err; // network failure before any answer: retry
      }
      if (response) {
        if (response.status === 204) {
          await response.body?.cancel();
          return;
        }
        if (response.status !== 200) {
          const error = await errorFromResponse(response, `GET events of ${runId}`, last);
          if (response.status < 500 && response.status !== 429) throw error;
          lastError = error;
          if (error.retryAfterSeconds !== undefined && error.retryAfterSeconds <= MAX_HONOURED_RETRY_AFTER_SECONDS) {
            retryAfterMs = error.retryAfterSeconds * 1_000;
          }
        } else {
          const queue: EventSourceMessage[] = [];
          const parser = createParser({ onEvent: (message) => queue.push(message) });
          const reader = readChunks(response, connection.signal);
          let ended: Ended = "dropped";
          try {
            reading: for (;;) {
              const chunk = await reader.next();
              if (chunk.done) {
                ended = "no_more_events";
                break;
              }
              parser.feed(chunk.value);
              while (queue.length > 0) {
                const event = toEvent(queue.shift() as EventSourceMessage, runId);
                if (event.sequence <= last) continue; // already yielded before a reconnection
                last = event.sequence;
                yield event;
                if (TERMINAL_EVENT_TYPES.includes(event.type)) {
                  ended = "terminal";
                  break reading;
                }
              }
            }
          } catch (err) {
            options.signal?.throwIfAborted();
            if (err instanceof MalformedEventError) throw err;
            lastError = err; // the connection dropped mid-stream: resume from `last`
          } finally {
            await reader.return(undefined);
          }
          if (ended === "terminal") return;
          // A clean end without the terminal event (server restart, retention overtaking a slow reader):
          // reconnect; the server answers 204 if the run has ended, or 410 if events were lost.
          lastError ??= new Error(`the stream of ${runId} ended after sequence ${last} without a terminal event`);
        }
      }
    } finally {
      unlink();
      connection.abort();
    }
    // A connection that delivered something is resumed at once; one that did not backs off.
    failures = last > before ? 0 : failures + 1;
    if (failures > maxAttempts) throw new StreamRetriesExhaustedError(runId, last, failures, { cause: lastError });
    if (failures > 0 || retryAfterMs !== undefined) {
      await sleep(retryAfterMs ?? Math.min(maxDelay, baseDelay * 2 ** (failures - 1)), options.signal);
    }
  }
}

/** An event whose frame cannot be read is a server bug; retrying would not fix it. */
export class MalformedEventError extends Error {
  override readonly name = "MalformedEventError";
}

function toEvent(message: EventSourceMessage, runId: string): EngineEvent {
  let event: EngineEvent;
  try {
    event = JSON.parse(message.data) as EngineEvent;
  } catch {
    throw new MalformedEventError(`event ${message.id ?? "?"} of ${runId} is not JSON: ${message.data.slice(0, 200)}`);
  }
  if (typeof event.sequence !== "number" || event.run_id !== runId) {
    throw new MalformedEventError(`event ${message.id ?? "?"} does not belong to ${runId} or has no sequence`);
  }
  return event;
}

/** Text chunks of a response body; `return()` cancels the body so the socket is released. */
async function* readChunks(response: Response, signal: AbortSignal): AsyncGenerator<string, void, undefined> {
  if (!response.body) return;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const onAbort = () => void reader.cancel().catch(() => {});
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield decoder.decode(value, { stream: true });
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    await reader.cancel().catch(() => {});
  }
}

/** Aborts `child` when `parent` aborts; returns the unlinking function. */
function link(parent: AbortSignal | undefined, child: AbortController): () => void {
  if (!parent) return () => {};
  if (parent.aborted) {
    child.abort(parent.reason);
    return () => {};
  }
  const onAbort = () => child.abort(parent.reason);
  parent.addEventListener("abort", onAbort, { once: true });
  return () => parent.removeEventListener("abort", onAbort);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
