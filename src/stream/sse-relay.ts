// SSE served by the Worker from the run's socket (contract section 27): the
// run's object sends an SSE watcher's socket ready-made SSE frames (the same
// bytes a response held by the object would carry), and the Worker writes
// each message to the response as it arrives. Whatever closes the socket (the
// terminal event's 1000, a 4401, STREAM_MAX_SECONDS's "reconnect", a deploy)
// ends the response, and an `EventSource` resumes with Last-Event-ID; a client
// going away closes the socket, which releases the watcher.
import { SSE_HEADERS } from "./sse";

const encoder = new TextEncoder();

export function sseResponseFromSocket(ws: WebSocket, headers: Record<string, string> = {}): Response {
  let ended = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const end = () => {
        if (ended) return;
        ended = true;
        try {
          controller.close();
        } catch {
          // the reader already cancelled
        }
      };
      ws.addEventListener("message", (event) => {
        if (ended) return;
        const data = event.data;
        controller.enqueue(typeof data === "string" ? encoder.encode(data) : new Uint8Array(data as ArrayBuffer));
      });
      ws.addEventListener("close", end);
      ws.addEventListener("error", end);
      ws.accept();
    },
    cancel() {
      ended = true;
      try {
        ws.close(1000, "gone");
      } catch {
        // already closed
      }
    },
  });
  return new Response(body, { headers: { ...SSE_HEADERS, ...headers } });
}
