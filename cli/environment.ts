// Where the engine is and who is asking: ENGINE_URL and ENGINE_TOKEN (or
// API_TOKEN) from the environment, and the default identity recorded as
// `decided_by` / `answered_by` / `reconciled_by` (`cli:<os user>`).
import { userInfo } from "node:os";
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

/** `cli:<os user>`, the name a decision is recorded under unless --as says otherwise. */
export function defaultIdentity(): string {
  let user: string | undefined;
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for this uid (some containers): fall back to the environment.
  }
  return `cli:${user || process.env.USER || process.env.USERNAME || "unknown"}`;
}
