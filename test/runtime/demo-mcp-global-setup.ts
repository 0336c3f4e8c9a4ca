/**
 * Global setup of the runtime project: starts the real demo MCP server (demo/mcp-server.ts) as
 * two separate processes, one answering with SSE streams (the default) and one with plain JSON
 * bodies, so the in-workerd transport tests cover both Streamable HTTP response modes.
 *
 * Runs in Node (vitest's main process), not in workerd. The URLs reach the workers through
 * `provide` -> vitest.config.ts `inject` -> the DEMO_MCP_URL / DEMO_MCP_JSON_URL bindings.
 */
import type { TestProject } from "vitest/node";
import { startDemoMcpProcess, type DemoMcpProcess } from "../support/demo-mcp-process";

const started: DemoMcpProcess[] = [];

export async function setup(project: TestProject): Promise<void> {
  const [sse, json] = await Promise.allSettled([startDemoMcpProcess(), startDemoMcpProcess({ DEMO_MCP_JSON_RESPONSE: "1" })]);
  for (const result of [sse, json]) if (result.status === "fulfilled") started.push(result.value);
  if (sse.status === "rejected" || json.status === "rejected") {
    // Never leave the other server running when setup fails.
    await teardown();
    throw sse.status === "rejected" ? sse.reason : (json as PromiseRejectedResult).reason;
  }
  project.provide("demoMcpUrl", sse.value.url);
  project.provide("demoMcpJsonUrl", json.value.url);
}

export async function teardown(): Promise<void> {
  await Promise.all(started.splice(0).map((server) => server.stop()));
}

declare module "vitest" {
  export interface ProvidedContext {
    demoMcpUrl: string;
    demoMcpJsonUrl: string;
  }
}
