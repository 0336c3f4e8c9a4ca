// One cookie's value out of a request's Cookie header (RFC 6265 section 5.4:
// `name=value` pairs separated by `;`). Written by hand: a dozen lines, and
// the Worker needs only this lookup, not a cookie library's serialisation.

/** The value of the first cookie called `name` in a Cookie header, or null when there is none. */
export function readCookie(cookieHeader: string | null, name: string): string | null {
  for (const part of (cookieHeader ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
