// How the Worker asks the run's object for a watcher's socket (contract
// section 27): one internal URL carrying the resume point, the watcher's kind
// (a WebSocket client, or the Worker's own socket serving SSE), the client key
// and the credential the stream keeps (its kind and id, never the secret).
// The Worker builds it after its checks; the object reads it back.
import type { WatchCredential, WatcherKind, WatchRequest } from "./watcher-sockets";

export function watchUrl(after: number, kind: WatcherKind, credential: WatchCredential, clientKey: string | undefined): string {
  const url = new URL("https://run-object/events");
  url.searchParams.set("after", String(after));
  url.searchParams.set("kind", kind);
  url.searchParams.set("cred_kind", credential.kind);
  url.searchParams.set("cred_id", credential.id);
  if (clientKey !== undefined) url.searchParams.set("client_key", clientKey);
  return url.toString();
}

/** The watcher a socket request asks for; `now` is when its stream opened. */
function parseWatchRequest(url: URL, now: number): WatchRequest {
  const q = url.searchParams;
  return {
    kind: q.get("kind") === "sse" ? "sse" : "websocket",
    after: Number(q.get("after") ?? "0"),
    opened_at: now,
    credential: { kind: q.get("cred_kind") ?? "unknown", id: q.get("cred_id") ?? "" },
    clientKey: q.get("client_key") ?? undefined,
  };
}

/** What serves a run's events: the live run's engine, or the stream of a run retention purged. */
export interface EventsTarget {
  watch(request: WatchRequest): Response;
  subscribe(after: number, clientKey: string | undefined): Response;
}

/** The object's events request: a watcher's socket, or else an SSE response held by the object; 404 for no run. */
export function serveEventsRequest(request: Request, target: EventsTarget | undefined, now = Date.now()): Response {
  if (!target) return Response.json({ error: "not_found", message: "No such run." }, { status: 404 });
  const url = new URL(request.url);
  if (isWebSocketUpgrade(request)) return target.watch(parseWatchRequest(url, now));
  return target.subscribe(Number(url.searchParams.get("after") ?? "0"), url.searchParams.get("client_key") ?? undefined);
}

export function isWebSocketUpgrade(request: Request): boolean {
  return (request.headers.get("upgrade") ?? "").toLowerCase() === "websocket";
}
