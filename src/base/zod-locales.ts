// zod's locales as the deploy bundle has them: English only. zod's
// namespace (`z`, passed whole to zod-to-openapi and the MCP SDK) carries
// `z.locales`, every language's error messages, 260 KiB of the bundle; the
// engine configures none but the English zod sets itself. wrangler.toml's
// [alias] points zod's own `../locales/index.js` imports here.
export { default as en } from "zod/v4/locales/en.js";
