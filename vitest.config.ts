// Three test projects:
//  - "runtime": unit tests of the pure modules and in-runtime tests of the Worker,
//    both Durable Objects and D1, all inside workerd via the Workers Vitest plugin.
//  - "contract": the committed JSON Schemas and the OpenAPI document, checked in plain Node.
//  - "node": end-to-end tests over real loopback HTTP against `wrangler dev`
//    and real helper processes (the demo MCP server).
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { hostConfigSchema } from "./src/config/config";

/**
 * Every host setting, empty (each one's default). The workers plugin reads
 * wrangler.toml the way `wrangler dev` does, and with it the developer's
 * `.dev.vars` (or `.env`) from the project root, with no option to leave them
 * out; these bindings are laid over whatever it read, so a local
 * MODEL_PROVIDER=anthropic or a bad TOOL_POLICY never reaches a test. The
 * runtime project's own values follow and win.
 */
const NO_LOCAL_SETTINGS = Object.fromEntries(Object.keys(hostConfigSchema.shape).map((name) => [name, ""]));

export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  return {
    test: {
      projects: [
        {
          plugins: [
            // The function form sees what globalSetup provided (the demo MCP servers' URLs).
            cloudflareTest(({ inject }) => ({
              wrangler: { configPath: "./wrangler.toml" },
              // The real Worker and objects, with the RunObject's outcome-storage seam for the fault tests.
              main: "./test/runtime/test-worker.ts",
              miniflare: {
                bindings: {
                  ...NO_LOCAL_SETTINGS,
                  // wrangler.toml's one [vars] entry, restated: the tests run the scripted provider whatever is local.
                  MODEL_PROVIDER: "scripted",
                  API_TOKEN: "runtime-test-token-0123456789abcdefghijklmnop",
                  // The operator console is on (contract section 16); its tests sign in with the token above.
                  CONSOLE_SESSION_SECRET: "runtime-test-console-secret-0123456789",
                  TEST_MIGRATIONS: migrations,
                  // Short, test-only intervals: no test waits for a production default.
                  HEARTBEAT_INTERVAL_MS: "100",
                  // The real demo MCP server, in SSE and in JSON response mode.
                  DEMO_MCP_URL: inject("demoMcpUrl"),
                  DEMO_MCP_JSON_URL: inject("demoMcpJsonUrl"),
                  // The Slack Web API stand-in the outbox tests post to (not SLACK_API_BASE_URL: the Slack app stays off here).
                  SLACK_STAND_IN_URL: inject("slackStandInUrl"),
                  // The Cloudflare Access team-domain stand-in serving a JWKS (the Access tests set ACCESS_TEAM_DOMAIN to it).
                  ACCESS_TEST_TEAM_DOMAIN: inject("jwksUrl"),
                  // The engine's own MCP server is the demo one (SSE mode); the mutation-fault tests
                  // drive real runs against it. Short storage and call bounds keep their waits short.
                  // The demo server's readOnlyHint tools run without approval only because it is marked trusted (contract section 21).
                  MCP_SERVERS: JSON.stringify({ demo: { url: inject("demoMcpUrl"), trust_annotations: true } }),
                  MUTATION_BUDGET: JSON.stringify({
                    mcp__demo__create_dashboard: 5,
                    mcp__demo__update_dashboard: 5,
                    mcp__demo__create_kpi: 1,
                    mcp__demo__create_alert_from_chart: 1,
                    mcp__demo__schedule_report: 1,
                  }),
                  // Contract section 19 (test/runtime/approval-policy.test.ts): a two-person rule without self-approval,
                  // and a tool only a group may decide. No other runtime test calls these tools with approval.
                  TOOL_POLICY: JSON.stringify({
                    mcp__demo__create_kpi: { approvals_required: 2, self_approval: false },
                    mcp__demo__create_alert_from_chart: { level: "approve", approvers: ["group:leads"] },
                    // Contract section 24 (test/runtime/approval-nudges.test.ts): escalated 1 s after it is asked; no other runtime test runs it.
                    mcp__demo__schedule_report: {
                      approvers: ["token:sched-owner-*"],
                      remind_before: "299s",
                      escalate_after: "1s",
                      escalate_to: ["token:sched-escalated-*"],
                    },
                  }),
                  APPROVER_GROUPS: JSON.stringify({ leads: ["token:lead-*", "access:lead@example.com"] }),
                  // Cases per property test; `npm run fuzz` raises it (the host's env does not reach workerd).
                  FUZZ_RUNS: process.env.FUZZ_RUNS ?? "",
                  // Short, yet long enough for local D1 to serve 20 approvals at once on two cores busy with
                  // the node project as well (mutation-faults' healthy-pool case failed CI at 300 ms).
                  STORAGE_WAIT_MS: "1000",
                  MCP_CALL_TIMEOUT_MS: "2000",
                  // Contract section 25: audit checkpoints signed with RFC 8037's example Ed25519 key (test/runtime/audit-chain.test.ts).
                  AUDIT_SIGNING_KEY: JSON.stringify({
                    kty: "OKP",
                    crv: "Ed25519",
                    d: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A",
                    x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
                  }),
                },
                // The audit's R2 copy (contract section 25) in miniflare's local R2.
                r2Buckets: ["AUDIT_BUCKET"],
              },
            })),
          ],
          test: {
            name: "runtime",
            include: ["test/unit/**/*.test.ts", "test/runtime/**/*.test.ts"],
            setupFiles: ["./test/runtime/apply-migrations.ts"],
            // Starts the demo MCP server processes the transport tests call from inside workerd.
            globalSetup: [
              "./test/runtime/demo-mcp-global-setup.ts",
              "./test/runtime/slack-stand-in-global-setup.ts",
              "./test/runtime/jwks-global-setup.ts",
            ],
            // Files share that demo server (resets, armed faults) and the global storage pool: one file at a time.
            fileParallelism: false,
          },
        },
        {
          // The machine-readable contract (JSON Schema drift, fixtures, OpenAPI): plain Node, no servers.
          test: {
            name: "contract",
            environment: "node",
            include: ["test/contract/**/*.test.ts"],
          },
        },
        {
          test: {
            name: "node",
            environment: "node",
            include: [
              "test/e2e/**/*.test.ts",
              "test/browser/**/*.test.ts",
              "test/client/**/*.test.ts",
              "test/cli/**/*.test.ts",
              "test/demo/**/*.test.ts",
              "test/providers/**/*.test.ts",
            ],
            // The built client entry point and CLI (dist/) first: their tests run the build's output.
            globalSetup: ["./test/support/build-package.ts", "./test/e2e/global-setup.ts"],
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
