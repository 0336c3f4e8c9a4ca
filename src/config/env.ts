// The Worker's bindings, as `wrangler types` generates them from wrangler.toml
// (src/config/worker-env.d.ts; `npm run types` regenerates it, and `npm test`
// fails through `npm run types:check` when it no longer matches wrangler.toml).
// Vars and secrets are read through loadConfig() (src/config/config.ts), never directly.
/// <reference path="./worker-env.d.ts" />
// AUDIT_BUCKET (contract section 25) is optional, so it is not in wrangler.toml: bind an R2 bucket to turn on the audit's R2 copy.
export type Env = Cloudflare.Env & { AUDIT_BUCKET?: R2Bucket };
