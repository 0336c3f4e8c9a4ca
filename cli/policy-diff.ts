// `approved-exec policy diff --since 7d candidate.json` (contract section 24):
// replays a window of recorded calls against a candidate policy
// (POST /api/policy/replay), following next_cursor to the end, and prints
// each changed check of a call on its own line (under --json, each change as
// a JSON object), then, on stderr, how many calls it examined and skipped.
import { readFile } from "node:fs/promises";
import type { EngineClient, PolicyReplayChange, PolicyReplayRequest } from "approved-execution-engine/client";
import { InvalidArgumentError } from "commander";
import { EXIT_OK, type ExitCode, UsageError } from "./exit-codes.js";
import type { Output } from "./terminal.js";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** Pages a diff follows at most: a cursor that never ends is a bug, not a reason to loop for ever. */
const MAX_PAGES = 10_000;

/**
 * `--since`/`--until`: a duration back from now (`<n>s|m|h|d`, as the policy's
 * own durations are written: `7d` is seven days ago) or an ISO 8601 UTC time.
 */
export function timeArgument(now: number): (value: string) => string {
  return (value) => {
    const match = /^([1-9][0-9]{0,8})([smhd])$/.exec(value);
    if (match) return new Date(now - Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]).toISOString();
    if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(value) && Number.isFinite(Date.parse(value))) return value;
    throw new InvalidArgumentError("expected a duration back from now (30m, 12h, 7d) or an ISO 8601 UTC time (2026-12-01T00:00:00Z).");
  };
}

/** One changed check, one line: which call, which check, what was recorded and what the candidate says. */
function changeLine(c: PolicyReplayChange): string {
  return [
    c.run_id,
    c.tool_call_id,
    c.tool_name,
    `${c.check}: ${c.recorded} -> ${c.candidate}`,
    ...(c.principal ? [`by=${c.principal}`] : []),
  ].join(" ");
}

export async function policyDiff(
  out: Output,
  client: EngineClient,
  file: string,
  window: { since: string; until?: string | undefined },
): Promise<ExitCode> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let policy: PolicyReplayRequest["policy"];
  try {
    policy = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file} is not JSON: ${(err as Error).message}`);
  }
  const base = { policy, since: window.since, ...(window.until !== undefined ? { until: window.until } : {}) };
  let cursor: string | undefined;
  let examined = 0;
  let skipped = 0;
  let changed = 0;
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const page = await client.replayPolicy(cursor === undefined ? base : { ...base, cursor });
    examined += page.examined;
    skipped += page.skipped;
    for (const change of page.changed) out.result(changeLine(change), change);
    changed += page.changed.length;
    if (page.next_cursor === null) break;
    cursor = page.next_cursor;
  }
  out.note(`examined ${examined} calls, skipped ${skipped} recorded before the replay index, ${changed} changed checks`);
  return EXIT_OK;
}
