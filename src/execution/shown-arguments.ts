// What an approver is shown of a call's arguments (contract section 19, "What
// you see is what you approve"): the arguments as redaction.ts leaves them,
// cut nowhere else, and `hidden`, an RFC 6901 JSON Pointer into the arguments
// for every value redaction withheld, with the length of its JSON text.
//
// The pointers come from walking the arguments beside their redacted form:
// wherever the two differ, the value at that path is withheld. A value
// redaction changed only in part (a command line with a token inside) is
// listed too: what is shown there is not what the tool gets. Where redaction
// changed a key (a key that holds a credential), the object holding it is
// withheld whole, so every pointer names a path of the arguments the tool
// receives and no pointer carries a secret.
import { REDACTED, redactSecrets } from "./redaction";

/** One withheld value: where it is in the arguments, and how long its JSON text is. */
interface HiddenValue {
  /** An RFC 6901 JSON Pointer into the call's arguments (`""` for the whole arguments). */
  path: string;
  reason: "secret";
  /** The length of the withheld value's JSON text (JSON.stringify), in characters. */
  chars: number;
}

export interface ShownArguments {
  arguments: unknown;
  hidden: HiddenValue[];
}

/**
 * One reference token of a JSON Pointer (RFC 6901 section 3): `~` as `~0`, then `/` as `~1`.
 * Written by hand: the whole rule is these two replacements, in this order.
 */
export function pointerToken(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The arguments as an approver may see them, and a pointer to every value withheld. */
export function shownArguments(args: unknown): ShownArguments {
  const hidden: HiddenValue[] = [];
  const shown = compare(args, redactSecrets(args), "", hidden);
  return { arguments: shown, hidden };
}

function compare(original: unknown, redacted: unknown, path: string, hidden: HiddenValue[]): unknown {
  if (Array.isArray(original) && Array.isArray(redacted) && original.length === redacted.length) {
    return original.map((item, i) => compare(item, redacted[i], `${path}/${i}`, hidden));
  }
  if (isRecord(original) && isRecord(redacted)) {
    const keys = Object.keys(original);
    const redactedKeys = Object.keys(redacted);
    if (keys.length === redactedKeys.length && keys.every((k, i) => redactedKeys[i] === k)) {
      const out: Record<string, unknown> = {};
      for (const key of keys) {
        const value = compare(original[key], redacted[key], `${path}/${pointerToken(key)}`, hidden);
        Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
  }
  if (Object.is(original, redacted)) return redacted;
  hidden.push({ path, reason: "secret", chars: jsonChars(original) });
  // A structure redaction reshaped (a key renamed, a cut at depth) is withheld whole.
  return typeof redacted === "string" || redacted === null || typeof redacted !== "object" ? redacted : REDACTED;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function jsonChars(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    // Too deep to print: arguments never are (request bodies stop at 64 levels); count nothing.
    return 0;
  }
}
