// The per-server era cache (src/execution/mcp-era-cache.ts): what a
// server/discover probe learned is reused until it expires or is forgotten,
// keyed by origin and path, never by a query that may carry a credential.
import { describe, expect, it } from "vitest";
import { cachedEra, forgetEra, rememberEra } from "../../src/execution/mcp-era-cache";

const TEN_MINUTES_MS = 10 * 60_000;
const modern = {
  kind: "modern" as const,
  discover: { supportedVersions: ["2026-07-28"], capabilities: { tools: {} } } as never,
};

describe("the MCP era cache", () => {
  it("reuses a learned era until it expires", () => {
    const url = `https://a.example/mcp/${crypto.randomUUID()}`;
    expect(cachedEra(url, 0)).toBeUndefined();
    rememberEra(url, modern, 1_000);
    expect(cachedEra(url, 1_000 + TEN_MINUTES_MS - 1)).toEqual(modern);
    expect(cachedEra(url, 1_000 + TEN_MINUTES_MS)).toBeUndefined();
    // Expired means gone: the next connect probes again.
    expect(cachedEra(url, 1_000)).toBeUndefined();
  });

  it("keys by origin and path: another path is another server, the query is not part of it", () => {
    const path = `/mcp/${crypto.randomUUID()}`;
    rememberEra(`https://b.example${path}?token=one`, { kind: "legacy" }, 0);
    expect(cachedEra(`https://b.example${path}?token=two`, 1)).toEqual({ kind: "legacy" });
    expect(cachedEra(`https://b.example${path}/other`, 1)).toBeUndefined();
    expect(cachedEra(`https://c.example${path}`, 1)).toBeUndefined();
  });

  it("forgets on request, and ignores a URL that does not parse", () => {
    const url = `https://d.example/${crypto.randomUUID()}`;
    rememberEra(url, { kind: "legacy" }, 0);
    forgetEra(url);
    expect(cachedEra(url, 1)).toBeUndefined();
    rememberEra("not a url", { kind: "legacy" }, 0);
    expect(cachedEra("not a url", 1)).toBeUndefined();
  });
});
