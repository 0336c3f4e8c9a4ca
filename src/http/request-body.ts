// Reading a JSON request body safely: at most MAX_BODY_BYTES (checked on the
// bytes actually read, not only Content-Length), the JSON media type (required), nesting and
// storable text (json-limits.ts; bytes that are not UTF-8 too), parse errors and schema errors as 4xx with
// details, never an exception.
import type { z } from "zod";
import { apiError } from "../base/api-error";
import { assertNesting, assertStorable } from "./json-limits";

/** Contract section 2: a body over 64 KiB is 413. */
export const MAX_BODY_BYTES = 65_536;

export async function readJsonBody<T extends z.ZodType>(request: Request, schema: T): Promise<z.output<T>> {
  const contentType = request.headers.get("content-type");
  // Contract section 18: a JSON route requires the JSON media type. A form post or text/plain (which a page
  // elsewhere can send without a preflight) is refused before its body is read.
  if (contentType === null || !/^application\/(.+\+)?json\b/i.test(contentType.trim())) {
    throw apiError(415, {
      error: "unsupported_media_type",
      message: `Send Content-Type: application/json; got ${contentType === null ? "none" : JSON.stringify(contentType)}.`,
    });
  }
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const text = await readLimited(request);
  // Before parsing: nothing deeper than MAX_JSON_DEPTH is parsed, validated, stored or copied.
  assertNesting(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw apiError(400, { error: "invalid_json", message: `The body is not valid JSON: ${(err as Error).message}` });
  }
  assertStorable(value);
  return validate(schema, value);
}

export function validate<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw apiError(400, {
      error: "invalid_request",
      message: parsed.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; "),
      details: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message, code: i.code })),
    });
  }
  return parsed.data;
}

function tooLarge() {
  return apiError(413, { error: "payload_too_large", message: `The body is larger than ${MAX_BODY_BYTES} bytes.` });
}

async function readLimited(request: Request): Promise<string> {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  // Contract section 25: text that is not valid Unicode is 400 where it enters, never stored as replaced.
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(all);
  } catch {
    throw apiError(400, {
      error: "invalid_request",
      message: "The body is not valid UTF-8; send well-formed Unicode.",
      details: [{ path: "", code: "invalid_utf8", message: "the body's bytes are not valid UTF-8" }],
    });
  }
}
