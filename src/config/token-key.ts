// MCP_TOKEN_KEY's format (contract section 21): base64 (or base64url) of
// exactly 32 bytes. The configuration checks it when it loads; the token
// encryption (src/mcp-oauth/token-crypto.ts) imports the key with it.

export const TOKEN_KEY_BYTES = 32;

/** Whether `value` is base64 of exactly 32 bytes (the MCP_TOKEN_KEY format). */
export function isTokenKey(value: string): boolean {
  const bytes = decodeBase64(value);
  return bytes !== null && bytes.byteLength === TOKEN_KEY_BYTES;
}

/** Base64 or base64url (padded or not) to bytes; null when it is neither. */
export function decodeBase64(text: string): Uint8Array<ArrayBuffer> | null {
  const normal = text.trim().replace(/-/g, "+").replace(/_/g, "/");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(normal)) return null;
  try {
    const binary = atob(normal.padEnd(Math.ceil(normal.length / 4) * 4, "="));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return null;
  }
}
