// Two test projects:
//  - "runtime": unit tests of the pure modules and in-runtime tests of the Worker,
//    both Durable Objects and D1, all inside workerd via the Workers Vitest plugin.
//  - "node": end-to-end tests over real loopback HTTP against `wrangler dev`
//    and real helper processes (the demo MCP server).
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  return {
    test: {
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: {
                  API_TOKEN: "test-token",
                  TEST_MIGRATIONS: migrations,
                  // Short, test-only intervals: no test waits for a production default.
                  HEARTBEAT_INTERVAL_MS: "100",
                },
              },
            }),
          ],
          test: {
            name: "runtime",
            include: ["test/unit/**/*.test.ts", "test/runtime/**/*.test.ts"],
            setupFiles: ["./test/runtime/apply-migrations.ts"],
          },
        },
        {
          test: {
            name: "node",
            environment: "node",
            include: ["test/e2e/**/*.test.ts", "test/demo/**/*.test.ts"],
            globalSetup: ["./test/e2e/global-setup.ts"],
            testTimeout: 60_000,
            hookTimeout: 60_000,
            // Each e2e file starts its own wrangler dev; two cores, so one file at a time.
            fileParallelism: false,
          },
        },
      ],
    },
  };
});
