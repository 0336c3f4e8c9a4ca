// What `npm start` checks before it serves: the settings wrangler dev will
// hand the Worker (wrangler.toml's [vars], then the env file over them, as
// wrangler merges them) run through the Worker's own loadConfig, so a bad
// setting stops the start with one paragraph naming it instead of a Worker
// that answers 503 to every request.
import { readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { parse as parseToml } from "smol-toml";
import { hostConfigSchema, loadConfig } from "../src/config/config";

// The vars the Worker will see: wrangler.toml's [vars] (strings kept, tables
// as wrangler passes them: JSON values), then every line of the env file over
// them. Node's own parseEnv reads the env file (the dotenv format wrangler reads).

/** wrangler.toml's [vars]. */
export function tomlVars(wranglerTomlPath: string): Record<string, unknown> {
  return (parseToml(readFileSync(wranglerTomlPath, "utf8")) as { vars?: Record<string, unknown> }).vars ?? {};
}

/** Every line of the env file, as wrangler reads it. */
export function envFileVars(envFilePath: string): Record<string, string> {
  return parseEnv(readFileSync(envFilePath, "utf8")) as Record<string, string>;
}

/** One paragraph naming every bad setting and where to fix it, or undefined when the config loads. */
export function configProblem(vars: Record<string, unknown>, envFileName: string): string | undefined {
  const loaded = loadConfig(vars);
  if (loaded.state === "ready") return undefined;
  if (loaded.state === "not_configured") return `npm start cannot start: ${loaded.message.replace(/\.$/, "")} (in ${envFileName}).`;
  const settings = loaded.details.map((d) => `${d.path || "(the whole config)"}: ${d.message}`).join("; ");
  const names = [...new Set(loaded.details.map((d) => d.path.split(".")[0] || "?"))];
  // A short API_TOKEN (earlier starts wrote 30 characters) is the user's to replace: npm start never rewrites it.
  const token = names.includes("API_TOKEN") ? ` (or delete ${envFileName} and npm start makes a new one with a fresh token)` : "";
  return (
    `npm start cannot start: the configuration is invalid. ${settings}. ` +
    `Fix ${names.join(", ")} in ${envFileName}${token} (or [vars] in wrangler.toml) and run npm start again; ` +
    "the settings are described in the README's configuration section."
  );
}

/** Every setting the Worker reads (contract section 13's names, as the config loader knows them). */
const KNOWN_SETTINGS: readonly string[] = Object.keys(hostConfigSchema.shape);
/** At most this many edits (insert, delete, substitute, swap two neighbours) away from a known name: a misspelling of it. */
const MAX_TYPO_EDITS = 2;

/** The optimal string alignment distance (Damerau-Levenshtein without repeated edits of one substring). */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i]!;
      row[j] = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * One line per setting in `vars` that the Worker does not read but that is a
 * misspelling of one it does (TOOL_POLCY for TOOL_POLICY; case ignored),
 * naming the one it most likely means. Names far from every known one (a
 * developer's own, wrangler's) are not ours to judge and pass silently.
 */
export function unknownSettingWarnings(vars: Record<string, unknown>, where: string): string[] {
  const warnings: string[] = [];
  for (const name of Object.keys(vars)) {
    if (KNOWN_SETTINGS.includes(name)) continue;
    let best: { known: string; edits: number } | undefined;
    for (const known of KNOWN_SETTINGS) {
      const edits = editDistance(name.toUpperCase(), known);
      if (edits <= MAX_TYPO_EDITS && edits < known.length / 3 && (best === undefined || edits < best.edits)) best = { known, edits };
    }
    if (best !== undefined)
      warnings.push(`npm start: ${name} (in ${where}) is not a setting of this engine and is ignored; did you mean ${best.known}?`);
  }
  return warnings;
}
