// Applies the D1 migrations (the same files `wrangler d1 migrations apply` uses) before the tests.
import { applyD1Migrations, env } from "cloudflare:test";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
