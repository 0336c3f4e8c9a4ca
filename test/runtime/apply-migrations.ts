// Applies the D1 migrations (the same files `wrangler d1 migrations apply` uses) before each
// in-workerd test file's tests. The unit files (test/unit/) read no D1 and skip it; `cloudflare:test`
// is imported only where it is used, since loading it (the Worker under test) costs seconds a file.
import { expect } from "vitest";

if (!/[\\/]test[\\/]unit[\\/]/.test(expect.getState().testPath ?? "")) {
  const { applyD1Migrations, env } = await import("cloudflare:test");
  await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
}
