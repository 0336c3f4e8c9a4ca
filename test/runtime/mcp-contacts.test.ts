// MCP contacts in real D1 (src/execution/mcp-contacts.ts, migration 0019):
// what GET /api/mcp/servers shows of a server as last seen. A failed contact
// keeps what an earlier one learned; repeating the same news within a minute
// writes nothing.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config";
import { readMcpContacts, recordMcpContact } from "../../src/execution/mcp-contacts";
import { REDACTED } from "../../src/execution/redaction";
import { handleListMcpServers } from "../../src/http/handlers/mcp-servers";
import { SECRET_SAMPLES } from "../fixtures/secret-samples";

const MINUTE_MS = 60_000;

describe("MCP contacts", () => {
  it("records the revision and tools, keeps them through a failure, and marks it disconnected", async () => {
    const server = `s-${crypto.randomUUID().slice(0, 8)}`;
    const t0 = new Date("2026-12-01T10:00:00.000Z");
    expect((await readMcpContacts(env.DB)).get(server)).toBeUndefined();
    await recordMcpContact(env.DB, server, { kind: "connected", protocol_version: "2026-07-28", tools: 3 }, t0);
    expect((await readMcpContacts(env.DB)).get(server)).toEqual({
      server,
      protocol_version: "2026-07-28",
      tools: 3,
      connected: true,
      last_contact_at: t0.toISOString(),
    });
    const t1 = new Date(t0.getTime() + 1_000);
    await recordMcpContact(env.DB, server, { kind: "failed" }, t1);
    expect((await readMcpContacts(env.DB)).get(server)).toMatchObject({
      protocol_version: "2026-07-28",
      tools: 3,
      connected: false,
      last_contact_at: t1.toISOString(),
    });
    // A call's connect names no tool count: the listing's stays.
    const t2 = new Date(t0.getTime() + 2_000);
    await recordMcpContact(env.DB, server, { kind: "connected", protocol_version: "2026-07-28" }, t2);
    expect((await readMcpContacts(env.DB)).get(server)).toMatchObject({ tools: 3, connected: true, last_contact_at: t2.toISOString() });
  });

  it("writes the same news at most once a minute", async () => {
    const server = `s-${crypto.randomUUID().slice(0, 8)}`;
    const t0 = new Date("2026-12-01T11:00:00.000Z");
    const same = { kind: "connected", protocol_version: "2025-11-25", tools: 8 } as const;
    await recordMcpContact(env.DB, server, same, t0);
    await recordMcpContact(env.DB, server, same, new Date(t0.getTime() + MINUTE_MS - 1));
    expect((await readMcpContacts(env.DB)).get(server)?.last_contact_at).toBe(t0.toISOString());
    const later = new Date(t0.getTime() + MINUTE_MS);
    await recordMcpContact(env.DB, server, same, later);
    expect((await readMcpContacts(env.DB)).get(server)?.last_contact_at).toBe(later.toISOString());
    // Other news (another tool count) is written at once.
    const changed = new Date(later.getTime() + 1);
    await recordMcpContact(env.DB, server, { ...same, tools: 9 }, changed);
    expect((await readMcpContacts(env.DB)).get(server)).toMatchObject({ tools: 9, last_contact_at: changed.toISOString() });
  });

  it("GET /api/mcp/servers shows a server's URL redacted: a token in its path does not come out (issue 29)", async () => {
    const token = SECRET_SAMPLES.find((s) => s.rule === "gitleaks:github-pat")!.value;
    const parsed = parseConfig({
      API_TOKEN: "runtime-test-token-0123456789abcdefghijklmnop",
      MCP_SERVERS: JSON.stringify({ pathy: { url: `https://mcp.example.com/mcp/${token}?key=q1w2e3r4t5` } }),
    });
    if (parsed.state !== "ready") throw new Error("config not ready");
    const text = await (await handleListMcpServers(env.DB, parsed.config)).text();
    expect(text).not.toContain(token.slice(4));
    expect(JSON.parse(text).servers[0].url).toBe(`https://mcp.example.com/mcp/${REDACTED}`);
  });
});
