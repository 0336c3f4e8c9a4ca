// Bindings the in-runtime tests see through `cloudflare:test`'s `env`.
import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      API_TOKEN: string;
    }
  }
}
export {};
