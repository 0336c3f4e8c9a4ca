// `npm run fixtures`: regenerates test/fixtures/approved_execution_v2.json
// through the real routes of a freshly served Worker (wrangler dev, local D1)
// and the demo MCP server, with the end-to-end tests' settings.
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { e2eVars } from "../test/e2e/global-setup";
import { generateFixtures, serialiseFixtures } from "../test/support/approval-execution-fixtures";
import { startDemoMcpProcess } from "../test/support/demo-mcp-process";
import { startWorkerServer } from "../test/support/worker-server";

const OUTPUT = join(resolve(import.meta.dirname, ".."), "test/fixtures/approved_execution_v2.json");

const demo = await startDemoMcpProcess();
try {
  const server = await startWorkerServer(e2eVars(demo.url));
  try {
    const document = await generateFixtures({ workerUrl: server.url, token: server.token, demoBaseUrl: demo.baseUrl });
    await writeFile(OUTPUT, serialiseFixtures(document));
    console.log(`wrote ${OUTPUT}`);
  } finally {
    await server.stop();
  }
} finally {
  await demo.stop();
}
