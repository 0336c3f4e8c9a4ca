/**
 * Contract section 23's tool identity at the transport, inside workerd against the real demo MCP
 * server process (demo-mcp-global-setup.ts): a mutation's session (src/execution/mcp-send.ts)
 * checks its tool against a complete listing of its server taken after the approval and at most
 * MCP_TOOL_LIST_MAX_AGE_MS old. `0` lists before every call; a listing fresh enough is reused
 * (the server counts every tools/list it gets: /control/requests); a tool changed or removed at
 * the server is listed with another digest, or not at all (null).
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type HostConfig, parseConfig } from "../../src/config/config";
import type { CallSession } from "../../src/execution/dispatch-pipeline";
import { argumentsDigest } from "../../src/execution/arguments-digest";
import { listingSince } from "../../src/execution/mcp-tool-list";
import { openMcpCall } from "../../src/execution/mcp-send";
import { ToolCatalog } from "../../src/execution/tool-catalog";
import type { Dispatched } from "../../src/execution/tool-calls";

const TOOL = "mcp__demo__create_kpi";
const MINUTE_MS = 60_000;

const at = (path: string) => new URL(path, env.DEMO_MCP_URL).toString();

async function post(path: string, body?: unknown): Promise<void> {
  const res = await fetch(at(path), { method: "POST", ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.body?.cancel();
}

/** How many tools/list requests the demo server got since its last reset. */
async function listings(): Promise<number> {
  const res = await fetch(at("/control/requests"));
  return ((await res.json()) as { by_method: Record<string, number> }).by_method["tools/list"] ?? 0;
}

function config(maxAgeMs: number): HostConfig {
  const parsed = parseConfig({
    API_TOKEN: "t".repeat(32),
    MCP_SERVERS: JSON.stringify({ demo: { url: env.DEMO_MCP_URL } }),
    MCP_TOOL_LIST_MAX_AGE_MS: String(maxAgeMs),
  });
  if (parsed.state !== "ready") throw new Error(`config: ${parsed.state}`);
  return parsed.config;
}

let serial = 0;
const ARGS = { name: "k", query: "q" };
let ARGS_DIGEST = "";

/** An approved mutation of TOOL, approved at `approvedAt`. */
function mutation(approvedAt: number): Dispatched {
  serial += 1;
  return {
    turn: 0,
    index: 0,
    tool_call_id: `call-${serial}`,
    tool_name: TOOL,
    arguments: ARGS,
    arguments_digest: ARGS_DIGEST,
    kind: "mcp",
    mutating: true,
    level: "approve",
    description: "",
    started_at: approvedAt,
    state: "dispatched",
    grant: "automatic",
    approved_at: approvedAt,
    mutation_id: `mut-${serial}`,
  };
}

/** Opens the call's session as the pipeline does, asks for its tool's identity, closes it; sends nothing. */
async function identify(cfg: HostConfig, call: Dispatched): Promise<string | null> {
  const session: CallSession = await openMcpCall(cfg, call);
  if (session.kind !== "open") throw new Error(`not opened: ${session.message}`);
  try {
    const listed = await session.identify();
    if (listed.kind === "failed") throw new Error(`listing failed: ${listed.message}`);
    return listed.digest;
  } finally {
    await session.close();
  }
}

beforeEach(async () => {
  ARGS_DIGEST = await argumentsDigest(ARGS);
  await post("/control/reset");
});
afterEach(() => post("/control/reset"));

describe("the listing a mutation is checked against (contract section 23)", () => {
  it("with MCP_TOOL_LIST_MAX_AGE_MS 0, lists before every call", async () => {
    const cfg = config(0);
    const approvedAt = Date.now();
    await identify(cfg, mutation(approvedAt));
    expect(await listings()).toBe(1);
    await identify(cfg, mutation(approvedAt));
    expect(await listings()).toBe(2);
    // No listing is ever fresh enough for another call.
    expect(listingSince(env.DEMO_MCP_URL, 0, 0)).toBeUndefined();
  });

  it("reuses a complete listing taken after the approval and at most the max age old; lists again for a later approval", async () => {
    const cfg = config(MINUTE_MS);
    // A millisecond before anything below starts.
    const approvedAt = Date.now() - 1;
    const first = await identify(cfg, mutation(approvedAt));
    expect(await listings()).toBe(1);
    // Approved before that listing started: it is reused, nothing more is listed.
    expect(await identify(cfg, mutation(approvedAt))).toBe(first);
    expect(await listings()).toBe(1);
    const latest = listingSince(env.DEMO_MCP_URL, approvedAt, MINUTE_MS);
    if (latest === undefined) throw new Error("no listing kept");
    // Fresh exactly up to the max age, and only for approvals at or before it started.
    expect(listingSince(env.DEMO_MCP_URL, approvedAt, MINUTE_MS, latest.startedAt + MINUTE_MS)).toBe(latest);
    expect(listingSince(env.DEMO_MCP_URL, approvedAt, MINUTE_MS, latest.startedAt + MINUTE_MS + 1)).toBeUndefined();
    // A listing of the approval's own millisecond may have begun before it: not reused.
    expect(listingSince(env.DEMO_MCP_URL, latest.startedAt, MINUTE_MS, latest.startedAt)).toBeUndefined();
    // Approved when it started: that call lists for itself.
    await identify(cfg, mutation(latest.startedAt));
    expect(await listings()).toBe(2);
  });

  it("a listing taken before the approval (the run's catalog) is never the one checked", async () => {
    const cfg = config(MINUTE_MS);
    const catalog = new ToolCatalog(cfg);
    const info = await catalog.info(TOOL);
    expect(await listings()).toBe(1);
    // Proposed (and approved at once) as the catalog's listing started: that listing does not count.
    const approvedAt = listingSince(env.DEMO_MCP_URL, 0, MINUTE_MS)?.startedAt ?? 0;
    // The same tool, unchanged: the same digest as the catalog's, from a listing of its own.
    expect(await identify(cfg, mutation(approvedAt))).toBe(await catalog.digest(TOOL, info));
    expect(await listings()).toBe(2);
  });

  it("a tool changed at the server has another digest in the next listing, and a removed one none (null)", async () => {
    const cfg = config(0);
    const before = await identify(cfg, mutation(Date.now()));
    expect(before).toMatch(/^sha256:[0-9a-f]{64}$/);
    await post("/control/tools", { tool: "create_kpi", add_input: "owner" });
    const changed = await identify(cfg, mutation(Date.now()));
    expect(changed).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(changed).not.toBe(before);
    await post("/control/tools", { tool: "create_kpi", removed: true });
    expect(await identify(cfg, mutation(Date.now()))).toBeNull();
    // Nothing was called.
    const calls = (await (await fetch(at("/control/calls"))).json()) as { total: number };
    expect(calls.total).toBe(0);
  });
});
