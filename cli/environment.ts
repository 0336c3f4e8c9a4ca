// Where the engine is and who is asking: ENGINE_URL and ENGINE_TOKEN (or
// API_TOKEN) from the environment. Who is recorded as deciding is the token's
// principal, written by the engine (contract section 18), never a name the CLI sends.
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { UsageError } from "./exit-codes.js";

/** `wrangler dev`'s default address, where `npm start` serves the engine. */
export const DEFAULT_ENGINE_URL = "http://127.0.0.1:8787";

export interface EngineSettings {
  url: string;
  token: string;
}

/** Reads the engine's address and token; a missing token or a malformed URL is bad usage. */
export function engineSettings(env: NodeJS.ProcessEnv = process.env): EngineSettings {
  const url = env.ENGINE_URL?.trim() || DEFAULT_ENGINE_URL;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("not http(s)");
  } catch {
    throw new UsageError(`ENGINE_URL must be an http(s) URL such as ${DEFAULT_ENGINE_URL}; got ${JSON.stringify(url)}.`);
  }
  const token = env.ENGINE_TOKEN?.trim() || env.API_TOKEN?.trim();
  if (!token) {
    throw new UsageError("No API token: set ENGINE_TOKEN (or API_TOKEN) to the engine's API_TOKEN, e.g. the one in .dev.vars.");
  }
  return { url, token };
}

/**
 * How to run this CLI again from a shell, for the commands it suggests: what
 * `npm run cli` says it is (APPROVED_EXEC_COMMAND, set by scripts/cli.mjs in
 * a checkout), else `approved-exec` when that is on PATH, else node and this
 * script's path.
 */
export function commandName(env: NodeJS.ProcessEnv = process.env, script: string | undefined = process.argv[1]): string {
  const named = env.APPROVED_EXEC_COMMAND?.trim();
  if (named) return named;
  const onPath = (env.PATH ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, "approved-exec")));
  return onPath || script === undefined ? "approved-exec" : `node ${script}`;
}
