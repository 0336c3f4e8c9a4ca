/**
 * Which MCP era each server speaks, as learned by the SDK's `server/discover` probe (contract
 * section 21): the 2026-07-28 revision with the server's discover result, or the earlier
 * revisions (initialize and sessions). Kept per isolate, keyed by the server's origin and path
 * (two endpoints of one origin may speak different eras), so a warm isolate connects to a
 * stateless server with no round trip at all and its tools/call is the only request.
 *
 * The cache only ever saves a probe: an entry that stops working is forgotten by the transport
 * and the next connect probes again, before any checkpoint. A tools/call never teaches it
 * anything. Not persisted: a cold isolate pays one probe per server.
 */
import type { PriorDiscovery } from "@modelcontextprotocol/client";

/** How long a learned era is reused before the server is probed again. */
const ERA_CACHE_TTL_MS = 10 * 60_000;
/** Bound on the entries one isolate keeps (a host configures a handful of servers). */
const MAX_ENTRIES = 256;

interface Entry {
  prior: PriorDiscovery;
  expiresAtMs: number;
}

const entries = new Map<string, Entry>();

/** The cache key of a server URL: origin and path, never its query (which may carry a credential) or fragment. */
function keyOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return undefined;
  }
}

/** The era learned for this server, if still fresh. */
export function cachedEra(url: string, nowMs: number = Date.now()): PriorDiscovery | undefined {
  const key = keyOf(url);
  const entry = key === undefined ? undefined : entries.get(key);
  if (!entry || key === undefined) return undefined;
  if (entry.expiresAtMs <= nowMs) {
    entries.delete(key);
    return undefined;
  }
  return entry.prior;
}

/** Remembers what a probe (or a legacy handshake after one) found. */
export function rememberEra(url: string, prior: PriorDiscovery, nowMs: number = Date.now()): void {
  const key = keyOf(url);
  if (key === undefined) return;
  if (entries.size >= MAX_ENTRIES && !entries.has(key)) {
    const oldest = entries.keys().next().value;
    if (oldest !== undefined) entries.delete(oldest);
  }
  entries.set(key, { prior, expiresAtMs: nowMs + ERA_CACHE_TTL_MS });
}

/** Drops what was learned: the next connect probes again. */
export function forgetEra(url: string): void {
  const key = keyOf(url);
  if (key !== undefined) entries.delete(key);
}
