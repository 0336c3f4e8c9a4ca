// Events as a test writes them, field by field: only what the code under
// test reads, or an incomplete or hostile one on purpose (an observer must
// not trip on either). The append path hands observers the wire's typed
// RunEvent (src/wire/event-schemas.ts); a test's event goes through JSON, as
// a stored event would, and is handed over as one.
import type { RunIndex, RunIndexContext } from "../../src/listings/run-index";
import type { RunEvent } from "../../src/wire/event-schemas";

export function runEventOf(type: string, fields: object = {}): RunEvent {
  return JSON.parse(JSON.stringify({ type, ...fields }));
}

/** An event's JSON (its `type` among its fields), handed over as the RunEvent it holds. */
export function runEventFromJson(json: string): RunEvent {
  return JSON.parse(json);
}

/** The run index's marks of one event written as (type, fields). */
export function markEvent(
  index: RunIndex,
  context: RunIndexContext,
  type: string,
  fields: object,
  at: string,
  toolNameOf?: (toolCallId: string) => string | undefined,
): boolean {
  return index.markEvent(context, runEventOf(type, fields), at, toolNameOf);
}
