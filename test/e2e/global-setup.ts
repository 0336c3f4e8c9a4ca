// Starts the Worker once under wrangler dev for the end-to-end files that
// share the default test configuration; files needing other settings start
// their own server.
import type { TestProject } from "vitest/node";
import { startWorkerServer, type WorkerServer } from "../support/worker-server";

/** Short, test-only intervals: no e2e test waits for a production default. */
export const E2E_VARS = { HEARTBEAT_INTERVAL_MS: "200" };

let server: WorkerServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startWorkerServer(E2E_VARS);
  project.provide("workerUrl", server.url);
  project.provide("workerToken", server.token);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    workerUrl: string;
    workerToken: string;
  }
}
