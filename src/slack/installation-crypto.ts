// Slack installation tokens at rest (contract section 26): AES-256-GCM by the
// MCP tokens' envelope (src/mcp-oauth/token-crypto.ts), under SLACK_INSTALL_KEY
// (a list: the first key seals, every key opens, so a key can be rotated),
// with the additional data `slack:<installation id>:<bot|refresh>`: a bot
// token copied into another installation's row, or into the refresh column,
// does not open.
import { open, seal } from "../mcp-oauth/token-crypto";

export type TokenKind = "bot" | "refresh";

function owner(installationId: string, kind: TokenKind): string {
  return `slack:${installationId}:${kind}`;
}

export async function sealToken(keys: readonly string[], installationId: string, kind: TokenKind, token: string): Promise<string> {
  const first = keys[0];
  if (first === undefined) throw new Error("SLACK_INSTALL_KEY holds no key");
  return seal(first, owner(installationId, kind), token);
}

/** The token, or null when no key opens the envelope for this installation and kind. */
export async function openToken(
  keys: readonly string[],
  installationId: string,
  kind: TokenKind,
  envelope: string,
): Promise<string | null> {
  for (const key of keys) {
    const value = await open(key, owner(installationId, kind), envelope);
    if (typeof value === "string") return value;
  }
  return null;
}

/** The PKCE verifier of an install state, sealed to that state's digest. */
export async function sealVerifier(keys: readonly string[], stateDigest: string, verifier: string): Promise<string> {
  const first = keys[0];
  if (first === undefined) throw new Error("SLACK_INSTALL_KEY holds no key");
  return seal(first, `slack-state:${stateDigest}`, verifier);
}

export async function openVerifier(keys: readonly string[], stateDigest: string, envelope: string): Promise<string | null> {
  for (const key of keys) {
    const value = await open(key, `slack-state:${stateDigest}`, envelope);
    if (typeof value === "string") return value;
  }
  return null;
}
