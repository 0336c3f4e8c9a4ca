// What `npm start` checks before it serves: the settings wrangler dev will
// hand the Worker (wrangler.toml's [vars], then the env file over them, as
// wrangler merges them) run through the Worker's own loadConfig, so a bad
// setting stops the start with one paragraph naming it instead of a Worker
// that answers 503 to every request.
import { readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { parse as parseToml } from "smol-toml";
import { loadConfig } from "../src/config/config";

/**
 * The vars the Worker will see: wrangler.toml's [vars] (strings kept, tables
 * as wrangler passes them: JSON values), then every line of the env file.
 * Node's own parseEnv reads the env file (the dotenv format wrangler reads).
 */
export function startVars(wranglerTomlPath: string, envFilePath: string): Record<string, unknown> {
  const toml = parseToml(readFileSync(wranglerTomlPath, "utf8")) as { vars?: Record<string, unknown> };
  return { ...(toml.vars ?? {}), ...parseEnv(readFileSync(envFilePath, "utf8")) };
}

/** One paragraph naming every bad setting and where to fix it, or undefined when the config loads. */
export function configProblem(vars: Record<string, unknown>, envFileName: string): string | undefined {
  const loaded = loadConfig(vars);
  if (loaded.state === "ready") return undefined;
  if (loaded.state === "not_configured") return `npm start cannot start: ${loaded.message.replace(/\.$/, "")} (in ${envFileName}).`;
  const settings = loaded.details.map((d) => `${d.path || "(the whole config)"}: ${d.message}`).join("; ");
  const names = [...new Set(loaded.details.map((d) => d.path.split(".")[0] || "?"))].join(", ");
  return (
    `npm start cannot start: the configuration is invalid. ${settings}. ` +
    `Fix ${names} in ${envFileName} (or [vars] in wrangler.toml) and run npm start again; ` +
    "the settings are described in the README's configuration section."
  );
}
