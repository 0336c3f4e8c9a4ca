// Text measured and cut in UTF-8 bytes (the bounds of contract sections 7
// and 21 are bytes): a leaf both the MCP result shaping (./mcp-result.ts) and
// the transport's error messages (./mcp-errors.ts) use.

const encoder = new TextEncoder();

export function utf8Length(text: string): number {
  return encoder.encode(text).byteLength;
}

/**
 * `text` cut to at most `maxBytes` UTF-8 bytes, ending in "…" when cut, never splitting a
 * character (a cut never lands inside a code point's bytes).
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = encoder.encode(text);
  if (bytes.byteLength <= maxBytes) return text;
  // The marker only when it fits: a budget under 3 bytes gets a bare cut.
  const ellipsis = maxBytes >= utf8Length("…") ? "…" : "";
  let end = Math.max(0, maxBytes - utf8Length(ellipsis));
  // Back off continuation bytes (10xxxxxx) so the cut falls on a code point boundary.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return new TextDecoder().decode(bytes.subarray(0, end)) + ellipsis;
}
