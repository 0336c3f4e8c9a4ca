// Limits on what a JSON request body may hold beyond its schema (contract
// section 17): nesting no deeper than MAX_JSON_DEPTH anywhere, and only text
// the engine can store as given. Both are checked without recursion, so no
// body, however deep, can overflow the stack: the depth on the raw text
// before it is parsed, the text on the parsed value with an explicit stack.
import { apiError } from "../base/api-error";

/** Contract section 17: nesting deeper than 64 levels is a 400. `{}` is one level. */
const MAX_JSON_DEPTH = 64;

/** The first place where `text` (JSON) nests deeper than `maxDepth`, or undefined. */
function excessNesting(text: string, maxDepth = MAX_JSON_DEPTH): { offset: number } | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth++;
      if (depth > maxDepth) return { offset: i };
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return undefined;
}

export function assertNesting(text: string): void {
  const excess = excessNesting(text);
  if (excess === undefined) return;
  throw apiError(400, {
    error: "invalid_request",
    message: `The body nests deeper than ${MAX_JSON_DEPTH} levels (at character ${excess.offset}); flatten it.`,
    details: [
      {
        path: "",
        code: "too_deep",
        message: `nesting deeper than ${MAX_JSON_DEPTH} levels`,
        max_depth: MAX_JSON_DEPTH,
        offset: excess.offset,
      },
    ],
  });
}

/** A lone UTF-16 surrogate: JSON's `\ud800` escape can make one; UTF-8 storage (D1) cannot keep it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The path of the first key or string in `value` that holds a lone surrogate, or undefined.
 * Iterative; `value` has passed assertNesting, so the stack stays small anyway.
 */
function findUnstorableText(value: unknown): string | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value, path: "" }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value: v, path } = item;
    if (typeof v === "string") {
      if (LONE_SURROGATE.test(v)) return path;
    } else if (Array.isArray(v)) {
      for (const [i, inner] of v.entries()) stack.push({ value: inner, path: join(path, String(i)) });
    } else if (v !== null && typeof v === "object") {
      for (const [key, inner] of Object.entries(v)) {
        const at = join(path, key);
        if (LONE_SURROGATE.test(key)) return at;
        stack.push({ value: inner, path: at });
      }
    }
  }
  return undefined;
}

export function assertStorable(value: unknown): void {
  const path = findUnstorableText(value);
  if (path === undefined) return;
  throw apiError(400, {
    error: "invalid_request",
    message: `${path || "body"}: text holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair), which cannot be stored; send well-formed Unicode.`,
    details: [{ path, code: "unstorable_text", message: "lone UTF-16 surrogate" }],
  });
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}
