// The Worker entry: routes requests and exports the Durable Object classes
// that wrangler.toml binds.
import type { Env } from "./config/env";
import { router } from "./http/router";

export { RunObject } from "../durable-objects/run-object";
export { StoragePool } from "../durable-objects/storage-pool";

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    return router.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
