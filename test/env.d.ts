// Bindings the in-runtime tests see through `cloudflare:test`'s `env`.
import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/config/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      API_TOKEN: string;
      /** The demo MCP server answering with SSE streams (started by demo-mcp-global-setup.ts). */
      DEMO_MCP_URL: string;
      /** The same server in JSON response mode (DEMO_MCP_JSON_RESPONSE=1). */
      DEMO_MCP_JSON_URL: string;
      /** The Slack Web API stand-in (started by slack-stand-in-global-setup.ts). */
      SLACK_STAND_IN_URL: string;
      /** The Cloudflare Access team-domain stand-in (started by jwks-global-setup.ts). */
      ACCESS_TEST_TEAM_DOMAIN: string;
      /** Cases per property test ("" for each file's default); `npm run fuzz` raises it. */
      FUZZ_RUNS: string;
      /** The audit's R2 copy in miniflare's local R2 (contract section 25). */
      AUDIT_BUCKET: R2Bucket;
    }
  }
}
