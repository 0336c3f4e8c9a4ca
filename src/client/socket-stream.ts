// One WebSocket connection of the run's event stream (contract section 27) as
// an async iterator of its text messages, and how it ended: the close code and
// reason, and whether it ever opened (a refused upgrade never does). It sends
// `ping` every 25 s (the server answers `pong` without waking the run, and
// appends no heartbeat for WebSocket watchers). Any WebSocket fits: a
// browser's, Node's global one, or a Worker's from a `fetch` upgrade.

/** The part of a WebSocket the stream uses (browser, Node, Workers alike). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  /** Each listener reads its own event's shape (`data` of a message, `code` and `reason` of a close). */
  addEventListener(type: "open" | "message" | "close" | "error", listener: (event: never) => void): void;
}

export interface SocketEnd {
  code: number;
  reason: string;
  /** False when the connection never opened (the upgrade was refused, or the network failed). */
  opened: boolean;
}

/** Clients send `ping` at least every 30 s (contract section 27). */
const PING_INTERVAL_MS = 25_000;
const OPEN = 1;

/** Yields each text message but `pong`; returns how the socket ended. Aborting closes it with 1000. */
export async function* socketMessages(ws: WebSocketLike, signal: AbortSignal): AsyncGenerator<string, SocketEnd, undefined> {
  const queue: string[] = [];
  let opened = ws.readyState === OPEN;
  let end: SocketEnd | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  let ping: ReturnType<typeof setInterval> | undefined;
  const startPing = () => {
    ping ??= setInterval(() => {
      if (ws.readyState === OPEN) ws.send("ping");
    }, PING_INTERVAL_MS);
  };
  if (opened) startPing();
  ws.addEventListener("open", () => {
    opened = true;
    startPing();
  });
  ws.addEventListener("message", (event: { data: unknown }) => {
    const data = typeof event.data === "string" ? event.data : String(event.data);
    if (data !== "pong") queue.push(data);
    notify();
  });
  ws.addEventListener("close", (event: { code: number; reason: string }) => {
    end ??= { code: event.code, reason: event.reason ?? "", opened };
    notify();
  });
  ws.addEventListener("error", () => {
    // A close follows where the connection had opened; one that never opened may get no close at all.
    if (!opened) end ??= { code: 1006, reason: "", opened: false };
    notify();
  });
  const onAbort = () => {
    end ??= { code: 1000, reason: "aborted", opened };
    notify();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      while (queue.length > 0) yield queue.shift() as string;
      if (end) return end;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    if (ping !== undefined) clearInterval(ping);
    try {
      if (ws.readyState <= OPEN) ws.close(1000, "done");
    } catch {
      // already closing
    }
  }
}
