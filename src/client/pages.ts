// Walking the listings of contract section 15 page by page: each page's
// `next_cursor` is passed back unchanged until it is null. The cursor is
// opaque, so the only check made here is that the server never hands back a
// cursor already used (a loop would otherwise walk for ever).
import type { PageQuery } from "./types.js";

/** Fetches one page of a listing for the given query (cursor included). */
export type PageFetcher<Q extends PageQuery, P extends { next_cursor: string | null }> = (query: Q) => Promise<P>;

export interface WalkOptions {
  /** Stop after this many pages even if more remain (default: walk to the end). */
  maxPages?: number;
}

/** A listing's cursor came back a second time: the pages would repeat for ever. */
export class CursorLoopError extends Error {
  override readonly name = "CursorLoopError";
  constructor(readonly cursor: string) {
    super(
      `The listing returned cursor ${JSON.stringify(cursor)} twice; stopping instead of walking the same pages again. This is a server bug.`,
    );
  }
}

/** Yields every page of a listing, starting at `query.cursor` (or the first page). */
export async function* walkPages<Q extends PageQuery, P extends { next_cursor: string | null }>(
  fetchPage: PageFetcher<Q, P>,
  query: Q,
  options: WalkOptions = {},
): AsyncGenerator<P, void, undefined> {
  const seen = new Set<string>();
  let cursor = query.cursor;
  for (let pages = 0; options.maxPages === undefined || pages < options.maxPages; pages++) {
    const page = await fetchPage({ ...query, cursor });
    yield page;
    if (page.next_cursor === null) return;
    if (seen.has(page.next_cursor)) throw new CursorLoopError(page.next_cursor);
    seen.add(page.next_cursor);
    cursor = page.next_cursor;
  }
}

/** `?a=1&b=x` from the defined values of `query` (undefined ones are left out). */
export function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) params.set(key, String(value));
  }
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}
