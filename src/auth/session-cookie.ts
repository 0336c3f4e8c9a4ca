// The console's cookie (contract section 16): `console_session=<id>.<mac>`,
// where <id> names a row of console_sessions and <mac> is
// HMAC-SHA256(CONSOLE_SESSION_SECRET, id) in base64url, made and checked with
// WebCrypto (crypto.subtle.verify compares in constant time). The cookie is a
// reference, never the API token; a forged or altered one fails the MAC
// before any database read.

import { readCookie } from "./cookie-header";

const SESSION_COOKIE = "console_session";
/** 128 random bits: session ids are unguessable even without the MAC. */
const SESSION_ID_BYTES = 16;
const SESSION_ID_PATTERN = /^[0-9a-f]{32}$/;

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    keys.set(secret, key);
  }
  return key;
}

function toBase64Url(bytes: ArrayBuffer): string {
  let text = "";
  for (const b of new Uint8Array(bytes)) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** An HMAC-SHA256 MAC is 32 bytes: 43 base64url characters without padding. */
const MAC_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** The MAC's bytes, or null for anything that is not a MAC's encoding (atob throws on some: caught). */
function fromBase64Url(text: string): Uint8Array | null {
  if (!MAC_PATTERN.test(text)) return null;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return null; // a length base64 cannot have: malformed, so refused (401), never a 500
  }
}

export function newSessionId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(SESSION_ID_BYTES)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The cookie's value for a session id. */
export async function signSessionId(id: string, secret: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(id));
  return `${id}.${toBase64Url(mac)}`;
}

/** The session id a cookie value names, or null when it is malformed or its MAC is wrong. */
export async function verifySessionCookie(value: string, secret: string): Promise<string | null> {
  const [id, mac, ...rest] = value.split(".");
  if (id === undefined || mac === undefined || rest.length > 0 || !SESSION_ID_PATTERN.test(id)) return null;
  const bytes = fromBase64Url(mac);
  if (!bytes) return null;
  const ok = await crypto.subtle.verify("HMAC", await hmacKey(secret), bytes, encoder.encode(id));
  return ok ? id : null;
}

/** The value of the console cookie in a Cookie header, if any. */
export function readSessionCookie(cookieHeader: string | null): string | null {
  return readCookie(cookieHeader, SESSION_COOKIE);
}

/** Set-Cookie for a new session: HttpOnly (no script reads it), Secure, SameSite=Strict, whole site. */
export function sessionSetCookie(value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}`;
}

/** Set-Cookie that makes the browser forget the cookie (sign-out). */
export function clearedSetCookie(): string {
  return `${SESSION_COOKIE}=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0`;
}
