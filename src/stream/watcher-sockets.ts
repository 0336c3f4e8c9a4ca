// The run's watchers on hibernatable WebSockets (contract section 27): every
// watcher, a WebSocket client's or the Worker's socket that serves an SSE
// response, is a socket the run's object accepted with the hibernation API, so
// no watcher keeps a request open on the object and the object can be evicted
// while they wait. What a socket needs after eviction lives on the socket
// itself (tags and its serialised attachment): its kind, the sequence it
// already has, when it opened, the credential it was opened with. It owns:
// the replay from `after` then the live fan-out (a WebSocket client gets each
// event's JSON, an SSE socket the event's SSE frame), the close codes (1000 at
// the end or to reconnect, 4401 credential_ended, 4410 replay_gap, 1008 for a
// client message), the per-kind counts, and when the alarm must next wake a
// stream (its STREAM_MAX_SECONDS). It works over a minimal host interface, so
// it is unit-testable without a Durable Object.
import type { StoredEvent } from "../wire/events";
import type { EventLog } from "./event-log";
import { sseFrame } from "./sse";

export type WatcherKind = "sse" | "websocket";

/** The credential a stream was opened with, as the object can check it again (kind and id, never the secret). */
export interface WatchCredential {
  kind: string;
  id: string;
}

/** What a socket carries across eviction (its attachment). */
export interface WatcherState {
  kind: WatcherKind;
  /** Events up to this sequence are not sent (the reader said it has them). */
  after: number;
  opened_at: number;
  credential: WatchCredential;
}

export interface WatchRequest extends WatcherState {
  clientKey: string | undefined;
}

/** The part of DurableObjectState the watchers need. */
export interface SocketHost {
  acceptWebSocket(ws: WebSocket, tags?: string[]): void;
  getWebSockets(tag?: string): WebSocket[];
  setWebSocketAutoResponse?(pair?: WebSocketRequestResponsePair): void;
}

export interface WatcherOptions {
  /** STREAM_MAX_SECONDS in ms: a stream older than this is closed (1000 "reconnect") for the client to resume. */
  maxAgeMs: number;
  /** A credential is checked again at a send at least this long after its last check. */
  recheckMs: number;
  /** True while the credential still stands (not revoked, not expired, the session not ended). */
  isLive: (credential: WatchCredential) => Promise<boolean>;
  /** Keeps a check running after the request that started it (ctx.waitUntil). */
  waitUntil: (promise: Promise<unknown>) => void;
}

/** Close codes and reasons of contract section 27. */
const CLOSE = {
  normal: 1000,
  policy: 1008,
  credentialEnded: 4401,
  replayGap: 4410,
} as const;

const KIND_TAG = { sse: "kind:sse", websocket: "kind:websocket" } as const;
const credentialTag = (c: WatchCredential) => `cred:${c.kind}:${c.id}`.slice(0, 256);
const clientKeyTag = (key: string) => `key:${key}`.slice(0, 256);

/** SSE frames sent to an SSE socket in one message while replaying. */
const REPLAY_FRAMES_PER_MESSAGE = 256;

interface CredentialCheck {
  checkedAt: number;
  ended: boolean;
  inFlight: boolean;
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed by the other side.
  }
}

export class WatcherSockets {
  readonly #host: SocketHost;
  readonly #options: WatcherOptions;
  /** Each socket's state, read from its attachment once per object instance. */
  readonly #states = new WeakMap<WebSocket, WatcherState>();
  readonly #checks = new Map<string, CredentialCheck>();
  /** Each watcher's credential tag, made once per state, not at every send. */
  readonly #credentialKeys = new WeakMap<WatcherState, string>();
  /**
   * Every accepted socket, as getWebSockets() last answered plus those
   * accepted since: a push asks the runtime only after a socket closed, not
   * for every event. Undefined: ask at the next push.
   */
  #all: WebSocket[] | undefined;

  constructor(host: SocketHost, options: WatcherOptions) {
    this.#host = host;
    this.#options = options;
    // `ping` is answered by the runtime without waking the object.
    host.setWebSocketAutoResponse?.(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** Open watchers of each kind (a socket closing is no longer counted). */
  counts(): { sse: number; websocket: number } {
    return { sse: this.#open(KIND_TAG.sse).length, websocket: this.#open(KIND_TAG.websocket).length };
  }

  /**
   * Accepts a socket for a watcher: replays from `after`, then it takes live
   * pushes. `ended`: the run has appended its terminal event. Returns the 101
   * response carrying the client's end.
   */
  accept(request: WatchRequest, log: EventLog, ended: boolean): Response {
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    const { clientKey, ...state } = request;
    if (clientKey !== undefined) {
      // A reattach under the same client key replaces the earlier watcher.
      for (const earlier of this.#open(clientKeyTag(clientKey))) closeQuietly(earlier, CLOSE.normal, "superseded");
    }
    const tags = [KIND_TAG[state.kind], credentialTag(state.credential), ...(clientKey !== undefined ? [clientKeyTag(clientKey)] : [])];
    this.#host.acceptWebSocket(server, tags);
    this.#all?.push(server);
    server.serializeAttachment(state);
    this.#states.set(server, state);
    this.#noteChecked(state.credential, state.opened_at);
    if (log.hasGapAfter(state.after)) {
      closeQuietly(server, CLOSE.replayGap, `replay_gap:${log.earliestSequence}`);
    } else {
      this.#replay(server, state, log);
      // An ended run: its terminal event was just replayed, or nothing follows `after`.
      if (ended) closeQuietly(server, CLOSE.normal, "end");
    }
    return new Response(null, { status: 101, webSocket: client });
  }

  /** One appended event to every open watcher; after the terminal one, each is closed with 1000. */
  push(event: StoredEvent, terminal: boolean, now: number): void {
    this.#all ??= this.#host.getWebSockets();
    const sockets = this.#all;
    if (sockets.length === 0) return;
    let frame: string | undefined;
    for (const ws of sockets) {
      if (ws.readyState !== WebSocket.OPEN) {
        this.#all = undefined; // a closed one: the next push asks the runtime again
        continue;
      }
      const state = this.#stateOf(ws);
      if (state === undefined) continue;
      if (this.#credentialEnded(ws, state, now)) continue;
      if (event.sequence > state.after) {
        if (state.kind === "sse" && frame === undefined) frame = sseFrame(event.sequence, event.type, event.json);
        try {
          ws.send(state.kind === "sse" ? (frame as string) : event.json);
        } catch {
          continue; // closed under us; its close handler releases it
        }
      }
      if (terminal) closeQuietly(ws, CLOSE.normal, "end");
    }
  }

  /** A message from a client: `ping` never gets here (the runtime answers it), anything else closes with 1008. */
  message(ws: WebSocket): void {
    closeQuietly(ws, CLOSE.policy, "only ping is accepted");
  }

  /** The other side closed: finish the closing handshake (a no-op where the runtime already answered). */
  closed(ws: WebSocket, code: number): void {
    this.#all = undefined;
    closeQuietly(ws, code === 1005 || code === 1006 ? CLOSE.normal : code, "");
  }

  /** Retention deleted the run's events: every watcher closes with 4410. */
  closeAllForGap(earliest: number): void {
    for (const ws of this.#host.getWebSockets()) closeQuietly(ws, CLOSE.replayGap, `replay_gap:${earliest}`);
  }

  /** When the alarm must next wake a stream to close it (its STREAM_MAX_SECONDS), or undefined. */
  dueAt(): number | undefined {
    let due: number | undefined;
    for (const ws of this.#open()) {
      const state = this.#stateOf(ws);
      if (state === undefined) continue;
      const at = state.opened_at + this.#options.maxAgeMs;
      if (due === undefined || at < due) due = at;
    }
    return due;
  }

  /** The alarm: closes each stream past its STREAM_MAX_SECONDS with 1000 "reconnect". */
  sweep(now: number): void {
    for (const ws of this.#open()) {
      const state = this.#stateOf(ws);
      if (state !== undefined && now >= state.opened_at + this.#options.maxAgeMs) closeQuietly(ws, CLOSE.normal, "reconnect");
    }
  }

  #open(tag?: string): WebSocket[] {
    return this.#host.getWebSockets(tag).filter((ws) => ws.readyState === WebSocket.OPEN);
  }

  #stateOf(ws: WebSocket): WatcherState | undefined {
    let state = this.#states.get(ws);
    if (state === undefined) {
      state = (ws.deserializeAttachment() as WatcherState | null) ?? undefined;
      if (state !== undefined) this.#states.set(ws, state);
    }
    return state;
  }

  #replay(ws: WebSocket, state: WatcherState, log: EventLog): void {
    let cursor = state.after;
    while (cursor < log.lastSequence) {
      const batch = log.readAfter(cursor);
      const last = batch[batch.length - 1];
      if (!last) break;
      cursor = last.sequence;
      if (state.kind === "websocket") {
        for (const event of batch) ws.send(event.json);
        continue;
      }
      for (let i = 0; i < batch.length; i += REPLAY_FRAMES_PER_MESSAGE) {
        ws.send(
          batch
            .slice(i, i + REPLAY_FRAMES_PER_MESSAGE)
            .map((e) => sseFrame(e.sequence, e.type, e.json))
            .join(""),
        );
      }
    }
  }

  #noteChecked(credential: WatchCredential, at: number): void {
    const key = credentialTag(credential);
    const check = this.#checks.get(key);
    if (check === undefined) this.#checks.set(key, { checkedAt: at, ended: false, inFlight: false });
    else if (!check.ended && !check.inFlight) check.checkedAt = Math.max(check.checkedAt, at);
  }

  /**
   * At a send: true (and the socket closed with 4401) when its credential is
   * known to have ended; starts a check when the last one is old enough, and
   * when that check finds the credential ended, closes every stream opened
   * with it.
   */
  #credentialEnded(ws: WebSocket, state: WatcherState, now: number): boolean {
    let key = this.#credentialKeys.get(state);
    if (key === undefined) {
      key = credentialTag(state.credential);
      this.#credentialKeys.set(state, key);
    }
    let check = this.#checks.get(key);
    if (check === undefined) {
      // First send after the object woke: the socket's opening is the last check known.
      check = { checkedAt: state.opened_at, ended: false, inFlight: false };
      this.#checks.set(key, check);
    }
    if (check.ended) {
      closeQuietly(ws, CLOSE.credentialEnded, "credential_ended");
      return true;
    }
    if (!check.inFlight && now - check.checkedAt >= this.#options.recheckMs) {
      const running = check;
      running.inFlight = true;
      this.#options.waitUntil(
        this.#options
          .isLive(state.credential)
          .catch(() => true) // a failed look-up ends nobody's stream; the next send asks again
          .then((live) => {
            running.inFlight = false;
            running.checkedAt = Date.now();
            if (live) return;
            running.ended = true;
            for (const other of this.#host.getWebSockets(key)) closeQuietly(other, CLOSE.credentialEnded, "credential_ended");
          }),
      );
    }
    return false;
  }
}
