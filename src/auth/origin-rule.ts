// The Origin rule (contract sections 16 and 18): a state-changing request
// authenticated by a credential the browser attaches by itself (the console
// cookie, an Access user's assertion) must carry Origin equal to the origin it
// was sent to; a missing Origin is refused too. No other site's page can then
// approve, answer or cancel in an operator's name.

/** Methods that change nothing; every other method needs the request's own Origin. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/** True when the request's Origin header is exactly the origin it was sent to. */
export function isSameOrigin(request: Request): boolean {
  return request.headers.get("origin") === new URL(request.url).origin;
}
