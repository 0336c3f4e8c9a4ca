// Server-sent events framing of the run's events: `id`, `event`, `data`, blank
// line. The data line is the event's stored JSON verbatim, so a replayed frame
// is byte-for-byte the frame first sent. Stored JSON never contains a raw
// newline (JSON.stringify escapes them), so one `data:` line is always enough.
const encoder = new TextEncoder();

export function sseFrame(sequence: number, type: string, json: string): string {
  return `id: ${sequence}\nevent: ${type}\ndata: ${json}\n\n`;
}

export function encodeSseFrame(sequence: number, type: string, json: string): Uint8Array {
  return encoder.encode(sseFrame(sequence, type, json));
}

export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  // Proxies (nginx and friends) must not buffer a live tail.
  "x-accel-buffering": "no",
};
