// Identities made by the server. Run ids are `run_` + a ULID: sortable by
// creation time, 80 random bits, and safe in URLs.
import { ulid } from "ulidx";

/** The longest identifier a caller may send (channel, user, delivery, decided_by, tool names, client keys, ...), in characters. */
export const MAX_IDENTIFIER_CHARS = 200;

const RUN_ID_PATTERN = /^run_[0-9A-HJKMNP-TV-Z]{26}$/;

export function newRunId(): string {
  return `run_${ulid()}`;
}

/** Unknown-looking ids are answered 404 without waking a Durable Object for them. */
export function isRunId(value: string): boolean {
  return RUN_ID_PATTERN.test(value);
}

export function newSubscriptionId(): string {
  return `sub_${ulid()}`;
}

export function newApprovalId(): string {
  return `approval_${ulid()}`;
}

/** For calls whose model gave no id (the scripted provider may omit it). */
export function newToolCallId(): string {
  return `call_${ulid()}`;
}
