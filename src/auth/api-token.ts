// The API_TOKEN check (contract sections 2 and 18). Both sides are hashed first so the
// constant-time comparison works on equal-length inputs and leaks neither the
// token's content nor its length.
const encoder = new TextEncoder();

async function sha256(text: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", encoder.encode(text));
}

export async function isAuthorized(authorization: string | null, apiToken: string): Promise<boolean> {
  // RFC 9110 section 11.1: the scheme is case-insensitive; one or more spaces before the credential.
  const match = /^bearer +(\S+) *$/i.exec(authorization ?? "");
  const presented = match?.[1] ?? "";
  const [a, b] = await Promise.all([sha256(presented), sha256(apiToken)]);
  // Always compare, even for a missing header, so timing says nothing either way.
  return crypto.subtle.timingSafeEqual(a, b) && presented !== "";
}
