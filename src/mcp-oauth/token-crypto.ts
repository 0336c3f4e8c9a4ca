// Encryption at rest for MCP OAuth secrets (contract section 21): access and
// refresh tokens, PKCE code verifiers and registered client secrets are kept
// in D1 only as AES-256-GCM ciphertexts under MCP_TOKEN_KEY (base64 of 32
// bytes), with a fresh 96-bit IV per value and the owning name (the server,
// or the issuer for a registered client) as additional data, so a ciphertext
// copied to another server's row does not open. WebCrypto does the work; the
// envelope (`v1.<iv>.<ciphertext>`, base64url) is the only hand-written part.
// The key's format is the host configuration's (src/config/token-key.ts).
import { decodeBase64, isTokenKey, TOKEN_KEY_BYTES as KEY_BYTES } from "../config/token-key";

const IV_BYTES = 12;
const ENVELOPE_VERSION = "v1";

const keys = new Map<string, Promise<CryptoKey>>();

export { isTokenKey };

function importKey(keyBase64: string): Promise<CryptoKey> {
  let key = keys.get(keyBase64);
  if (!key) {
    const bytes = decodeBase64(keyBase64);
    if (bytes === null || bytes.byteLength !== KEY_BYTES) throw new Error("MCP_TOKEN_KEY is not base64 of 32 bytes");
    key = crypto.subtle.importKey("raw", bytes, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
    keys.set(keyBase64, key);
  }
  return key;
}

/** Encrypts `value` (JSON-serialised) under the key, bound to `owner`. */
export async function seal(keyBase64: string, owner: string, value: unknown): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const plaintext = new TextEncoder().encode(JSON.stringify(value));
  const ciphertext = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(owner) },
    await importKey(keyBase64),
    plaintext,
  );
  return `${ENVELOPE_VERSION}.${encodeBase64Url(iv)}.${encodeBase64Url(new Uint8Array(ciphertext))}`;
}

/** The value sealed for `owner`, or null when the envelope is malformed, the key differs or the owner does not match. */
export async function open(keyBase64: string, owner: string, envelope: string): Promise<unknown> {
  const [version, ivText, dataText, ...rest] = envelope.split(".");
  if (version !== ENVELOPE_VERSION || ivText === undefined || dataText === undefined || rest.length > 0) return null;
  const iv = decodeBase64(ivText);
  const data = decodeBase64(dataText);
  if (iv === null || iv.byteLength !== IV_BYTES || data === null) return null;
  try {
    const plaintext = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(owner) },
      await importKey(keyBase64),
      data,
    );
    return JSON.parse(new TextDecoder().decode(plaintext));
  } catch {
    return null;
  }
}

function encodeBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** base64 or base64url, padded or not; null when it is neither. */
