// How the Slack libraries log (contract section 20: no line the Worker logs,
// its own or its libraries', carries a secret). Neither slack-edge nor
// slack-web-api-client takes a logger: both write with console.log. What
// they would write, and why none of it can carry a request's body here:
//  - their request, response and retry dumps are DEBUG only: both run at
//    SLACK_LIBRARY_LOG_LEVEL, above DEBUG;
//  - slack-edge's `*** No listener found ***` dump of the raw body is
//    unconditional, so no body reaches it: request-envelope.ts acknowledges
//    every payload no listener of this app takes before slack-edge sees it;
//  - a lazy listener's failure is caught here (lazyFailureLogged) and logged
//    as its redacted message, instead of as an uncaught rejection with
//    whatever the error quotes.
import { redactText } from "../execution/redaction";
import { logger } from "../operate/logger";

/** The level both Slack libraries run at: their body dumps are DEBUG only. */
export const SLACK_LIBRARY_LOG_LEVEL = "WARN" as const;

/** An error's message, redacted and cut: what a log line may say about a failure. */
export function failureText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return redactText(text).slice(0, 500);
}

/** `promise` with its rejection logged (redacted) rather than left uncaught; for ctx.waitUntil. */
export function lazyFailureLogged(promise: Promise<unknown>): Promise<unknown> {
  return promise.catch((err: unknown) => logger.error("slack: a listener failed", { error: failureText(err) }));
}
