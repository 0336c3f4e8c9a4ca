// One subscriber's SSE response body. It first replays retained events from
// the log in batches, pulled as the client reads (so a 10,000-event replay
// never sits in memory at once), then switches to the live tail, where the
// run pushes each appended frame. A client that stops reading falls back to
// replay mode instead of growing an unbounded queue. The stream ends right
// after the terminal event. While live, `pull` stays pending (the stream does
// not call it again until it settles), so a frame read by the client costs no
// call back into this object: only a fall back to replay wakes it.
import type { EventLog } from "./event-log";
import type { StoredEvent } from "../wire/events";
import { sseFrame } from "./sse";

/**
 * Chunks queued before `pull` stops reading ahead. A replay chunk is a whole
 * batch (REPLAY_BATCH_EVENTS frames), so one is enough: the first batch goes
 * out while the next is read, and a long replay never sits in memory at once.
 */
const QUEUE_HIGH_WATER_CHUNKS = 1;
/** A live subscriber this many chunks (one frame each) behind stops taking pushes and catches up from storage. */
const LIVE_QUEUE_LIMIT_CHUNKS = 1_024;

const encoder = new TextEncoder();

type Mode = "replaying" | "live" | "closed";

export interface SubscriberStreamOptions {
  log: EventLog;
  after: number;
  isTerminal: () => boolean;
  /** Called once when the response ends, whichever side ended it. */
  onClosed: () => void;
}

export class SubscriberStream {
  readonly body: ReadableStream<Uint8Array>;
  #mode: Mode = "replaying";
  #cursor: number;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  readonly #options: SubscriberStreamOptions;
  /** Settles the pending `pull` of live mode: the stream may pull again (replay, or the response ended). */
  #wakePull: (() => void) | undefined;

  constructor(options: SubscriberStreamOptions) {
    this.#options = options;
    this.#cursor = options.after;
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => this.#pull(),
        cancel: () => this.#finish(),
      },
      { highWaterMark: QUEUE_HIGH_WATER_CHUNKS },
    );
  }

  get mode(): Mode {
    return this.#mode;
  }

  /** Offers a just-appended event; `bytes` is its encoded frame, shared by every subscriber. */
  push(event: StoredEvent, bytes: Uint8Array): void {
    if (this.#mode !== "live") return;
    // A reader that resumed beyond the last sequence skips events it said it has.
    if (event.sequence === this.#cursor + 1) {
      // The cursor moves before enqueue: enqueue may call pull synchronously,
      // and pull must already see this event as sent.
      this.#cursor = event.sequence;
      this.#controller.enqueue(bytes);
    }
    if (this.#endIfTerminal()) return;
    if ((this.#controller.desiredSize ?? 0) < QUEUE_HIGH_WATER_CHUNKS - LIVE_QUEUE_LIMIT_CHUNKS) {
      this.#mode = "replaying";
      this.#settlePull();
    }
  }

  /** Ends the response from the server side (terminal event sent, superseded, run purged). */
  close(): void {
    if (this.#mode === "closed") return;
    try {
      this.#controller.close();
    } catch {
      // Already closed or errored by the runtime; nothing left to flush.
    }
    this.#finish();
  }

  #pull(): Promise<void> | undefined {
    if (this.#mode === "closed") return;
    const { log } = this.#options;
    if (this.#cursor < log.lastSequence) {
      if (log.hasGapAfter(this.#cursor)) {
        // Retention overtook a slow reader; ending here makes the client
        // reconnect with Last-Event-ID and get an explicit 410 replay_gap.
        this.close();
        return;
      }
      const batch = log.readAfter(this.#cursor);
      const last = batch[batch.length - 1];
      if (last) {
        this.#cursor = last.sequence;
        this.#controller.enqueue(encoder.encode(batch.map((e) => sseFrame(e.sequence, e.type, e.json)).join("")));
      }
      this.#endIfTerminal();
      return;
    }
    if (this.#endIfTerminal()) return;
    this.#mode = "live";
    return new Promise<void>((resolve) => {
      this.#wakePull = resolve;
    });
  }

  #settlePull(): void {
    const wake = this.#wakePull;
    this.#wakePull = undefined;
    wake?.();
  }

  #endIfTerminal(): boolean {
    // isTerminal first: on nearly every push it is false, and the sequence is not read.
    if (this.#options.isTerminal() && this.#cursor >= this.#options.log.lastSequence) {
      this.close();
      return true;
    }
    return false;
  }

  #finish(): void {
    if (this.#mode === "closed") return;
    this.#mode = "closed";
    this.#settlePull();
    this.#options.onClosed();
  }
}
