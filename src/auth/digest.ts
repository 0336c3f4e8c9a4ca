// SHA-256 of a credential, in hex: what D1 keeps instead of a token's value
// (named tokens, and the API_TOKEN a root console session was opened with).
const encoder = new TextEncoder();

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
