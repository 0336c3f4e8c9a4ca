/**
 * The MCP transport's fetch middleware (the SDK's `createMiddleware` seam): every response body
 * from the server is bounded by `maxResponseBytes` (contract section 7), and the standalone GET
 * stream is never opened. Written here because the SDK has no body cap of its own.
 *
 * Owns nothing else: headers pass through untouched and are never read or logged here.
 */
import { createMiddleware, type Middleware } from "@modelcontextprotocol/client";

/** Caps each body; past the cap, `tooLarge` (which records the failure) gives the error the fetch or the body then fails with. */
export function responseCap(maxResponseBytes: number, tooLarge: () => Error): Middleware {
  return createMiddleware(async (next, url, init) => {
    // The standalone GET stream carries only server-initiated messages, which a one-shot client
    // neither needs nor may act on. The SDK reads 405 as "no stream offered": nothing to abort or reconnect.
    if ((init?.method ?? "GET").toUpperCase() === "GET") return new Response(null, { status: 405, statusText: "Method Not Allowed" });
    const response = await next(url, init);
    const body = response.body;
    if (body === null) return response;
    if (Number(response.headers.get("content-length") ?? NaN) > maxResponseBytes) {
      const error = tooLarge();
      void body.cancel(error).catch(() => {});
      throw error;
    }
    let received = 0;
    const counted = body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          received += chunk.byteLength;
          if (received > maxResponseBytes) controller.error(tooLarge());
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
  });
}
