// The run's stream (contract section 5) as one object: the sequenced event
// log, the subscriber set, fan-out of each appended frame, terminal fencing
// (nothing is appended after run_completed / run_failed) and the SSE
// response, with 410 replay_gap and 204 for a finished run with nothing left
// to send. It works over a minimal SQL interface, so it is unit-testable
// without a Durable Object.
import type { ErrorBody } from "../base/api-error";
import { newSubscriptionId } from "../ids";
import { type AppendedEvent, EventLog, type SqlLike } from "./event-log";
import { isTerminalEventType, type EventType } from "../wire/events";
import type { EventFields } from "../wire/event-schemas";
import { encodeSseFrame, SSE_HEADERS } from "./sse";
import { SubscriberRegistry } from "./subscriber-registry";
import { SubscriberStream } from "./subscriber-stream";
import type { WatcherSockets, WatchRequest } from "./watcher-sockets";

export interface StreamIdentity {
  run_id: string;
  channel_id: string;
}

export class RunStream {
  readonly #log: EventLog;
  readonly #identity: StreamIdentity;
  readonly #subscribers = new SubscriberRegistry<SubscriberStream>();
  #terminal: boolean;
  /** The watchers on hibernatable sockets (contract section 27), when the object hosts any. */
  #sockets: WatcherSockets | undefined;
  /** When the last event was appended; heartbeats fill silences longer than the interval. */
  #lastAppendAt: number;

  constructor(sql: SqlLike, maxEvents: number, identity: StreamIdentity, terminal: boolean, now = Date.now()) {
    this.#log = new EventLog(sql, maxEvents);
    this.#identity = identity;
    this.#terminal = terminal;
    this.#lastAppendAt = now;
  }

  get lastSequence(): number {
    return this.#log.lastSequence;
  }
  get earliestSequence(): number {
    return this.#log.earliestSequence;
  }
  /** Every watcher: SSE responses held here, SSE served by the Worker from a socket, and WebSocket clients. */
  get subscriberCount(): number {
    const { sse, websocket } = this.watcherCounts();
    return sse + websocket;
  }
  /** Watchers by kind (the summary's `watchers`); only SSE watchers need heartbeats. */
  watcherCounts(): { sse: number; websocket: number } {
    const sockets = this.#sockets?.counts() ?? { sse: 0, websocket: 0 };
    return { sse: this.#subscribers.size + sockets.sse, websocket: sockets.websocket };
  }
  /** Serves watchers over the object's hibernatable sockets too. */
  useSockets(sockets: WatcherSockets): this {
    this.#sockets = sockets;
    return this;
  }
  get lastAppendAt(): number {
    return this.#lastAppendAt;
  }
  get terminal(): boolean {
    return this.#terminal;
  }

  /**
   * Appends one event and pushes its frame to every live subscriber. Returns
   * null, appending nothing, once the terminal event was appended (terminal
   * fencing), whatever asks: a late alarm, a late dispatch result, a second cancel.
   */
  append<T extends EventType>(type: T, fields: EventFields<T>, now = Date.now()): AppendedEvent | null {
    if (this.#terminal) return null;
    const at = new Date(now).toISOString();
    const event = this.#log.appendEvent({ run_id: this.#identity.run_id, channel_id: this.#identity.channel_id, at }, type, fields);
    this.#lastAppendAt = now;
    // Terminal before fan-out, so each subscriber already sees the run as
    // ended and closes its response right after this frame.
    if (isTerminalEventType(type)) this.#terminal = true;
    if (this.#subscribers.size > 0) {
      const bytes = encodeSseFrame(event.sequence, event.type, event.json);
      for (const { sink } of this.#subscribers.values()) sink.push(event, bytes);
    }
    this.#sockets?.push(event, this.#terminal, now);
    return event;
  }

  /**
   * One SSE response: replays retained events after `after`, then tails live.
   * 410 replay_gap when retention dropped events the reader needs; 204 when
   * the run ended and nothing follows `after`.
   */
  subscribe(after: number, clientKey: string | undefined): Response {
    const refused = this.#refusal(after);
    if (refused) return refused;
    const subscriptionId = newSubscriptionId();
    const stream = new SubscriberStream({
      log: this.#log,
      after,
      isTerminal: () => this.#terminal,
      onClosed: () => {
        this.#subscribers.release(subscriptionId);
      },
    });
    this.#subscribers.attach({ id: subscriptionId, clientKey, sink: stream })?.sink.close();
    return new Response(stream.body, {
      headers: { ...SSE_HEADERS, "x-subscription-id": subscriptionId, "x-run-id": this.#identity.run_id },
    });
  }

  /** 410 replay_gap when retention dropped events the reader needs; 204 when the run ended and nothing follows `after`. */
  #refusal(after: number): Response | undefined {
    if (this.#log.hasGapAfter(after)) {
      const earliest = this.#log.earliestSequence;
      return Response.json(
        {
          error: "replay_gap",
          message: `Events up to sequence ${earliest - 1} are no longer retained; resume from sequence ${earliest - 1} or later.`,
          earliest_sequence: earliest,
        } satisfies ErrorBody,
        { status: 410 },
      );
    }
    if (this.#terminal && after >= this.#log.lastSequence) {
      // Nothing will ever follow: 204 is how SSE tells an EventSource to stop reconnecting.
      return new Response(null, { status: 204, headers: { "x-run-id": this.#identity.run_id } });
    }
    return undefined;
  }

  /**
   * A watcher on a hibernatable socket. An SSE watcher (the Worker's socket)
   * is first answered like an SSE request: 410 replay_gap, or 204 for an
   * ended run with nothing after `after`; a WebSocket client is always
   * accepted, then closed with 4410 or 1000 for those.
   */
  watch(request: WatchRequest): Response {
    if (!this.#sockets) throw new Error("RunStream.watch: no sockets");
    if (request.kind === "sse") {
      const refused = this.#refusal(request.after);
      if (refused) return refused;
    }
    return this.#sockets.accept(request, this.#log, this.#terminal);
  }

  /** When the alarm must wake a watcher's stream (its STREAM_MAX_SECONDS), or undefined. */
  watchersDueAt(): number | undefined {
    return this.#sockets?.dueAt();
  }

  /** The alarm: closes the streams past STREAM_MAX_SECONDS. */
  sweepWatchers(now: number): void {
    this.#sockets?.sweep(now);
  }

  /** Retention: every event deleted, every response ended. */
  purge(): void {
    this.#log.purge();
    for (const { sink } of this.#subscribers.values()) sink.close();
    this.#sockets?.closeAllForGap(this.#log.earliestSequence);
  }
}
