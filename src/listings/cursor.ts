// Opaque listing cursors (contract section 15): base64url of the JSON array of
// the last item's sort key (its time, then its id parts). A cursor that does
// not decode to exactly that shape was not made here: the caller answers 400,
// never 500. Hand-written because it is a dozen lines over the platform's
// btoa/atob and TextEncoder; no library is needed for it.
import { z } from "zod";

export class CursorError extends Error {}

export function encodeCursor(key: readonly string[]): string {
  const bytes = new TextEncoder().encode(JSON.stringify(key));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The sort key of a cursor made by encodeCursor with `arity` parts; CursorError otherwise. */
export function decodeCursor(cursor: string, arity: number): string[] {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new CursorError("the cursor is not base64url");
  let text: string;
  try {
    const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
  } catch {
    throw new CursorError("the cursor does not decode");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CursorError("the cursor does not decode");
  }
  const parsed = z.array(z.string().max(1_000)).length(arity).safeParse(value);
  if (!parsed.success) throw new CursorError("the cursor was not made by this listing");
  return parsed.data;
}
