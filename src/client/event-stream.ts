// The run's event stream as an async iterator (contract sections 5 and 27):
// over a WebSocket where the caller can open one (`openSocket`), else over SSE
// (frames parsed with eventsource-parser). It resumes after a dropped
// connection from the last sequence it yielded (`?after=`), never yields a
// (run_id, sequence) twice (a switch from the WebSocket to SSE included),
// ends after the terminal event or on 204 / close 1000, and turns 410 or close
// 4410 replay_gap into a ReplayGapError. It falls back to SSE when the upgrade
// is refused other than 401, 403, 404 or 410 (or never opens), or the socket
// closes abnormally (1006) twice running. Only fetch, TextDecoder,
// AbortSignal and a WebSocket: it runs in Node 20+, browsers and Workers alike.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ApiError, errorFromResponse, ReplayGapError, StreamRetriesExhaustedError } from "./errors.js";
import { type SocketEnd, socketMessages, type WebSocketLike } from "./socket-stream.js";
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

/**
 * Opens one WebSocket of the stream after `after`: the socket, the refusal of
 * an upgrade whose status the runtime shows (a Workers `fetch` upgrade), or
 * null where no WebSocket can be opened here.
 */
export type OpenSocket = (after: number, signal: AbortSignal) => Promise<{ socket: WebSocketLike } | { refused: Response } | null>;

/** What one connection ended with. */
type Ended = "terminal" | "no_more_events" | "dropped";

/** Refusals of an upgrade that SSE would only repeat: they are thrown, not fallen back from. */
const FINAL_UPGRADE_STATUSES = new Set([401, 403, 404, 410]);

/**
 * Iterates the events of `runId`. `first`, when given, is an already open
 * SSE response (the trigger's initial stream) used before any reconnection.
 * `openSocket`, when given, is tried first (contract section 27).
 */
export async function* streamEvents(
  runId: string,
  open: OpenStream,
  options: EventStreamOptions = {},
  first?: Response,
  openSocket?: OpenSocket,
): AsyncGenerator<EngineEvent, void, undefined> {
  let after = options.after ?? 0;
  if (openSocket !== undefined && first === undefined) {
    const overSocket = socketEvents(runId, openSocket, options);
    for (;;) {
      const step = await overSocket.next();
      if (step.done) {
        if (step.value.kind === "ended") return;
        after = step.value.last;
        break; // on to SSE, from the last sequence yielded
      }
      yield step.value;
    }
  }
  yield* sseEvents(runId, open, { ...options, after }, first);
}

/**
 * The WebSocket part: returns `ended` after the terminal event (or a close
 * 1000 that is not `reconnect`), or `fall_back` with the last sequence yielded
 * when SSE must take over.
 */
async function* socketEvents(
  runId: string,
  openSocket: OpenSocket,
  options: EventStreamOptions,
): AsyncGenerator<EngineEvent, { kind: "ended" } | { kind: "fall_back"; last: number }, undefined> {
  let last = options.after ?? 0;
  const maxAttempts = options.maxAttemptsWithoutProgress ?? DEFAULT_ATTEMPTS_WITHOUT_PROGRESS;
  const baseDelay = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
  const maxDelay = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  let failures = 0;
  let abnormalInARow = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const connection = new AbortController();
    const unlink = link(options.signal, connection);
    const before = last;
    let lastError: unknown;
    try {
      let opened: Awaited<ReturnType<OpenSocket>>;
      try {
        opened = await openSocket(last, connection.signal);
      } catch {
        options.signal?.throwIfAborted();
        opened = null; // this runtime cannot upgrade that way: SSE
      }
      if (opened === null) return { kind: "fall_back", last };
      if ("refused" in opened) {
        if (FINAL_UPGRADE_STATUSES.has(opened.refused.status))
          throw await errorFromResponse(opened.refused, `GET events of ${runId}`, last);
        await opened.refused.body?.cancel();
        return { kind: "fall_back", last };
      }
      const messages = socketMessages(opened.socket, connection.signal);
      let end: SocketEnd;
      for (;;) {
        const step = await messages.next();
        if (step.done) {
          end = step.value;
          break;
        }
        const event = toEvent(step.value, undefined, runId);
        if (event.sequence <= last) continue; // already yielded before a reconnection
        last = event.sequence;
        yield event;
        if (TERMINAL_EVENT_TYPES.includes(event.type)) {
          await messages.return({ code: 1000, reason: "", opened: true });
          return { kind: "ended" };
        }
      }
      options.signal?.throwIfAborted();
      if (!end.opened) return { kind: "fall_back", last }; // the upgrade was refused, or never answered
      if (end.code === 4410) {
        const earliest = Number(end.reason.split(":")[1]);
        throw new ReplayGapError({ error: "replay_gap", message: end.reason, earliest_sequence: earliest }, last);
      }
      if (end.code === 4401) {
        throw new ApiError(
          401,
          { error: "credential_ended", message: "The stream's credential was revoked, expired or its session ended." },
          undefined,
          `GET events of ${runId}`,
        );
      }
      if (end.code === 1008) throw new Error(`the server closed the stream of ${runId} as a policy violation: ${end.reason}`);
      if (end.code === 1000 && end.reason !== "reconnect") return { kind: "ended" };
      abnormalInARow = end.code === 1006 ? abnormalInARow + 1 : 0;
      if (abnormalInARow >= 2) return { kind: "fall_back", last };
      if (end.code === 1000) continue; // STREAM_MAX_SECONDS: resume at once with `after`
      lastError = new Error(`the WebSocket of ${runId} closed with ${end.code} ${end.reason}`);
    } finally {
      unlink();
      connection.abort();
    }
    failures = last > before ? 0 : failures + 1;
    if (failures > maxAttempts) throw new StreamRetriesExhaustedError(runId, last, failures, { cause: lastError });
    if (failures > 0) await sleep(Math.min(maxDelay, baseDelay * 2 ** (failures - 1)), options.signal);
  }
}

/** The SSE part (contract section 5). */
async function* sseEvents(
  runId: string,
  open: OpenStream,
  options: EventStreamOptions,
  first: Response | undefined,
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
                const message = queue.shift() as EventSourceMessage;
                const event = toEvent(message.data, message.id, runId);
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

function toEvent(data: string, id: string | undefined, runId: string): EngineEvent {
  let event: EngineEvent;
  try {
    event = JSON.parse(data) as EngineEvent;
  } catch {
    throw new MalformedEventError(`event ${id ?? "?"} of ${runId} is not JSON: ${data.slice(0, 200)}`);
  }
  if (typeof event.sequence !== "number" || event.run_id !== runId) {
    throw new MalformedEventError(`event ${id ?? "?"} does not belong to ${runId} or has no sequence`);
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
