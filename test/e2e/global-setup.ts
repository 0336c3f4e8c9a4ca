// Starts the demo MCP server and the Worker (under wrangler dev, pointed at
// that server) once for the end-to-end files that share the default test
// configuration; files needing other settings start their own Worker.
import type { TestProject } from "vitest/node";
import { startDemoMcpProcess, type DemoMcpProcess } from "../support/demo-mcp-process";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";

/**
 * Short, test-only intervals: no e2e test waits for a production default.
 * Admission (1.5 s) is shorter than approval expiry (3 s) so a stall behind
 * an unanswered question ends before the question does; the call timeout
 * (1 s) is what the transport-timeout scenario's 2.5 s delay exceeds.
 */
export function e2eVars(mcpUrl: string): Record<string, string> {
  return {
    HEARTBEAT_INTERVAL_MS: "200",
    APPROVAL_TIMEOUT_MS: "3000",
    ADMISSION_TIMEOUT_MS: "1500",
    MCP_CONNECT_TIMEOUT_MS: "3000",
    MCP_CALL_TIMEOUT_MS: "1000",
    // Trusted, so its readOnlyHint tools run without approval (contract section 21); host-annotations.test.ts runs it unmarked.
    MCP_SERVERS: JSON.stringify({ demo: { url: mcpUrl, trust_annotations: true } }),
    MUTATION_BUDGET: JSON.stringify({
      mcp__demo__create_dashboard: 2,
      mcp__demo__update_dashboard: 2,
      mcp__demo__create_kpi: 1,
      mcp__demo__create_alert_from_chart: 1,
      // Its server annotates it destructiveHint: true, so it asks confirm (contract section 21).
      mcp__demo__delete_dashboard: 1,
    }),
    TOOL_POLICY: JSON.stringify({ mcp__demo__create_alert_from_chart: { level: "confirm" } }),
  };
}

let demo: DemoMcpProcess | undefined;
let server: WorkerServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  demo = await startDemoMcpProcess();
  server = await startWorkerServer(e2eVars(demo.url));
  project.provide("workerUrl", server.url);
  project.provide("workerToken", server.token);
  project.provide("demoMcpBaseUrl", demo.baseUrl);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  await demo?.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    workerUrl: string;
    workerToken: string;
    demoMcpBaseUrl: string;
  }
}
